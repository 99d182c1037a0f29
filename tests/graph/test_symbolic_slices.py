"""Slice lengths the symbolic inference cannot prove are settled at the conversion shape."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter import convert
from mindconverter.graph.symbolic import infer_symbolic
from tests.helpers import make_model

TABLE_ROWS = 64


def _relative_positions_model() -> onnx.ModelProto:
    """Scores of h = x[:, 9::4] (``(seq - 6) // 4`` rows, a size sympy cannot prove >= 0) against a
    position table sliced from ``31 - rows`` to ``32 + rows`` (2 * rows + 1, as a conformer's
    relative positions), kept to the first ``rows`` columns, added to h @ h^T, and reshaped by
    the sizes of the position scores."""
    rng = np.random.default_rng(0)
    initializers = {
        "table": rng.standard_normal((TABLE_ROWS, 4)).astype(np.float32),
        "one": np.array([1], np.int64),
        "zero": np.array([0], np.int64),
        "two": np.array([2], np.int64),
        "nine": np.array([9], np.int64),
        "four": np.array([4], np.int64),
        "big": np.array([2**62], np.int64),
        "first": np.array([31], np.int64),
        "after": np.array([32], np.int64),
        "flat": np.array([-1], np.int64),
    }
    nodes = [
        helper.make_node("Slice", ["x", "nine", "big", "one", "four"], ["h"]),
        helper.make_node("Shape", ["h"], ["shape"]),
        helper.make_node("Gather", ["shape", "one"], ["seq"]),
        helper.make_node("Sub", ["first", "seq"], ["start"]),
        helper.make_node("Add", ["after", "seq"], ["end"]),
        helper.make_node("Slice", ["table", "start", "end", "zero"], ["positions"]),
        helper.make_node("Transpose", ["positions"], ["positions_t"], perm=[1, 0]),
        helper.make_node("MatMul", ["h", "positions_t"], ["position_scores"]),
        helper.make_node("Slice", ["position_scores", "zero", "seq", "two"], ["kept"]),
        helper.make_node("Transpose", ["h"], ["h_t"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["h", "h_t"], ["content_scores"]),
        helper.make_node("Add", ["kept", "content_scores"], ["scores"]),
        helper.make_node("Shape", ["position_scores"], ["scores_shape"]),
        helper.make_node("Slice", ["scores_shape", "zero", "one"], ["batch"]),
        helper.make_node("Concat", ["batch", "flat"], ["target"], axis=0),
        helper.make_node("Reshape", ["scores", "target"], ["rows"]),
        helper.make_node("Shape", ["position_scores"], ["position_shape"]),
        helper.make_node("Slice", ["position_shape", "two", "after"], ["width"]),
        helper.make_node("Concat", ["batch", "flat", "width"], ["target_2"], axis=0),
        helper.make_node("Reshape", ["position_scores", "target_2"], ["table_rows"]),
    ]
    return make_model(
        nodes,
        [("x", np.float32, ["batch", "seq", 4])],
        [("rows", np.float32, None), ("table_rows", np.float32, None)],
        initializers,
    )


def _dims(model: onnx.ModelProto, name: str) -> list:
    infos = list(model.graph.value_info) + list(model.graph.output)
    info = next(i for i in infos if i.name == name)
    return [d.dim_param or d.dim_value for d in info.type.tensor_type.shape.dim]


def test_a_slice_bound_not_provably_positive_keeps_its_length():
    result = infer_symbolic(_relative_positions_model(), {"batch": 2, "seq": 30})
    assert result is not None
    batch, rows, columns = _dims(result.model, "position_scores")
    assert batch == "batch" and rows == "floor(seq/4 - 3/2)" and columns != rows
    assert _dims(result.model, "kept") == ["batch", rows, rows]
    assert _dims(result.model, "scores") == ["batch", rows, rows]


@pytest.mark.slow
def test_a_conformer_style_position_slice_runs_at_two_shapes(tmp_path):
    path = tmp_path / "relative.onnx"
    onnx.save(_relative_positions_model(), path)
    result = convert(path, shape=["2,30,4"], output=tmp_path / "out", verify=True)
    assert result.verification["ok"] and len(result.verification["shapes"]) == 2
