"""Names for a block's inputs from what the block does with them (``hidden_states``,
``attention_mask``, ``residual``, ``shape``), as a person would name the arguments."""

from __future__ import annotations

import numpy as np

from ..graph import Graph
from ..graph.internal_domain import DOMAIN
from ..mappers.base import Cell

_NORMALIZING = {"Softmax", "LogSoftmax"}


def input_names(
    graph: Graph, inputs: list[str], block_nodes: list, kept: set[str] | None = None
) -> list[str]:
    """A name hint per block input, in order (the caller makes them unique); a network input
    keeps its own name when ``kept`` is None or holds it (else it is named by its role)."""
    readers: dict[str, list] = {}
    for mapped in block_nodes:
        for name in mapped.node.inputs:
            if name:
                readers.setdefault(name, []).append(mapped.node)
    position = {id(m.node): i for i, m in enumerate(block_nodes)}
    caches = sorted(
        (name for name in inputs if _is_cache(graph, name, readers.get(name, []))),
        key=lambda name: min(position[id(node)] for node in readers[name]),
    )
    unread = [name for name in inputs if name not in readers]
    for name in unread:  # passed on unread (a layer that skips the rotary turn): named as read
        readers[name] = [node for node in graph.nodes if name in node.inputs]
    hints: list[str] = []
    for name in inputs:
        hint = _role(graph, name, readers, kept)
        if name in caches and name not in graph.inputs:
            cropped = cropped_input(graph, name)  # a sliding window's cache: still its input's
            hint = cropped or ("past_key", "past_value")[caches.index(name) % 2]
        elif hint == "x" and _only_concatenated(graph, name, readers.get(name, [])):
            hint = "shortcut"  # passed through beside what the block computes (ShuffleNet)
        elif hint == "x" and "x" in hints and _only_scales(name, readers):
            hint = "weights"  # multiplies what the block computes (Mixtral's routing weights)
        if hint == "hidden_states" and hint in hints:
            only_added = all(node.op_type == "Add" for node in readers.get(name, []))
            hint = "residual" if only_added else hint
        hints.append(hint)
    if hints.count("x") > 1:  # several feature maps (SegFormer's decode head: every stage's)
        hints = ["hidden_states" if hint == "x" else hint for hint in hints]
    return hints


def _role(graph: Graph, name: str, readers_of: dict[str, list], kept=None) -> str:
    readers = readers_of.get(name, [])
    if name in graph.inputs and (kept is None or name in kept):
        return name
    producer = graph.producers.get(name)
    if producer is not None and producer.domain == DOMAIN and producer.op_type == "Dims":
        return "shape"
    dtype = graph.dtypes.get(name)
    rank = len(graph.symbolic_shapes.get(name, ()) or ())
    if dtype is None:
        return "x"
    if any(_attention_bias_of(node, name) for node in readers):
        return _mask_or_bias(graph, name)
    if any(_adds_to_attention_bias(graph, node, name) for node in readers):
        return _mask_or_bias(graph, name)
    if dtype.kind == "f" and rank == 3 and any(unfolded_into_bias(graph, n) for n in readers):
        return "alibi"  # (batch * heads, 1, kv_len), made (batch, heads, 1, kv_len) here
    if dtype == np.bool_ or any(_masks_scores(graph, node, name) for node in readers):
        return "attention_mask"
    if dtype.kind == "f" and any(_masks_scores(graph, node, name, True) for node in readers):
        return "attention_bias"  # added to the scores whole (T5's position bias)
    if dtype.kind in "iu" and any(node.op_type == "Gather" for node in readers):
        return "position_ids" if rank >= 1 else "index"
    rotary = _rotary_role(graph, name, readers, readers_of)
    if rotary:  # before hidden states: a table may be (batch, seq, dim) too (Phi-3)
        return rotary
    if dtype.kind == "f" and rank == 3:
        return "hidden_states"
    return "indices" if dtype.kind in "iu" else "x"  # Mixtral's chosen experts


def _attention_bias_of(node, name: str) -> bool:
    """``name`` is what a fused attention adds to its scores (its inputs after q, k, v)."""
    fused = node.domain == DOMAIN and node.op_type == "ScaledDotProductAttention"
    return fused and name in node.inputs[3:]


def _feeds_attention_bias(graph: Graph, value: str, through: tuple[str, ...] = ()) -> bool:
    """Every reader of ``value`` adds it to a fused attention's scores, directly or through
    nodes of the ``through`` types (the Add summing a mask and ALiBi)."""
    readers = graph.consumer_nodes.get(value, [])
    return bool(readers) and all(
        (
            node.domain == DOMAIN
            and node.op_type == "ScaledDotProductAttention"
            and value in list(node.input)[3:]
        )
        or (node.op_type in through and _feeds_attention_bias(graph, node.output[0]))
        for node in readers
    )


def _adds_to_attention_bias(graph: Graph, node, name: str) -> bool:
    """``name`` is one of the terms summed into a fused attention's bias (mask + ALiBi)."""
    return (
        node.op_type == "Add"
        and bool(node.outputs)
        and _feeds_attention_bias(graph, node.outputs[0])
    )


def unfolded_into_bias(graph: Graph, node) -> bool:
    """A Reshape whose result is a term of a fused attention's bias (BLOOM's ALiBi)."""
    return (
        node.op_type == "Reshape"
        and bool(node.outputs)
        and _feeds_attention_bias(graph, node.outputs[0], ("Add",))
    )


