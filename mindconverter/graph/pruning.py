"""Removing what nothing needs: nodes that reach no output, initializers nothing reads."""

from __future__ import annotations

import onnx
from onnx import helper

from .subgraphs import subgraph_references


def remove_unused_initializers(model: onnx.ModelProto) -> None:
    """Drop initializers nothing reads any more (after folding)."""
    used = {name for node in model.graph.node for name in node.input}
    used |= {out.name for out in model.graph.output}
    used |= subgraph_references(model.graph)
    kept = [init for init in model.graph.initializer if init.name in used]
    if len(kept) != len(model.graph.initializer):
        del model.graph.initializer[:]
        model.graph.initializer.extend(kept)


def remove_dead_nodes(model: onnx.ModelProto) -> None:
    """Drop nodes none of whose outputs reaches a graph output (reads inside subgraphs count)."""
    graph = model.graph
    needed = {out.name for out in graph.output}
    kept = []
    for node in reversed(graph.node):
        if any(out in needed for out in node.output):
            kept.append(node)
            needed.update(name for name in node.input if name)
            needed |= subgraph_references(helper.make_graph([node], "n", [], []))
    if len(kept) != len(graph.node):
        kept.reverse()
        del graph.node[:]
        graph.node.extend(kept)
