"""Stage 1 for TensorFlow: a frozen GraphDef (``.pb``) becomes an in-memory ``onnx.ModelProto``.

A GraphDef does not say which tensors are the model's inputs and outputs, so the user names them
(``--input_nodes x:0 --output_nodes Identity:0``) and gives one ``--shape`` per input. The names
are checked against the graph (with the candidates listed when one is wrong), the placeholders get
the user's static shapes, and tf2onnx converts the graph in memory — nothing is written beside
the input. The ONNX model keeps the user's names and the user's (NHWC) input layout: tf2onnx
converts NHWC convolutions with Transposes around them and its own transpose optimizer cancels the
pairs, leaving one Transpose at the input (checked on Keras CNNs and applications, see
tests/tf/), so no extra layout pass is needed here. Graphs frozen with lowered control flow (TF1
while loops over TensorLists, e.g. Keras RNNs) get their lists rewritten as plain tensors first
(``densify_tensor_lists``), which tf2onnx can turn into ONNX Loops.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from ..errors import make_error
from ..native_stderr import captured_native_stderr
from .tf_gelu import gelu_op_handlers

# The ONNX opset tf2onnx is asked for: its newest well-tested one that every mapper handles.
TF_OPSET = 17
# Node types that are never a model's output, even when nothing reads them.
_NOT_OUTPUTS = {
    "Const",
    "NoOp",
    "Placeholder",
    "PlaceholderWithDefault",
    "Assert",
    "SaveV2",
    "RestoreV2",
    "VarHandleOp",
    "VariableV2",
    "ReadVariableOp",
    "AssignVariableOp",
}
_INPUT_OPS = {"Placeholder", "PlaceholderWithDefault"}
_NAME = re.compile(r"^(?P<node>[^:^]+?)(?::(?P<port>[0-9]+))?$")


def tf_stack_available() -> bool:
    """Whether TensorFlow and tf2onnx can be imported."""
    return all(importlib.util.find_spec(name) is not None for name in ("tensorflow", "tf2onnx"))


def import_tf_stack():
    """Import TensorFlow and tf2onnx quietly, or raise TF_STACK_MISSING naming the extra."""
    if not tf_stack_available():
        raise make_error(
            "TF_STACK_MISSING", "Converting a TensorFlow .pb needs tensorflow and tf2onnx."
        )
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        with captured_native_stderr():  # absl and oneDNN announce themselves on import
            import tensorflow as tf
            import tf2onnx
    except Exception as exc:  # noqa: BLE001 - a broken install raises anything
        raise make_error(
            "TF_STACK_MISSING", f"tensorflow or tf2onnx is installed but fails to import ({exc})."
        ) from None
    return tf, tf2onnx


@contextlib.contextmanager
def quiet_tf_loggers():
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
        raise make_error(
            "UNKNOWN_NODE", f"{option} '{name}' is not a TensorFlow tensor name like 'x:0'."
        )
    return f"{match['node']}:{int(match['port'] or 0)}"


def parse_graphdef(path: Path, tf):
    """Parse the file into a ``tf.compat.v1.GraphDef`` (NOT_A_GRAPHDEF when it is none)."""
    graph_def = tf.compat.v1.GraphDef()
    try:
        graph_def.ParseFromString(path.read_bytes())
    except OSError as exc:
        raise make_error("FILE_UNREADABLE", f"Cannot read '{path}': {exc.strerror}.") from None
    except Exception as exc:  # noqa: BLE001 - DecodeError and friends
        raise make_error(
            "NOT_A_GRAPHDEF", f"'{path.name}' does not parse as a TensorFlow GraphDef ({exc})."
        ) from None
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
            raise make_error(
                "TF_CONVERSION_FAILED", f"TensorFlow cannot import the GraphDef: {first}"
            ) from None
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
            raise make_error(
                "UNKNOWN_NODE", f"{option} '{name}': the graph has no node '{node}'. {hint}"
            )
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


# Ops that only pass a TF1 loop variable along (a TensorList travels through them unchanged).
_LIST_PASSTHROUGH = {"Enter", "Merge", "Switch", "Exit", "NextIteration", "Identity"}
# Where each TensorList op keeps its element_shape input.
_ELEMENT_SHAPE_INPUT = {
    "TensorListReserve": 0,
    "TensorListFromTensor": 1,
    "TensorListGetItem": 2,
    "TensorListStack": 1,
}


def _run_shapes(graph_def, tf, feeds: dict[str, tuple[int, ...]], fetches: list[str]):
    """The shapes of ``fetches`` when the graph runs on zeros of the given input shapes (None if it fails)."""
    try:
        with tf.Graph().as_default() as graph:
            tf.graph_util.import_graph_def(graph_def, name="")
            arrays = {}
            for name, shape in feeds.items():
                dtype = graph.get_tensor_by_name(name).dtype
                arrays[name] = np.zeros(
                    shape, dtype=object if dtype == tf.string else dtype.as_numpy_dtype
                )
            with tf.compat.v1.Session(graph=graph) as session:
                return [
                    tuple(int(d) for d in value.shape) for value in session.run(fetches, arrays)
                ]
    except Exception:  # noqa: BLE001 - any failure: leave the lists to tf2onnx
        return None


def densify_tensor_lists(graph_def, tf, feeds: dict[str, tuple[int, ...]] | None = None) -> bool:
    """Rewrite the TensorLists of TF1-style loops as plain tensors ``[num_elements, *element_shape]``.

    A graph frozen with the default ``lower_control_flow=True`` holds each Keras RNN as a TF1
    while loop (Enter/Merge/Switch/NextIteration/Exit) whose inputs and outputs travel in
    TensorLists; tf2onnx only understands TensorLists inside functional ``While`` ops and leaves
    these unconverted. Here each list becomes a dense tensor: Reserve -> Fill with zeros,
    FromTensor and Stack -> Identity, GetItem -> GatherV2 on axis 0, SetItem -> TensorScatterUpdate
    of one row; the loop ops carrying it get the element dtype instead of ``variant``. tf2onnx then
    makes an ordinary ONNX Loop, which the preprocessing unrolls (mindconverter/passes/unroll_loops.py).
    The dense shape comes from the graph's constant element shapes and sizes; when a dimension is
    unknown there (a model traced with a dynamic batch) the graph is run once in TensorFlow on
    zeros of the ``feeds`` shapes (input name -> shape) to read it from the stacked list.
    Changes nothing (returns False) unless every list in the graph can be rewritten this way.
    """
    from tensorflow.python.framework import tensor_util  # imported only when TensorFlow is present

    nodes = list(graph_def.node)
    if any(node.op in ("While", "StatelessWhile") for node in nodes):
        return False  # functional loops: tf2onnx handles their lists itself
    if not any(node.op in ("TensorListReserve", "TensorListFromTensor") for node in nodes):
        return False
    plans = _plan_lists(nodes, tensor_util)
    if plans is None or not _complete_shapes(plans, graph_def, tf, feeds):
        return False
    covered = {node.name for plan in plans for node in plan.group + plan.users}
    if any(node.op.startswith("TensorList") and node.name not in covered for node in nodes):
        return False
    writer = _DenseListWriter(graph_def, tf, tensor_util)
    for plan in plans:
        writer.rewrite(plan)
    return True


@dataclass
class _ListPlan:
    """One TensorList: where it is made, the ops that carry or write it, the ops that read it,
    and its dense shape ``[num_elements, *element_shape]`` (None while unknown)."""

    root: Any
    group: list
    users: list
    shape: list[int] | None


def _plan_lists(nodes: list, tensor_util) -> list[_ListPlan] | None:
    """A plan for every list in the graph, or None when one is read by an op with no dense form."""
    by_name = {node.name: node for node in nodes}
    consumers: dict[str, list] = {}
    for node in nodes:
        for index, name in enumerate(node.input):
            if not name.startswith("^"):
                consumers.setdefault(name.split(":")[0], []).append((node, index))

    def const_value(name):
        node = by_name.get(name.split(":")[0])
        if node is None or node.op != "Const":
            return None
        return tensor_util.MakeNdarray(node.attr["value"].tensor)

    plans = []
    for root in (
        node for node in nodes if node.op in ("TensorListReserve", "TensorListFromTensor")
    ):
        group, users, stack = [root], [], [root]
        while stack:
            for user, index in consumers.get(stack.pop().name, []):
                if user.op in _LIST_PASSTHROUGH or (user.op == "TensorListSetItem" and index == 0):
                    if user.name not in {node.name for node in group}:
                        group.append(user)
                        stack.append(user)
                elif user.op in ("TensorListGetItem", "TensorListStack") and index == 0:
                    users.append(user)
                else:
                    return None  # a list read by an op with no dense equivalent
        shape = None
        for node in [root] + users:
            value = const_value(node.input[_ELEMENT_SHAPE_INPUT[node.op]])
            if value is not None and value.ndim == 1 and (value >= 0).all():
                shape = [int(v) for v in value]
                break
        if root.op == "TensorListReserve":
            count = const_value(root.input[1])
            shape = (
                None if shape is None or count is None or count.size != 1 else [int(count)] + shape
            )
        plans.append(_ListPlan(root, group, users, shape))
    return plans


def _complete_shapes(plans: list[_ListPlan], graph_def, tf, feeds) -> bool:
    """Fill in the shapes the graph's constants leave open (e.g. traced with a dynamic batch) by
    asking TensorFlow for the stacked lists' shapes; False when that is impossible."""
    unknown = [plan for plan in plans if plan.root.op == "TensorListReserve" and plan.shape is None]
    if not unknown:
        return True
    stacks = [
        next((user for user in plan.users if user.op == "TensorListStack"), None)
        for plan in unknown
    ]
    if None in stacks or not feeds:
        return False
    shapes = _run_shapes(graph_def, tf, feeds, [f"{stack.name}:0" for stack in stacks])
    if shapes is None:
        return False
    for plan, shape in zip(unknown, shapes):
        plan.shape = list(shape)
    return True


