"""The weight-mapping table (JSON): each checkpoint parameter beside the source weight it holds."""

from __future__ import annotations

import json

from ..codegen.rendered import RenderedModel
from .checkpoint import tensor_type_name


def weight_map(rendered: RenderedModel, model_key: str) -> str:
    """The weight-mapping JSON: one entry per checkpoint parameter with its source weight."""
    rows = []
    for entry in rendered.entries:
        row = {
            "converted_weight": {
                "name": entry.name,
                "shape": [int(d) for d in entry.array.shape],
                "data_type": tensor_type_name(entry.array.dtype),
            },
            "source_weight": {
                "name": entry.source,
                "shape": [int(d) for d in (entry.source_shape or entry.array.shape)],
                "data_type": entry.source_dtype or str(entry.array.dtype),
            },
        }
        if entry.exported_as:
            row["source_weight"]["exported_as"] = entry.exported_as
        if entry.transform:
            row["transform"] = entry.transform
        if entry.steps:
            row["steps"] = [step.to_json() for step in entry.steps]
        rows.append(row)
    lines = [f"    {json.dumps(row, ensure_ascii=True)}" for row in rows]
    body = ",\n".join(lines)
    return (
        f"{{\n  {json.dumps(model_key)}: [\n{body}\n  ]\n}}\n"
        if rows
        else json.dumps({model_key: []}) + "\n"
    )
