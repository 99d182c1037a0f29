"""Stage 1 for TensorFlow: a frozen GraphDef (``.pb``) becomes an in-memory ``onnx.ModelProto``.

A GraphDef does not say which tensors are the model's inputs and outputs, so the user names them
(``--input_nodes x:0 --output_nodes Identity:0``) and gives one ``--shape`` per input. The names
are checked against the graph (with the candidates listed when one is wrong), the placeholders get
the user's static shapes, and tf2onnx converts the graph in memory — nothing is written beside
the input. The ONNX model keeps the user's names and the user's (NHWC) input layout: tf2onnx
converts NHWC convolutions with Transposes around them and its own transpose optimizer cancels the
pairs, leaving one Transpose at the input (checked on Keras CNNs and applications, see
tests/tf/), so no extra layout pass is needed here.

TensorFlow and tf2onnx are an optional extra (``pip install 'mindconverter[tf]'``) and are only
imported here, when a ``.pb`` is converted.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path

import onnx

from .errors import make_error

# The ONNX opset tf2onnx is asked for: its newest well-tested one that every mapper handles.
TF_OPSET = 17
# Node types that are never a model's output, even when nothing reads them.
_NOT_OUTPUTS = {"Const", "NoOp", "Placeholder", "PlaceholderWithDefault", "Assert", "SaveV2", "RestoreV2",
                "VarHandleOp", "VariableV2", "ReadVariableOp", "AssignVariableOp"}
_INPUT_OPS = {"Placeholder", "PlaceholderWithDefault"}
_NAME = re.compile(r"^(?P<node>[^:^]+?)(?::(?P<port>[0-9]+))?$")


def tf_stack_available() -> bool:
    """Whether TensorFlow and tf2onnx can be imported."""
    return all(importlib.util.find_spec(name) is not None for name in ("tensorflow", "tf2onnx"))


def _import_tf():
    """Import TensorFlow and tf2onnx quietly, or raise TF_STACK_MISSING naming the extra."""
    if not tf_stack_available():
        raise make_error("TF_STACK_MISSING", "Converting a TensorFlow .pb needs tensorflow and tf2onnx.")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import tensorflow as tf
        import tf2onnx
    except Exception as exc:  # noqa: BLE001 - a broken install raises anything
        raise make_error("TF_STACK_MISSING", f"tensorflow or tf2onnx is installed but fails to import ({exc}).") from None
    return tf, tf2onnx


@contextlib.contextmanager
def _quiet_loggers():
    """Silence TensorFlow's and tf2onnx's chatter (deprecation notes, per-pass INFO lines)."""
    loggers = [logging.getLogger(name) for name in ("tensorflow", "tf2onnx")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def normalise_tensor_name(name: str, option: str) -> str:
    """``x`` -> ``x:0``; ``x:1`` stays; anything else is a usage error."""
    match = _NAME.match(name.strip())
    if not match:
        raise make_error("UNKNOWN_NODE", f"{option} '{name}' is not a TensorFlow tensor name like 'x:0'.")
    return f"{match['node']}:{int(match['port'] or 0)}"


def parse_graphdef(path: Path, tf):
    """Parse the file into a ``tf.compat.v1.GraphDef`` (NOT_A_GRAPHDEF when it is none)."""
    graph_def = tf.compat.v1.GraphDef()
    try:
        graph_def.ParseFromString(path.read_bytes())
    except OSError as exc:
        raise make_error("FILE_UNREADABLE", f"Cannot read '{path}': {exc.strerror}.") from None
    except Exception as exc:  # noqa: BLE001 - DecodeError and friends
        raise make_error("NOT_A_GRAPHDEF", f"'{path.name}' does not parse as a TensorFlow GraphDef ({exc}).") from None
    if not graph_def.node:
        raise make_error("NOT_A_GRAPHDEF", f"'{path.name}' holds an empty GraphDef.")
    if any(node.op in ("VarHandleOp", "VariableV2", "Variable") for node in graph_def.node):
        raise make_error(
            "NOT_A_GRAPHDEF",
            f"'{path.name}' still holds variables: freeze it first "
            "(convert_variables_to_constants_v2, see docs/tensorflow.md).",
        )
    return graph_def


def _output_counts(graph_def, tf) -> dict[str, int]:
    """How many outputs each node has, as TensorFlow's importer sees it."""
    with tf.Graph().as_default() as graph:
        try:
            tf.graph_util.import_graph_def(graph_def, name="")
        except Exception as exc:  # noqa: BLE001 - unknown op, bad attr, dangling input...
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise make_error("TF_CONVERSION_FAILED", f"TensorFlow cannot import the GraphDef: {first}") from None
        return {op.name: len(op.outputs) for op in graph.get_operations()}


def _describe_placeholder(node) -> str:
    from tensorflow.python.framework import dtypes  # imported only when TensorFlow is present

    dtype = dtypes.as_dtype(node.attr["dtype"].type).name if "dtype" in node.attr else "?"
    return f"{node.name}:0 {dtype}[{_dims_text(_placeholder_dims(node))}]"


def _placeholder_dims(node) -> list[int] | None:
    """The placeholder's declared dims (-1 unknown), or None when its rank is unknown."""
    if "shape" not in node.attr or node.attr["shape"].shape.unknown_rank:
        return None
    return [int(dim.size) for dim in node.attr["shape"].shape.dim]


def _dims_text(dims: list[int] | None) -> str:
    if dims is None:
        return "?..."
    return ",".join("?" if d < 0 else str(d) for d in dims)


