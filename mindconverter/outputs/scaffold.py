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
from ..errors import make_error
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
# The losses the training script offers; "output" minimises an output that is itself a loss.
LOSSES = ("cross_entropy", "mse", "l1", "bce", "output")


@dataclass
class ScaffoldInput:
    """One argument of construct() as the scripts feed it."""

    column: str  # construct()'s argument name, also the dataset column
    shape: tuple[int, ...]  # one sample's shape (batched) or the whole value (fixed)
    dtype: str  # a numpy dtype name
    batched: bool  # False: no batch axis, the same value every step


@dataclass
class TrainingTarget:
    """The output training runs the loss on, and the losses that fit it."""

    index: int  # position among the network's outputs
    sample_shape: tuple[int, ...] | None  # without the batch axis; None: measured by the script
    loss: str  # the default loss (the one asked for, if any)
    losses: tuple[str, ...]  # the losses the script accepts for it


def training_target(
    graph: Graph,
    example_shapes: dict[str, tuple[int, ...]],
    rendered: RenderedModel,
    train_output: str | None = None,
    loss: str | None = None,
) -> TrainingTarget:
    """The output to train and its loss: ``train_output`` (an ONNX output name or the script's
    name for it) or the first output; ``loss`` or the default for that output (cross-entropy for
    ``[batch, classes]`` float scores, MSE for other float outputs with a batch axis). Raises
    SCAFFOLD_NO_LOSS when no loss fits (integer or boolean outputs, an output without a batch
    axis and no ``loss="output"``, a model without batched inputs)."""
    if loss is not None and loss not in LOSSES:
        raise make_error("BAD_ARGUMENT", f"--loss must be one of {', '.join(LOSSES)}.")
    names = list(rendered.output_names)
    index = 0
    if train_output is not None:
        matches = [i for i, name in enumerate(graph.outputs) if name == train_output]
        matches = matches or [i for i, name in enumerate(names) if name == train_output]
        if not matches:
            raise make_error(
                "BAD_ARGUMENT",
                f"--train_output names none of the outputs ({', '.join(names)}).",
            )
        index = matches[0]
    inputs, fixed_batch = _scaffold_inputs(graph, example_shapes, rendered.input_names)
    losses = _fitting_losses(graph, example_shapes, index, fixed_batch)
    shown = names[index] if index < len(names) else "the output"
    if not any(item.batched for item in inputs):
        losses = ()
        reason = "the model takes no input with a batch axis: there is no data to feed it"
    elif not losses:
        reason = f"{shown} is not a float tensor: no gradient reaches the weights through it"
    else:
        reason = f"{shown} has no batch axis: only --loss output (it is itself a loss) fits"
    chosen = loss or (losses[0] if losses and losses[0] != "output" else None)
    if chosen not in losses:
        floats = [name for i, name in enumerate(names) if _is_float(graph, graph.outputs[i])]
        hint = f" Float outputs: {', '.join(floats)}." if floats else ""
        raise make_error(
            "SCAFFOLD_NO_LOSS",
            f"{reason}{'' if loss is None else f' (--loss {loss} does not fit)'}.{hint}",
        )
    sample_shape = _output_sample_shape(graph, example_shapes, index)
    return TrainingTarget(index, sample_shape, chosen, losses)


def _fitting_losses(
    graph: Graph, example_shapes: dict[str, tuple[int, ...]], index: int, fixed_batch: int | None
) -> tuple[str, ...]:
    """The losses that fit output ``index``, the default first."""
    name = graph.outputs[index]
    if not _is_float(graph, name):
        return ()
    shape = graph.symbolic_shapes.get(name) or graph.shapes.get(name)
    if shape is None:  # not known before running: taken to have a batch axis
        batched = True
    elif fixed_batch is None:
        batched = bool(shape) and isinstance(shape[0], str)
    else:
        batched = bool(shape) and shape[0] == fixed_batch
    if not batched:
        return ("output",)
    sample = _output_sample_shape(graph, example_shapes, index)
    if sample is not None and len(sample) == 1 and sample[0] >= 2:  # [batch, classes] scores
        return ("cross_entropy", "mse", "l1", "bce", "output")
    if sample is None or (sample and sample[0] >= 2):  # maybe [batch, classes, ...] scores
        return ("mse", "l1", "bce", "cross_entropy", "output")
    return ("mse", "l1", "bce", "output")


def _is_float(graph: Graph, name: str) -> bool:
    dtype = graph.dtypes.get(name)
    return dtype is not None and (np.dtype(dtype).kind == "f" or np.dtype(dtype).name == "bfloat16")


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
    target: TrainingTarget | None = None,
) -> tuple[str, str]:
    """The text of the training and the evaluation script (``checkpoint`` is the converted
    weights beside ``script``; a network without weights has none to load); ``target`` is
    :func:`training_target`'s answer (by default: the first output and its default loss)."""
    target = target or training_target(graph, example_shapes, rendered)
    inputs, fixed_batch = _scaffold_inputs(graph, example_shapes, rendered.input_names)
    output_dtype = graph.dtypes.get(graph.outputs[target.index])
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
        train_index=target.index,
        train_output=comment_text(rendered.output_names[target.index], 60),
        output_names_literal=literal(tuple(rendered.output_names)),
        output_shape_literal=literal(target.sample_shape),
        output_doc=_output_doc(graph, rendered, target.index),
        cast_output=output_dtype is None or np.dtype(output_dtype) != np.float32,
        default_loss_literal=literal(target.loss),
        losses_literal=literal(target.losses),
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
    graph: Graph, example_shapes: dict[str, tuple[int, ...]], index: int = 0
) -> tuple[int, ...] | None:
    """Output ``index``'s shape without its batch axis, dynamic dimensions at their example
    sizes; None when a dimension's size is not known from the inputs (the scripts measure it)."""
    if len(graph.outputs) <= index:
        return None
    name = graph.outputs[index]
    shape = graph.shapes.get(name) or graph.symbolic_shapes.get(name)
    if shape is None:
        return None
    if not shape:
        return ()
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


def _output_doc(graph: Graph, rendered: RenderedModel, index: int = 0) -> str:
    """``logits: float32[batch, 10]`` for a comment (names and dims escaped)."""
    if len(graph.outputs) <= index:
        return "no output"
    name = graph.outputs[index]
    dtype = graph.dtypes.get(name)
    shape = graph.shapes.get(name) or graph.symbolic_shapes.get(name)
    dims = "?" if shape is None else ", ".join(str(d) for d in shape)
    var = rendered.output_names[index] if len(rendered.output_names) > index else name
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
