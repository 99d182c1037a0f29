"""Pass: onnxoptimizer's clean-ups that never change what a layer is."""

from __future__ import annotations

import contextlib
import os
import sys

import onnx
import onnxoptimizer
from onnx import numpy_helper

from ..graph import Graph
from .context import PassContext

# Graph clean-ups from onnxoptimizer that never change what a layer is (no fusing of Conv+BN or
# MatMul+Add: those are kept as the user wrote them).
# Dead nodes are removed by remove_dead_nodes: onnxoptimizer's eliminate_deadend ignores reads
# from If/Loop subgraphs and so deletes values a branch still needs.
OPTIMIZER_PASSES = [
    "eliminate_identity",
    "eliminate_nop_cast",
    "eliminate_nop_concat",
    "eliminate_nop_expand",
    "eliminate_nop_flatten",
    "eliminate_nop_pad",
    "eliminate_nop_split",
    "eliminate_nop_transpose",
    "fuse_consecutive_squeezes",
    "fuse_consecutive_transposes",
    "fuse_consecutive_unsqueezes",
]  # unused initializers are dropped by remove_unused_initializers: onnxoptimizer's pass misses subgraph reads


def run_optimizer(model: onnx.ModelProto) -> onnx.ModelProto:
    """Apply onnxoptimizer's clean-up passes, keeping each node's metadata (it drops them)."""
    for index, node in enumerate(model.graph.node):
        if not node.name:
            node.name = f"{node.op_type}_{index}"
    metadata = {
        node.name: list(node.metadata_props) for node in model.graph.node if node.metadata_props
    }
    passes = OPTIMIZER_PASSES
    if _squeezes_with_negative_axes(model.graph):
        # onnxoptimizer fuses Squeeze(-3) then Squeeze(-1) of [1, 3, 1] into Squeeze((0, 0))
        passes = [name for name in passes if name != "fuse_consecutive_squeezes"]
    try:
        with _quiet_stderr():
            optimized = onnxoptimizer.optimize(model, passes)
    except (
        Exception
    ):  # the optimizer rejects some valid models; it only tidies, so go on without it
        return model
    for node in optimized.graph.node:
        for entry in metadata.get(node.name, []):
            node.metadata_props.add().CopyFrom(entry)
    optimized.graph.ClearField("value_info")
    return optimized


def _squeezes_with_negative_axes(graph: onnx.GraphProto) -> bool:
    """Whether a Squeeze of ``graph`` takes a negative axis (attribute or constant input)."""
    constants = {init.name: init for init in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute:
            if node.attribute[0].type == onnx.AttributeProto.TENSOR:
                constants[node.output[0]] = node.attribute[0].t
    for node in graph.node:
        if node.op_type != "Squeeze":
            continue
        axes = [list(a.ints) for a in node.attribute if a.name == "axes"]
        if len(node.input) > 1 and node.input[1] in constants:
            try:
                axes.append(numpy_helper.to_array(constants[node.input[1]]).reshape(-1).tolist())
            except Exception:  # unreadable here (held elsewhere): assume the worst
                return True
        if any(axis < 0 for values in axes for axis in values):
            return True
    return False


@contextlib.contextmanager
def _quiet_stderr():
    """Silence C++ code that writes warnings straight to file descriptor 2."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:  # no real stderr (embedded, captured): nothing to silence
        yield
        return
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def run(graph: Graph, context: PassContext) -> bool:
    """Tidy the graph with onnxoptimizer (identity, no-op and consecutive-op clean-ups)."""
    graph.replace_model(run_optimizer(graph.model))
    return True
