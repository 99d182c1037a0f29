"""The training and evaluation scripts written beside the network with ``--scaffold``.

``train_<stem>.py`` and ``eval_<stem>.py`` are filled from templates with what the converter
knows about the network: its inputs (construct()'s argument names, one sample's shape at the
``--shape`` sizes, dtypes), whether the batch size is free, the first output's shape (which
picks the default loss: cross-entropy for ``[batch, classes]`` logits, MSE otherwise) and the
checkpoint. Names reach the scripts only as the identifiers code generation made of them or as
``repr`` literals; text for comments goes through :func:`comment_text`.
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..codegen.literals import literal
from ..codegen.naming import comment_text
from ..codegen.rendered import RenderedModel
from ..codegen.script import format_code
from ..graph import Graph
from ..templating import render_template
from ..version import __version__

# Input dtypes the synthetic data can make with numpy; others (bfloat16...) are fed as float32.
_NUMPY_DTYPES = {
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
}
DEFAULT_BATCH_SIZE = 8


@dataclass
class ScaffoldInput:
    """One argument of construct() as the scripts feed it."""

    column: str  # construct()'s argument name, also the dataset column
    shape: tuple[int, ...]  # one sample's shape (batched) or the whole value (fixed)
    dtype: str  # a numpy dtype name
    batched: bool  # False: no batch axis, the same value every step


def scaffold_paths(script: Path) -> tuple[Path, Path]:
    """``train_<stem>.py`` and ``eval_<stem>.py`` beside the network script."""
    return (
        script.with_name(f"train_{script.stem}.py"),
        script.with_name(f"eval_{script.stem}.py"),
    )


def render_scaffold(
    graph: Graph,
    example_shapes: dict[str, tuple[int, ...]],
    rendered: RenderedModel,
    script: Path,
    checkpoint: Path,
    model_name: str,
) -> tuple[str, str]:
    """The text of the training and the evaluation script (``checkpoint`` is the converted
    weights beside ``script``; a network without weights has none to load)."""
    inputs, fixed_batch = _scaffold_inputs(graph, example_shapes, rendered.input_names)
    output_shape = _output_sample_shape(graph, example_shapes)
    output_dtype = graph.dtypes.get(graph.outputs[0]) if graph.outputs else None
    is_float = output_dtype is not None and np.dtype(output_dtype).kind == "f"
    classifier = (
        is_float and output_shape is not None and len(output_shape) == 1 and output_shape[0] >= 2
    )
    label = _fresh("label", {item.column for item in inputs})
    values = dict(
        version=__version__,
        model_name=comment_text(model_name),
        stem=_identifier(script.stem),
        stem_literal=literal(script.stem),
        inputs=[
            dict(
                column=item.column,
                column_literal=literal(item.column),
                shape_literal=literal(tuple(item.shape)),
                dtype=item.dtype,
                batched=item.batched,
            )
            for item in inputs
        ],
        batched_args=", ".join(item.column for item in inputs if item.batched),
        call_args=", ".join(_call_argument(inputs, index) for index in range(len(inputs))),
        has_fixed=any(not item.batched for item in inputs),
        batched_mask=literal(tuple(item.batched for item in inputs)),
        label=label,
        label_literal=literal(label),
        outputs=[comment_text(name, 60) for name in rendered.output_names],
        output_names_literal=literal(tuple(rendered.output_names)),
        output_shape_literal=literal(output_shape),
        output_doc=_output_doc(graph, rendered),
        cast_output=output_dtype is None or np.dtype(output_dtype) != np.float32,
        default_loss_literal=literal("cross_entropy" if classifier else "mse"),
        batch_size=fixed_batch or DEFAULT_BATCH_SIZE,
        num_samples=_synthetic_count(fixed_batch),
        fixed_batch=fixed_batch,
        example_batch=fixed_batch or 1,
        checkpoint_literal=literal(checkpoint.name) if rendered.entries else None,
        has_dynamic_inputs="\ndef dynamic_inputs(" in rendered.code,
    )
    train = render_template(
        "mindconverter.outputs", "scaffold_train.py.j2", import_dynamic_inputs=False, **values
    )
    evaluate = render_template(
        "mindconverter.outputs",
        "scaffold_eval.py.j2",
        import_dynamic_inputs=values["has_dynamic_inputs"],
        output_var=_fresh("output", {item.column for item in inputs} | {label}),
        **values,
    )
    return format_code(train), format_code(evaluate)


def _scaffold_inputs(
    graph: Graph, example_shapes: dict[str, tuple[int, ...]], columns: list[str]
) -> tuple[list[ScaffoldInput], int | None]:
    """The inputs and the fixed batch size (None when the batch axis is dynamic).

    The batch axis is axis 0 of the inputs whose first dimension stays dynamic; when none does,
    axis 0 of the inputs whose first size equals the first input's (a network converted for one
    batch size). Other inputs (scalars, states without a batch axis) are held fixed.
    """
    found = []
    for name, column in zip(graph.inputs, columns):
        symbolic = graph.symbolic_shapes.get(name) or ()
        example = tuple(example_shapes.get(name) or graph.shapes.get(name) or ())
        found.append((_identifier(column), symbolic, example, _dtype_name(graph, name)))
    dynamic_batch = any(symbolic and isinstance(symbolic[0], str) for _, symbolic, _, _ in found)
    fixed_batch = None
    if not dynamic_batch:
        fixed_batch = next((example[0] for _, _, example, _ in found if example), None)
    inputs = []
    for column, symbolic, example, dtype in found:
        if dynamic_batch:
            batched = bool(symbolic) and isinstance(symbolic[0], str)
        else:
            batched = bool(example) and example[0] == fixed_batch
        shape = example[1:] if batched else example
        inputs.append(ScaffoldInput(column, tuple(int(d) for d in shape), dtype, batched))
    return inputs, fixed_batch


def _output_sample_shape(
    graph: Graph, example_shapes: dict[str, tuple[int, ...]]
) -> tuple[int, ...] | None:
    """The first output's shape without its batch axis, dynamic dimensions at their example
    sizes; None when a dimension's size is not known from the inputs (the scripts measure it)."""
    if not graph.outputs:
        return None
    shape = graph.shapes.get(graph.outputs[0]) or graph.symbolic_shapes.get(graph.outputs[0])
    if not shape:
        return None
    sizes: dict[str, int] = {}
    for name in graph.inputs:
        symbolic = graph.symbolic_shapes.get(name) or ()
        for dim, size in zip(symbolic, example_shapes.get(name) or ()):
            if isinstance(dim, str):
                sizes.setdefault(dim, int(size))
    result = []
    for dim in shape[1:]:
        if isinstance(dim, str):
            if dim not in sizes:
                return None
            dim = sizes[dim]
        result.append(int(dim))
    return tuple(result)


