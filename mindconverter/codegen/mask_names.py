"""Names for the values that build an attention's mask where the network builds it.

Inside a layer, the mask an attention adds to its scores is the block's ``attention_mask``
argument; in the model that computes it, the chain that builds it was named by its operators
(``less_or_equal = range_1 <= range_``, ``less_or_equal = ops.where(less_or_equal, 0.0, ...)``).
Such a chain is named as a person writes it: ``causal_mask`` when it starts at a comparison of
positions, ``attention_mask`` when it starts at a network input (a padding mask), through
casts, reshapes, ``where`` and the ``(1 - mask) * min`` arithmetic to the attention.
"""

from __future__ import annotations

from ..graph import Graph
from ..graph.internal_domain import DOMAIN
from ..mappers.base import MappedNode

_COMPARISONS = {"Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Equal"}
# steps that carry a mask on (through the one input that is not a constant)
_STEPS = {"Unsqueeze", "Reshape", "Expand", "Cast", "Slice", "Where", "Sub", "Mul", "Not"}
_LONGEST = 12


def mask_chain_roles(graph: Graph, mapped: list[MappedNode]) -> dict[str, str]:
    """``causal_mask`` or ``attention_mask`` for each value of a chain building a mask."""
    producers = {out: m.node for m in mapped for out in m.node.outputs if out}
    readers: dict[str, int] = {}
    for m in mapped:
        for name in set(m.node.inputs):
            if name:
                readers[name] = readers.get(name, 0) + 1
    roles: dict[str, str] = {}
    for m in mapped:
        node = m.node
        if node.op_type != "ScaledDotProductAttention" or node.domain != DOMAIN:
            continue
        for bias in node.inputs[3:]:
            chain, causal = _chain(graph, producers, readers, bias)
            role = "causal_mask" if causal else "attention_mask"
            roles.update((name, role) for name in chain if name not in roles)
    return roles


def _chain(graph: Graph, producers: dict, readers: dict, name: str) -> tuple[list[str], bool]:
    """The values from ``name`` back to where its mask starts, and whether it starts at a
    comparison; no values when it starts nowhere a mask does (a position bias, ALiBi)."""
    chain: list[str] = []
    for _ in range(_LONGEST):
        if not name or name in graph.inputs:
            return chain, False
        if chain and (readers.get(name, 0) != 1 or name in graph.outputs):
            return [], False
        source = producers.get(name)
        if source is None or source.domain not in ("", "ai.onnx"):
            return [], False
        chain.append(name)
        if source.op_type in _COMPARISONS:
            return chain, True
        if source.op_type not in _STEPS:
            return [], False
        carried = [i for i in source.inputs if i and graph.constant(i) is None]
        if source.op_type == "Where":  # the condition, when both branches are fill values
            fills = all(graph.constant(i) is not None for i in source.inputs[1:])
            carried = source.inputs[:1] if fills else []
        elif source.op_type in ("Unsqueeze", "Reshape", "Expand", "Slice"):
            carried = source.inputs[:1]
        if len(carried) != 1:
            return [], False
        name = carried[0]
    return [], False
