"""Pass: turn the query and key to heads-first before their rotary embedding, not after.

GPT-J and CodeGen turn the query and the key by their rotary tables while the heads are still
the third axis (``[batch, seq, heads, dim]``), then swap them to the second
(``q.permute(0, 2, 1, 3)``): two statements after the rotary call. The rotary embedding works
on the last axis alone and broadcasts its tables over the others, so the swap commutes with it
when the tables are swapped too. Swapping the tables once where they are made (where every
rotary pair reading them is turned) and the query and key before the call, the head splits
read as they do elsewhere, ``q = ops.reshape(query, shape).swapaxes(1, 2)``, and the
attention keeps two lines fewer. The numbers do not change: the same operations on the same
values, in another order of axes.
"""

from __future__ import annotations

from collections import defaultdict

import onnx
from onnx import helper

from ..graph import Graph
from ..graph.graph import claim_name, declare_value
from ..graph.internal_domain import DOMAIN
from ..graph.node import node_attribute
from ..graph.subgraphs import subgraph_references
from .context import PassContext

_SWAP = [0, 2, 1, 3]  # heads from the third axis to the second, and back


def run(graph: Graph, context: PassContext) -> bool:
    """Rewrite every rotary pair whose two results are only swapped heads-first."""
    pairs = _turned_pairs(graph)
    if not pairs:
        return False
    _rewrite(graph, pairs)
    graph.edited()
    context.say(f"Rotary embeddings turned heads-first: {len(pairs)}")
    return True


def _heads_to_second(node: onnx.NodeProto) -> bool:
    """A transpose of a rank-4 value bringing the heads (third axis) to the second: the swap, or
    the key's ``[0, 2, 3, 1]`` (swap, then its last two axes for the score product)."""
    perm = node_attribute(node, "perm")
    return perm is not None and sorted(perm) == [0, 1, 2, 3] and perm[:2] == [0, 2]


def _rest(node: onnx.NodeProto) -> list[int]:
    """The permutation left to apply after the swap: ``[0, 1, 3, 2]`` for ``[0, 2, 3, 1]``."""
    return [_SWAP[axis] for axis in node_attribute(node, "perm") or _SWAP]


def _turned_pairs(graph: Graph) -> list[tuple[onnx.NodeProto, onnx.NodeProto, onnx.NodeProto]]:
    """(pair, the query's swap, the key's swap) for each pair whose results only feed a swap
    of the heads, whose operands all have rank 4, and whose tables only rotary pairs of this
    kind read."""
    readers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
    for node in graph.model.graph.node:
        for name in node.input:
            readers[name].append(node)
    pinned = set(graph.outputs) | subgraph_references(graph.model.graph)
    found = {}
    for node in graph.model.graph.node:
        if node.op_type != "ApplyRotaryPair" or node.domain != DOMAIN or len(node.input) < 4:
            continue
        swaps = [readers.get(name, []) for name in node.output[:2]]
        if any(
            len(s) != 1 or s[0].op_type != "Transpose" or not _heads_to_second(s[0]) for s in swaps
        ):
            continue
        if any(name in pinned for name in node.output[:2]):
            continue
        if any(len(graph.symbolic_shapes.get(name) or ()) != 4 for name in node.input[:4]):
            continue
        found[id(node)] = (node, swaps[0][0], swaps[1][0])
    changed = True
    while changed:  # a table another reader needs as it is keeps every pair reading it apart
        changed = False
        for key, (pair, _, _) in list(found.items()):
            tables = pair.input[2:4]
            if any(id(r) not in found for t in tables for r in readers.get(t, [])) or any(
                t in pinned for t in tables
            ):
                del found[key]
                changed = True
    return list(found.values())


def _rewrite(graph: Graph, pairs: list) -> None:
    """Swap each pair's operands where they are made (the tables once for all pairs); the pair
    writes what the swaps after it wrote (the key's transpose for the scores stays after)."""
    model = graph.model.graph
    taken = graph.value_names()
    swapped: dict[str, str] = {}  # an operand of a pair -> its heads-first copy
    made_after: dict[str, list[onnx.NodeProto]] = defaultdict(list)  # producer output -> swaps
    first: list[onnx.NodeProto] = []  # swaps of tables no node makes (inputs, constants)
    producers = {out: node for node in model.node for out in node.output}
    for pair, _, _ in pairs:  # each swapped right where it is made: q, k, v read in order
        for operand in pair.input[:4]:
            if operand in swapped:
                continue
            swapped[operand] = claim_name(taken, f"{operand}/heads_first")
            source = producers.get(operand)
            swap = _swap(graph, operand, swapped[operand], source or pair)
            (made_after[operand] if source is not None else first).append(swap)
    dropped = {id(node) for _, q_swap, k_swap in pairs for node in (q_swap, k_swap)}
    swaps_of = {id(pair): (q_swap, k_swap) for pair, q_swap, k_swap in pairs}
    nodes = list(first)
    for node in model.node:
        if id(node) in dropped:
            continue
        if id(node) not in swaps_of:
            nodes.append(node)
            for out in node.output:
                nodes.extend(made_after.get(out, []))
            continue
        q_swap, k_swap = swaps_of[id(node)]
        turned = onnx.NodeProto()
        turned.CopyFrom(node)
        turned.input[:4] = [swapped[name] for name in node.input[:4]]
        after = []
        for index, swap in enumerate((q_swap, k_swap)):
            rest = _rest(swap)
            if rest == [0, 1, 2, 3]:
                turned.output[index] = swap.output[0]
                continue
            # the key's transpose for the scores stays, after the turn: [0, 1, 3, 2]
            turned.output[index] = node.output[index]
            rest_node = onnx.NodeProto()
            rest_node.CopyFrom(swap)
            del rest_node.attribute[:]
            rest_node.attribute.append(helper.make_attribute("perm", rest))
            after.append(rest_node)
            _record_swapped_shape(graph, node.output[index], node.input[index])  # turned
        nodes.append(turned)
        nodes.extend(after)
    del model.node[:]
    model.node.extend(nodes)


def _record_swapped_shape(graph: Graph, name: str, operand: str) -> None:
    """Record ``name`` with the shape of ``operand`` swapped heads-first, in its dtype."""
    dims = [graph.symbolic_shapes[operand][axis] for axis in _SWAP]
    dtype = graph.dtypes.get(operand)
    elem = helper.np_dtype_to_tensor_dtype(dtype) if dtype is not None else onnx.TensorProto.FLOAT
    declare_value(graph.model.graph, name, elem, dims)


def _swap(graph: Graph, source: str, target: str, scope: onnx.NodeProto) -> onnx.NodeProto:
    """``target = source.swapaxes(1, 2)``, filed under ``scope``'s module, with its shape."""
    node = helper.make_node(
        "Transpose", [source], [target], name=f"{scope.name}/heads_first", perm=_SWAP
    )
    for entry in scope.metadata_props:
        node.metadata_props.add().CopyFrom(entry)
    _record_swapped_shape(graph, target, source)
    return node
