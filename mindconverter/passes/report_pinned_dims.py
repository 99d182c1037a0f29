"""Pass: say which declared dynamic dimensions the model itself pins to their exported size.

An export can declare an axis dynamic while a node still computes with the size it saw (a
TorchScript ``x.view(8, 2, 16)`` traced with a fixed length): symbolic inference then merges the
dimension with that size, and the network is static there. The user is told which dimension,
which size, and a node that reshapes to a constant shape holding that size.
"""

from __future__ import annotations

from ..graph import Graph
from ..text import one_line
from .context import PassContext

# Operators whose constant shape input can pin a dimension.
_SHAPE_TAKERS = {"Reshape": 1, "Expand": 1, "Tile": 1, "ConstantOfShape": 0}


def run(graph: Graph, context: PassContext) -> bool:
    """Record a note for every declared dynamic dimension that inference found fixed."""
    known = len(context.notes)
    for name, dims in context.declared_shapes.items():
        inferred = graph.symbolic_shapes.get(name, ())
        for axis, (want, got) in enumerate(zip(dims, inferred)):
            if isinstance(want, str) and isinstance(got, int):
                node = _pinning_node(graph, got)
                where = f"; node '{one_line(node, 80)}' computes with it" if node else ""
                context.notes.append(
                    f"Dimension '{want}' (axis {axis} of input '{one_line(name, 80)}') is declared "
                    "dynamic, but "
                    f"the model fixes it to {got}{where}. The network keeps it at {got}; export "
                    "with that axis dynamic (and no size-dependent tracing) to change it."
                )
    for note in context.notes[known:]:  # earlier passes said theirs already
        context.say(f"NOTE: {note}")
    return False


def _pinning_node(graph: Graph, size: int) -> str:
    """The first node that takes a constant shape holding ``size`` (a likely place of the pin)."""
    for node in graph.nodes:
        index = _SHAPE_TAKERS.get(node.op_type)
        if index is None or index >= len(node.inputs):
            continue
        value = graph.constants.get(node.inputs[index])
        if value is not None and value.ndim == 1 and size in value.tolist():
            return node.name or node.outputs[0]
    return ""