class _DenseListWriter:
    """Rewrites the ops of planned TensorLists into ops on dense tensors."""

    def __init__(self, graph_def, tf, tensor_util):
        self.graph_def, self.tf, self.tensor_util = graph_def, tf, tensor_util
        self.int32 = tf.int32.as_datatype_enum

    def add_const(self, name, array, anchor):
        """A Const in the same loop frame as ``anchor`` (TF1 frames follow control inputs)."""
        node = self.graph_def.node.add()
        node.name, node.op = name, "Const"
        node.attr["dtype"].type = self.tf.as_dtype(array.dtype).as_datatype_enum
        node.attr["value"].tensor.CopyFrom(self.tensor_util.make_tensor_proto(array))
        node.input.append("^" + anchor.split(":")[0].lstrip("^"))
        return name

    def add_op(self, name, op, inputs, attrs):
        node = self.graph_def.node.add()
        node.name, node.op = name, op
        node.input.extend(inputs)
        for key, value in attrs.items():
            node.attr[key].type = value

    @staticmethod
    def become(node, op, inputs, attrs):
        controls = [name for name in node.input if name.startswith("^")]
        node.op = op
        del node.input[:]
        node.input.extend(list(inputs) + controls)
        node.ClearField("attr")
        for key, value in attrs.items():
            node.attr[key].type = value

    def rewrite(self, plan: _ListPlan) -> None:
        dtype = plan.root.attr["element_dtype"].type
        for node in plan.group[1:]:
            if node.op in _LIST_PASSTHROUGH:
                node.attr["T"].type = dtype
            elif plan.root.op == "TensorListReserve" and plan.shape[0] == 1:
                # a one-element list (an RNN keeping its last output): writing row 0 replaces it
                item = node.input[2]
                axis = self.add_const(node.name + "/dense_axis", np.array(0, np.int32), item)
                self.become(node, "ExpandDims", [item, axis], {"T": dtype, "Tdim": self.int32})
            else:
                self.write_row(node, dtype)
        self.rewrite_root(plan, dtype)
        for node in plan.users:
            self.rewrite_reader(node, dtype)

    def write_row(self, node, dtype) -> None:
        """TensorListSetItem(list, index, item) -> TensorScatterUpdate of one row."""
        index, item = node.input[1], node.input[2]
        rows, update = node.name + "/dense_index", node.name + "/dense_update"
        shape = self.add_const(rows + "_shape", np.array([1, 1], np.int32), index)
        self.add_op(rows, "Reshape", [index, shape], {"T": self.int32, "Tshape": self.int32})
        axis = self.add_const(update + "_axis", np.array(0, np.int32), item)
        self.add_op(update, "ExpandDims", [item, axis], {"T": dtype, "Tdim": self.int32})
        self.become(
            node,
            "TensorScatterUpdate",
            [node.input[0], rows, update],
            {"T": dtype, "Tindices": self.int32},
        )

    def rewrite_root(self, plan: _ListPlan, dtype) -> None:
        """TensorListReserve -> Fill with zeros; TensorListFromTensor -> Identity."""
        root = plan.root
        if root.op != "TensorListReserve":
            self.become(root, "Identity", [root.input[0]], {"T": dtype})
            return
        anchor = root.input[1]
        np_dtype = self.tf.as_dtype(dtype).as_numpy_dtype
        shape = self.add_const(root.name + "/dense_shape", np.array(plan.shape, np.int32), anchor)
        zero = self.add_const(root.name + "/dense_zero", np.zeros((), np_dtype), anchor)
        self.become(root, "Fill", [shape, zero], {"T": dtype, "index_type": self.int32})

    def rewrite_reader(self, node, dtype) -> None:
        """TensorListStack -> Identity; TensorListGetItem -> GatherV2 on axis 0."""
        if node.op == "TensorListStack":
            self.become(node, "Identity", [node.input[0]], {"T": dtype})
            return
        index = node.input[1]
        axis = self.add_const(node.name + "/dense_axis", np.array(0, np.int32), index)
        self.become(
            node,
            "GatherV2",
            [node.input[0], index, axis],
            {"Tparams": dtype, "Tindices": self.int32, "Taxis": self.int32},
        )
        node.attr["batch_dims"].i = 0