def candidate_inputs(graph_def) -> list[str]:
    """The graph's placeholders, described as ``name:0 dtype[dims]``."""
    return [_describe_placeholder(node) for node in graph_def.node if node.op in _INPUT_OPS]


def candidate_outputs(graph_def) -> list[str]:
    """Tensors nothing reads (likely outputs), e.g. ``Identity:0``."""
    consumed = set()
    for node in graph_def.node:
        for name in node.input:
            if name.startswith("^"):
                continue
            node_name, _, port = name.partition(":")
            consumed.add(f"{node_name}:{port or 0}")
    result = []
    for node in graph_def.node:
        if node.op in _NOT_OUTPUTS:
            continue
        if f"{node.name}:0" not in consumed:
            result.append(f"{node.name}:0")
    return result


def _listing(items: list[str], limit: int = 12) -> str:
    if not items:
        return "none found"
    shown = ", ".join(items[:limit])
    return shown + (f" (and {len(items) - limit} more)" if len(items) > limit else "")


def _check_names(names: list[str], counts: dict[str, int], option: str, hint: str) -> None:
    seen = set()
    for name in names:
        if name in seen:
            raise make_error("DUPLICATE_NODE", f"{option} lists '{name}' twice.")
        seen.add(name)
        node, _, port = name.rpartition(":")
        if node not in counts:
            raise make_error("UNKNOWN_NODE", f"{option} '{name}': the graph has no node '{node}'. {hint}")
        if int(port) >= counts[node]:
            raise make_error(
                "UNKNOWN_NODE",
                f"{option} '{name}': node '{node}' has {counts[node]} output(s) "
                f"(':0'..':{max(counts[node] - 1, 0)}'). {hint}",
            )


def _fix_placeholder_shapes(graph_def, inputs: list[str], shapes: list[tuple[int, ...]]) -> None:
    """Check each shape against its placeholder and write it into the placeholder's ``shape``."""
    by_name = {node.name: node for node in graph_def.node}
    for name, shape in zip(inputs, shapes):
        node = by_name[name.rpartition(":")[0]]
        if node.op not in _INPUT_OPS:
            continue  # an inner tensor cut as input: tf2onnx takes its shape from shape_override
        declared = _placeholder_dims(node)
        if declared is not None:
            if len(declared) != len(shape):
                raise make_error(
                    "SHAPE_CONFLICT",
                    f"--shape {','.join(map(str, shape))} for '{name}' has rank {len(shape)}, but the "
                    f"placeholder is [{_dims_text(declared)}] (rank {len(declared)}).",
                )
            for axis, (want, got) in enumerate(zip(declared, shape)):
                if want >= 0 and want != got:
                    raise make_error(
                        "SHAPE_CONFLICT",
                        f"--shape {','.join(map(str, shape))} for '{name}': dimension {axis} is {got}, but the "
                        f"placeholder fixes it to {want} ([{_dims_text(declared)}]).",
                    )
        proto = node.attr["shape"].shape
        proto.Clear()
        for size in shape:
            proto.dim.add().size = int(size)


def load_graphdef(
    path: Path,
    input_nodes: Sequence[str] | None,
    output_nodes: Sequence[str] | None,
    shapes: Sequence[Sequence[int]] | None,
) -> onnx.ModelProto:
    """Convert the frozen GraphDef at ``path`` into ONNX (the user's NHWC input layout kept)."""
    tf, tf2onnx = _import_tf()
    with _quiet_loggers():
        graph_def = parse_graphdef(path, tf)
        placeholders = candidate_inputs(graph_def)
        outputs = candidate_outputs(graph_def)
        in_hint = f"Placeholders: {_listing(placeholders)}."
        out_hint = f"Likely outputs: {_listing(outputs)}."
        if not input_nodes or not output_nodes:
            missing = " and ".join(
                option for option, given in (("--input_nodes", input_nodes), ("--output_nodes", output_nodes))
                if not given
            )
            raise make_error(
                "TF_NAMES_REQUIRED",
                f"'{path.name}' is a TensorFlow GraphDef, which does not say which tensors are its inputs and "
                f"outputs: give {missing}. {in_hint} {out_hint}",
            )
        inputs = [normalise_tensor_name(name, "--input_nodes") for name in input_nodes]
        outputs_wanted = [normalise_tensor_name(name, "--output_nodes") for name in output_nodes]
        counts = _output_counts(graph_def, tf)
        _check_names(inputs, counts, "--input_nodes", in_hint)
        _check_names(outputs_wanted, counts, "--output_nodes", out_hint)
        if not shapes:
            raise make_error(
                "SHAPE_REQUIRED",
                f"A TensorFlow GraphDef needs --shape for each input ({', '.join(inputs)}). {in_hint}",
            )
        if len(shapes) != len(inputs):
            raise make_error(
                "SHAPE_COUNT", f"{len(shapes)} --shape value(s) for {len(inputs)} input(s) ({', '.join(inputs)})."
            )
        shapes = [tuple(int(d) for d in shape) for shape in shapes]
        _fix_placeholder_shapes(graph_def, inputs, shapes)
        try:
            model, _ = tf2onnx.convert.from_graph_def(
                graph_def,
                name=path.stem,
                input_names=inputs,
                output_names=outputs_wanted,
                opset=TF_OPSET,
                shape_override={name: list(shape) for name, shape in zip(inputs, shapes)},
            )
        except Exception as exc:  # noqa: BLE001 - tf2onnx raises whatever its handlers raise
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise make_error("TF_CONVERSION_FAILED", f"tf2onnx could not convert '{path.name}': {text}") from None
    return model


__all__ = ["TF_OPSET", "candidate_inputs", "candidate_outputs", "load_graphdef", "tf_stack_available"]
