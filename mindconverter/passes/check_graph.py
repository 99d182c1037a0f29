"""Pass: check the simplified graph can be mapped: outputs exist, order is acyclic and complete,
and no value is impossibly large."""

from __future__ import annotations

import math

from ..errors import make_error
from ..frontends.loading import MAX_ELEMENTS
from ..graph import Graph
from ..text import one_line
from .context import PassContext


def run(graph: Graph, context: PassContext) -> bool:
    """Raise INVALID_GRAPH for a graph without outputs, with a cycle, or with unproduced outputs;
    ABSURD_DIMENSION for a value whose inferred shape no machine could hold (a Reshape or Expand
    to 2^62 elements)."""
    if not graph.outputs:
        raise make_error("INVALID_GRAPH", "The graph has no outputs.")
    produced = {out for node in graph.nodes for out in node.outputs}  # sorts: rejects cycles
    available = produced | set(graph.inputs) | set(graph.initializers)
    for out in graph.outputs:
        if out not in available:
            raise make_error("INVALID_GRAPH", f"Graph output '{out}' is produced by no node.")
    for name, shape in graph.shapes.items():
        if math.prod(shape) > MAX_ELEMENTS:
            raise make_error(
                "ABSURD_DIMENSION",
                f"Value '{one_line(name, 80)}' would hold {math.prod(shape)} elements "
                f"(shape {list(shape)}).",
            )
    return False