def _mask_or_bias(graph: Graph, name: str) -> str:
    """A mask is broadcast over heads or queries; a bias (T5's positions) is not; ALiBi is one
    row per head, broadcast over queries."""
    shape = graph.symbolic_shapes.get(name) or ()
    floating = graph.dtypes.get(name) != np.bool_
    per_head = len(shape) in (3, 4) and isinstance(shape[-3], int) and shape[-3] > 1 == shape[-2]
    if floating and per_head and (len(shape) == 3 or shape[0] == 1):
        return "alibi"  # one row per head, the same for every query and batch (MPT)
    broadcast = len(shape) < 4 or shape[1] == 1 or shape[2] == 1
    return "attention_mask" if broadcast or graph.dtypes.get(name) == np.bool_ else "attention_bias"


def _masks_scores(graph: Graph, node, name: str, whole: bool = False) -> bool:
    """``scores + mask`` read by a softmax: ``name`` is the mask (the other operand), broadcast
    over heads or queries (or, with ``whole``, of the scores' own shape)."""
    if node.op_type != "Add" or len(node.inputs) != 2 or not node.outputs:
        return False
    readers = graph.consumer_nodes.get(node.outputs[0], [])
    if not any(reader.op_type in _NORMALIZING for reader in readers):
        return False
    other = node.inputs[1] if node.inputs[0] == name else node.inputs[0]
    # the mask is the operand broadcast over heads or queries (fewer elements than the scores)
    mask_shape = graph.symbolic_shapes.get(name)
    scores_shape = graph.symbolic_shapes.get(other)
    if mask_shape is None or scores_shape is None or len(mask_shape) != len(scores_shape):
        return False
    if whole:
        return mask_shape == scores_shape and graph.producers.get(other) is not None
    return any(m == 1 and s != 1 for m, s in zip(mask_shape, scores_shape))


def layer_reads(items: list) -> dict[str, int]:
    """How many of the block's own layers read each value (``query``, ``key`` and ``value`` read
    ``hidden_states``: their results are named after them)."""
    counts: dict[str, int] = {}
    for item in items:
        if isinstance(getattr(item, "result", None), Cell) and item.node.inputs:
            first = item.node.inputs[0]
            counts[first] = counts.get(first, 0) + 1
    return counts


def _only_scales(name: str, readers: dict, depth: int = 3) -> bool:
    """Read only to multiply, after reshapes (a second float input that weighs a result)."""
    nodes = readers.get(name, [])
    if not nodes or not depth:
        return False
    for node in nodes:
        if node.op_type in ("Reshape", "Unsqueeze"):
            if not _only_scales(node.outputs[0], readers, depth - 1):
                return False
        elif node.op_type != "Mul":
            return False
    return True


def _only_concatenated(graph: Graph, name: str, readers: list) -> bool:
    dtype = graph.dtypes.get(name)
    return (
        bool(readers)
        and dtype is not None
        and dtype.kind == "f"
        and all(node.op_type == "Concat" for node in readers)
    )


def cropped_input(graph: Graph, name: str) -> str:
    """``past_value_0`` for a cache cropped from that network input (a Slice of it), whose
    name it takes; "" for anything else."""
    producer = graph.producers.get(name)
    if producer is None or producer.op_type != "Slice" or producer.input[0] not in graph.inputs:
        return ""
    return producer.input[0]


def _is_cache(graph: Graph, name: str, readers: list) -> bool:
    """A key or value cache: a float (batch, heads, sequence, head) tensor only ever extended
    along the sequence (``Concat`` on axis 2; ShuffleNet's channel concat is no cache)."""
    dtype = graph.dtypes.get(name)
    return (
        dtype is not None
        and dtype.kind == "f"
        and bool(readers)
        and all(node.op_type == "Concat" and node.attrs.get("axis") in (2, -2) for node in readers)
        and len(graph.symbolic_shapes.get(name, ()) or ()) == 4
    )


def _rotary_role(graph: Graph, name: str, readers: list, readers_of: dict[str, list]) -> str:
    """``cos`` or ``sin`` of rotary position embeddings: multiplied with the query and key
    (``cos``) or with their rotated halves, a ``Concat`` (``sin``); or read by lifted
    ``ApplyRotary`` nodes as their second (``cos``) or third (``sin``) input, also through
    the unsqueeze that gives the table its head axis (Phi-3)."""
    if readers and all(node.op_type == "Unsqueeze" for node in readers):
        through = {node.outputs[0] for node in readers if node.outputs}
        roles = {
            _rotary_role(graph, value, readers_of.get(value, []), readers_of) for value in through
        }
        if len(roles) == 1 and "" not in roles:
            return roles.pop()
    if readers and all(node.op_type == "ApplyRotary" for node in readers):
        positions = {node.inputs.index(name) for node in readers if name in node.inputs}
        return {1: "cos", 2: "sin"}.get(positions.pop(), "") if len(positions) == 1 else ""
    if readers and all(node.op_type == "ApplyRotaryPair" for node in readers):
        positions = {node.inputs.index(name) for node in readers if name in node.inputs}
        return {2: "cos", 3: "sin"}.get(positions.pop(), "") if len(positions) == 1 else ""
    if len(readers) < 2 or not all(node.op_type == "Mul" for node in readers):
        return ""
    rotated = []
    for node in readers:
        other = node.inputs[1] if node.inputs[0] == name else node.inputs[0]
        producer = graph.producers.get(other)
        rotated.append(producer is not None and producer.op_type == "Concat")
    if all(rotated):
        return "sin"
    return "cos" if not any(rotated) else ""
