"""Pass: onnxoptimizer's clean-ups that never change what a layer is."""

from __future__ import annotations

import contextlib
import os
import sys

import onnx
import onnxoptimizer

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
    try:
        with _quiet_stderr():
            optimized = onnxoptimizer.optimize(model, OPTIMIZER_PASSES)
    except (
        Exception
    ):  # the optimizer rejects some valid models; it only tidies, so go on without it
        return model
    for node in optimized.graph.node:
        for entry in metadata.get(node.name, []):
            node.metadata_props.add().CopyFrom(entry)
    optimized.graph.ClearField("value_info")
    return optimized


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