# Markers that keep TensorFlow's graph optimizer from inlining a function call: Keras 3 wraps
# grouped convolutions in a function compiled by XLA, which freezing leaves as a call.
_NO_INLINE_MARKERS = ("_XlaMustCompile", "_noinline")


def allow_inlining(graph_def) -> None:
    """Drop the markers that keep function calls (``StatefulPartitionedCall`` and the like) from
    being inlined before tf2onnx, which converts only inlined graphs."""
    for holder in [*graph_def.node, *graph_def.library.function]:
        for marker in _NO_INLINE_MARKERS:
            if marker in holder.attr:
                del holder.attr[marker]


def load_graphdef(
    path: Path,
    input_nodes: Sequence[str] | None,
    output_nodes: Sequence[str] | None,
    shapes: Sequence[Sequence[int]] | None,
) -> onnx.ModelProto:
    """Convert the frozen GraphDef at ``path`` into ONNX (the user's NHWC input layout kept)."""
    tf, tf2onnx = import_tf_stack()
    with quiet_tf_loggers(), captured_native_stderr():
        graph_def = parse_graphdef(path, tf)
        placeholders = candidate_inputs(graph_def)
        outputs = candidate_outputs(graph_def)
        in_hint = f"Placeholders: {_listing(placeholders)}."
        out_hint = f"Likely outputs: {_listing(outputs)}."
        if not input_nodes or not output_nodes:
            missing = " and ".join(
                option
                for option, given in (
                    ("--input_nodes", input_nodes),
                    ("--output_nodes", output_nodes),
                )
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
                "SHAPE_COUNT",
                f"{len(shapes)} --shape value(s) for {len(inputs)} input(s) ({', '.join(inputs)}).",
            )
        shapes = [tuple(int(d) for d in shape) for shape in shapes]
        _fix_placeholder_shapes(graph_def, inputs, shapes)
        allow_inlining(graph_def)
        densify_tensor_lists(graph_def, tf, dict(zip(inputs, shapes)))
        try:
            model, _ = tf2onnx.convert.from_graph_def(
                graph_def,
                name=path.stem,
                input_names=inputs,
                output_names=outputs_wanted,
                opset=TF_OPSET,
                shape_override={name: list(shape) for name, shape in zip(inputs, shapes)},
                custom_op_handlers=gelu_op_handlers(),
            )
        except Exception as exc:  # noqa: BLE001 - tf2onnx raises whatever its handlers raise
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise make_error(
                "TF_CONVERSION_FAILED", f"tf2onnx could not convert '{path.name}': {text}"
            ) from None
    return model


__all__ = [
    "TF_OPSET",
    "allow_inlining",
    "candidate_inputs",
    "candidate_outputs",
    "densify_tensor_lists",
    "import_tf_stack",
    "load_graphdef",
    "quiet_tf_loggers",
    "tf_stack_available",
]