def _output_doc(graph: Graph, rendered: RenderedModel) -> str:
    """``logits: float32[batch, 10]`` for a comment (names and dims escaped)."""
    if not graph.outputs:
        return "no output"
    name = graph.outputs[0]
    dtype = graph.dtypes.get(name)
    shape = graph.shapes.get(name) or graph.symbolic_shapes.get(name)
    dims = "?" if shape is None else ", ".join(str(d) for d in shape)
    var = rendered.output_names[0] if rendered.output_names else name
    return comment_text(f"{var}: {np.dtype(dtype).name if dtype is not None else '?'}[{dims}]")


def _synthetic_count(fixed_batch: int | None) -> int:
    """How many samples --synthetic makes by default: a batch and a half (the last batch is
    smaller) for a free batch size, whole batches of about 8 samples for a fixed one."""
    if fixed_batch is None:
        return DEFAULT_BATCH_SIZE + DEFAULT_BATCH_SIZE // 2
    return fixed_batch * max(2, 8 // fixed_batch)


def _call_argument(inputs: list[ScaffoldInput], index: int) -> str:
    """How a wrapper passes input ``index`` on: its own argument, or its fixed value."""
    if inputs[index].batched:
        return inputs[index].column
    position = sum(not item.batched for item in inputs[:index])
    return f"self.fixed_inputs[{position}]"


def _dtype_name(graph: Graph, name: str) -> str:
    dtype = graph.dtypes.get(name)
    text = np.dtype(dtype).name if dtype is not None else "float32"
    return "bool_" if text == "bool" else (text if text in _NUMPY_DTYPES else "float32")


def _identifier(name: str) -> str:
    """Code generation made these identifiers; checked again since they become code."""
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"not an identifier: {name!r}")
    return name


def _fresh(name: str, taken: set[str]) -> str:
    while name in taken:
        name += "_"
    return name
