"""Pass: remove nodes and initializers nothing needs any more."""

from __future__ import annotations

from ..graph import Graph
from ..graph.pruning import remove_dead_nodes, remove_unused_initializers
from .context import PassContext


def run(graph: Graph, context: PassContext) -> bool:
    """Remove nodes that reach no output, then initializers nothing reads."""
    remove_dead_nodes(graph.model)
    remove_unused_initializers(graph.model)
    graph.edited()
    return True


def run_unused_initializers(graph: Graph, context: PassContext) -> bool:
    """Remove initializers nothing reads (after folding replaced their readers)."""
    remove_unused_initializers(graph.model)
    graph.edited()
    return True
