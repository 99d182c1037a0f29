"""Pass: fuse scaled dot-product attention into one node, as people write it.

Exporters spell ``softmax(q @ kᵀ * scale + mask) @ v`` out in primitive operators, each in its
own way. The TorchScript exporter (opset 14/17) transposes the key before its heads
(``Transpose(perm=[0, 2, 3, 1])``, ``[1, 2, 3, 0]`` sequence-first) and scales it by ``Div``, or
splits ``sqrt(scale)`` over q and k; the dynamo exporter (opset 18) transposes the key through
Reshape/Transpose/Reshape and adds an ``IsNaN``/``Where`` guard that turns fully masked rows
into zeros. Grouped-query models repeat key/value heads (``repeat_kv``:
Unsqueeze/Expand/Reshape, the Reshape sometimes merged into the key's transposition) before the
product. Rotary embeddings, a key/value cache (``Concat(past_k, k)``) and the masks (padding,
causal, sliding window, biases added to the scores such as ALiBi) are computed before the
product and stay what they are: inputs of the fused node. BLOOM's ``baddbmm`` form folds the
heads into the batch for the products, (B*H, S, T) scores reshaped to (B, H, S, T) between the
ALiBi bias and the mask: its q, k and v are taken before the fold and the ALiBi bias is reshaped
to (B, H, 1, T).

This pass replaces the chain from the score product to the context product by one node
``ScaledDotProductAttention(q, k, v[, bias...])`` of the internal domain, with attributes
``scale``, ``kv_groups`` (query heads per key/value head) and ``masked_rows`` (the exporter's
NaN guard over a mask that may hold -inf: fully masked rows attend nothing), and ``dropout``
(the ratio of the Dropout a training-mode export applies to the probabilities) when there is
one. The mapper in ``mindconverter/mappers/sdpa.py`` writes it as mindnlp does. A chain is fused
only when every intermediate value feeds the chain alone, except the probabilities: read
elsewhere too (the weights nn.MultiheadAttention returns), they are the fused node's second
output. Anything else is left as it was.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..graph import Graph
from ..graph.graph import declare_permuted
from ..graph.internal_domain import DOMAIN, declare_internal_domain
from ..graph.node import node_attribute, node_axes, topological_order
from ..graph.pruning import remove_dead_nodes, remove_unused_initializers
from ..graph.size_readers import size_readers
from ..graph.subgraphs import subgraph_references
from .context import PassContext

FUSED_OP = "ScaledDotProductAttention"
_MAX_BIASES = 4  # Adds between the scaled scores and the softmax (mask, ALiBi, window...)


@dataclass
class _Match:
    """One attention found: its inputs, attributes, the nodes it replaces and the new nodes it
    needs (a key transposed to heads-first, a sum of biases)."""

    q: str = ""
    k: str = ""
    v: str = ""
    biases: list[str] = field(default_factory=list)
    scale: float = 1.0
    kv_groups: int = 1
    nan_guard: bool = False
    removed: list[onnx.NodeProto] = field(default_factory=list)
    # new nodes placed where a removed node was (the key's heads-first transpose)
    moved: dict[int, onnx.NodeProto] = field(default_factory=dict)
    # heads folded into the batch for the products (BLOOM): the Reshape of the scores to
    # (B, H, S, T), the probabilities' Reshape back to (B*H, S, T) when the context product is
    # folded too, biases added before the unfold, and the value the fused node writes
    unfold: onnx.NodeProto | None = None
    probs_fold: onnx.NodeProto | None = None
    folded_biases: list[str] = field(default_factory=list)
    output: str = ""
    before: list[onnx.NodeProto] = field(default_factory=list)  # new nodes before the fused one
    resized: list[tuple[onnx.NodeProto, str]] = field(default_factory=list)  # Shape: new input
    clamped: bool = False  # the scores went through max(., finfo.min): no bias may be -inf
    softcap: float = 0.0  # Gemma-2's cap * tanh(scores / cap) before the biases (0: none)
    # the probabilities read beside the context product (nn.MultiheadAttention returning its
    # weights): a second output of the fused node
    probs: str = ""
    # the dropout a training-mode export applies to the probabilities (None: none)
    dropout: float | None = None


# operators that only compute sizes from sizes (what a Shape node's result flows through)
_SIZE_OPS = {
    "Shape", "Gather", "Slice", "Concat", "Squeeze", "Unsqueeze", "Cast", "Add", "Sub", "Mul",
    "Div", "Reshape",
}  # fmt: skip


class _Finder:
    """Producers, readers and constants of the graph being fused."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.producer = dict(graph.producers)
        self.readers = {name: list(nodes) for name, nodes in graph.consumer_nodes.items()}
        self.pinned = set(graph.outputs) | subgraph_references(graph.model.graph)
        self.taken = graph.value_names()
        self.dead: set[int] = set()

    def made_by(self, name: str, *op_types: str) -> onnx.NodeProto | None:
        node = self.producer.get(name)
        if node is None or node.op_type not in op_types or node.domain not in ("", "ai.onnx"):
            return None
        if id(node) in self.dead:
            return None
        return node

    def private(self, name: str, reader: onnx.NodeProto) -> bool:
        """Whether ``name`` feeds ``reader`` and nothing else (no graph output either)."""
        if name in self.pinned:
            return False
        readers = {id(node) for node in self.readers.get(name, [])}
        return readers == {id(reader)}

    def private_but_sized(self, name: str, reader: onnx.NodeProto, dying: set[int]) -> bool:
        """Whether ``name`` feeds ``reader`` and otherwise only Shape nodes whose sizes end up
        in nodes the match removes (``dying``, by id; dynamo computes the key transpose's
        targets from the key's shape): once they go, nothing reads ``name``."""
        return (
            size_readers(
                name, reader, lambda n: self.readers.get(n, []), self.pinned, dying, _SIZE_OPS
            )
            is not None
        )

    def scalar(self, name: str) -> float | None:
        value = self.graph.constant(name)
        if value is None or value.size != 1 or value.dtype.kind != "f":
            return None
        return float(value.reshape(-1)[0])

    def rank(self, name: str) -> int | None:
        dims = self.graph.dims(name)
        return None if dims is None else len(dims)

    def static_dim(self, name: str, axis: int) -> int | None:
        dims = self.graph.dims(name)
        if dims is None or not -len(dims) <= axis < len(dims):
            return None
        dim = dims[axis]
        return int(dim) if isinstance(dim, (int, np.integer)) else None

    def new_name(self, wanted: str) -> str:
        name, n = wanted, 1
        while name in self.taken:
            name, n = f"{wanted}_{n}", n + 1
        self.taken.add(name)
        return name


def _scale_factor(finder: _Finder, node: onnx.NodeProto, value: str) -> tuple[str, float] | None:
    """For ``Mul(value, c)``/``Mul(c, value)``/``Div(value, c)`` by a scalar: (the other operand,
    the factor); None otherwise."""
    if node.op_type == "Mul":
        for this, other in (node.input[0], node.input[1]), (node.input[1], node.input[0]):
            factor = finder.scalar(other)
            if factor is not None and this != other:
                return this, factor
        return None
    if node.op_type == "Div":
        divisor = finder.scalar(node.input[1])
        if divisor:
            return node.input[0], 1.0 / divisor
    return None


def _peel_scales(
    finder: _Finder, name: str, reader: onnx.NodeProto, match: _Match
) -> tuple[str, onnx.NodeProto]:
    """``name`` without the scalar Mul/Div nodes in front of ``reader`` (their factors go into
    the match's scale), and the node that reads it then; a scaling node read by others stays."""
    while finder.private(name, reader):
        node = finder.made_by(name, "Mul", "Div")
        found = _scale_factor(finder, node, name) if node is not None else None
        if found is None:
            break
        name, factor = found
        match.scale *= factor
        match.removed.append(node)
        reader = node
    return name, reader


def _swaps_last_two(perm: list[int]) -> bool:
    rank = len(perm)
    return rank >= 2 and list(perm) == list(range(rank - 2)) + [rank - 1, rank - 2]


def _untransposed_key(finder: _Finder, name: str, reader: onnx.NodeProto, match: _Match):
    """Find the key behind ``kᵀ`` (``name``, read by the score product): sets ``match.k`` and
    returns the node that reads the key (None when ``name`` is no transposed key)."""
    name, reader = _peel_scales(finder, name, reader, match)
    if not finder.private(name, reader):
        return None
    node = finder.made_by(name, "Transpose", "Reshape")
    if node is None:
        return None
    match.removed.append(node)
    if node.op_type == "Reshape":
        found = _reshaped_transpose(finder, node)
        if found is None:
            return None
        match.k, key_reader = found
        return key_reader
    perm = list(node_attribute(node, "perm", []))
    if _swaps_last_two(perm):
        match.k, key_reader = _peel_scales(finder, node.input[0], node, match)
        return key_reader
    if len(perm) < 3:
        return None
    # (B, T, H, D) -> (B, H, D, T) (or sequence-first (T, B, H, D) -> (B, H, D, T)): the heads
    # move first here, the key is transposed later
    to_heads = [*perm[:-2], perm[-1], perm[-2]]
    match.k = finder.new_name(node.input[0] + "_heads")
    heads = helper.make_node("Transpose", [node.input[0]], [match.k], name=node.name, perm=to_heads)
    for entry in node.metadata_props:
        heads.metadata_props.add().CopyFrom(entry)
    declare_permuted(finder.graph.model.graph, node.input[0], match.k, to_heads)
    match.moved[id(node)] = heads
    return heads


def _reshaped_transpose(finder: _Finder, outer: onnx.NodeProto):
    """The dynamo spelling of ``k.transpose(-2, -1)`` on a 4-D key: Reshape to (-1, T, D),
    Transpose(0, 2, 1), Reshape back to (B, H, D, T). Returns (the key, the node reading it)."""
    middle = finder.made_by(outer.input[0], "Transpose")
    if middle is None or list(node_attribute(middle, "perm", [])) != [0, 2, 1]:
        return None
    if not finder.private(outer.input[0], outer):
        return None
    inner = finder.made_by(middle.input[0], "Reshape")
    if inner is None or not finder.private(middle.input[0], middle):
        return None
    key = inner.input[0]  # (B, H, T, D), or (B, KV, G, T, D) when repeat_kv's Reshape merged in
    if finder.rank(key) not in (4, 5) or finder.rank(outer.output[0]) != 4:
        return None
    head_dim = finder.static_dim(key, -1)
    if head_dim is None or finder.static_dim(inner.output[0], -1) != head_dim:
        return None
    if finder.static_dim(outer.output[0], -2) != head_dim:
        return None
    finder.dead.update((id(middle), id(inner)))
    return key, inner


def _repeated_heads(finder: _Finder, name: str, reader: onnx.NodeProto, dying: set[int]):
    """``repeat_kv``: Reshape(Expand(Unsqueeze(x, 2), ...), ...) -> (x, groups, nodes) or None;
    also the bare Expand (B, KV, G, T, D) when the exporter merged the Reshape into the next.
    Besides ``reader``, only sizes for nodes in ``dying`` may read the repeated value."""
    if finder.rank(name) == 5:
        found = _expanded_heads(finder, name, reader)
        return None if found is None or not found[1] else found
    reshape = finder.made_by(name, "Reshape")
    if reshape is None or not finder.private_but_sized(name, reader, dying | {id(reader)}):
        return None
    found = _expanded_heads(finder, reshape.input[0], reshape)
    if found is None:
        return None
    source, _, nodes = found
    kv_heads, heads = finder.static_dim(source, 1), finder.static_dim(name, 1)
    if not kv_heads or not heads or heads % kv_heads:
        return None
    if finder.static_dim(source, -1) != finder.static_dim(name, -1):
        return None
    return source, heads // kv_heads, nodes + [reshape]  # the rest goes when nothing reads it


def _expanded_heads(finder: _Finder, name: str, reader: onnx.NodeProto):
    """Expand(Unsqueeze(x, 2)) to (B, KV, G, T, D) -> (x, G when known, nodes) or None."""
    expand = finder.made_by(name, "Expand")
    if expand is None or not finder.private(name, reader):
        return None
    unsqueeze = finder.made_by(expand.input[0], "Unsqueeze")  # also read by Shape, often
    if unsqueeze is None:
        return None
    axes = node_axes(unsqueeze, finder.graph.constant)
    source = unsqueeze.input[0]
    if axes is None or list(axes) != [2] or finder.rank(source) != 4:
        return None
    return source, finder.static_dim(name, 2), [expand]


def _context_product(finder: _Finder, softmax: onnx.NodeProto, match: _Match):
    """The MatMul of the probabilities with v after the softmax (through the NaN guard)."""
    probs = softmax.output[0]
    round_trip = _reshaped_back(finder, probs)
    if round_trip:  # XGLM unfolds its probabilities and folds them straight back
        match.removed += round_trip
        probs = round_trip[-1].output[0]
    readers = finder.readers.get(probs, [])
    products = [n for n in readers if n.op_type == "MatMul" and n.input[0] == probs]
    guarded = any(n.op_type in ("IsNaN", "Where") for n in readers)
    if len(products) == 1 and (len(readers) > 1 or probs in finder.pinned) and not guarded:
        if round_trip:
            return None
        match.probs = probs  # the weights are read too: the fused node gives them
        return products[0]
    if probs in finder.pinned:
        return None
    if len(readers) == 1 and readers[0].op_type == "MatMul" and readers[0].input[0] == probs:
        return readers[0]
    if len(readers) == 1 and readers[0].op_type == "Dropout" and not round_trip:
        return _dropped(finder, readers[0], match)
    if len(readers) == 1 and readers[0].op_type == "Reshape":
        return _folded_context(finder, readers[0], match)
    isnan = next((n for n in readers if n.op_type == "IsNaN"), None)
    where = next((n for n in readers if n.op_type == "Where"), None)
    if len(readers) != 2 or isnan is None or where is None:
        return None
    if list(where.input) != [isnan.output[0], where.input[1], probs]:
        return None
    if finder.scalar(where.input[1]) != 0.0 or not finder.private(isnan.output[0], where):
        return None
    if where.output[0] in finder.pinned:
        return None
    after = finder.readers.get(where.output[0], [])
    if len(after) == 1 and after[0].op_type == "Dropout":
        product = _dropped(finder, after[0], match)
    elif len(after) == 1 and after[0].op_type == "MatMul" and after[0].input[0] == where.output[0]:
        product = after[0]
    else:
        return None
    if product is None:
        return None
    match.nan_guard = True
    match.removed += [isnan, where]
    return product


def _dropped(finder: _Finder, dropout: onnx.NodeProto, match: _Match):
    """The context product after a Dropout of the probabilities (a training-mode export):
    its ratio is the fused node's ``dropout``; None when the ratio or the training switch is
    computed, or the random mask is read."""
    if len(dropout.output) > 1 and dropout.output[1] and finder.readers.get(dropout.output[1]):
        return None
    if len(dropout.input) > 1 and dropout.input[1]:
        ratio = finder.scalar(dropout.input[1])
    else:
        ratio = float(node_attribute(dropout, "ratio", 0.5))  # opset < 12, or the default
    if len(dropout.input) > 2 and dropout.input[2]:
        if finder.graph.constant(dropout.input[2]) is None:
            return None  # training switched at run time
    if ratio is None or not 0.0 <= ratio < 1.0 or dropout.output[0] in finder.pinned:
        return None
    readers = finder.readers.get(dropout.output[0], [])
    if len(readers) != 1 or readers[0].op_type != "MatMul":
        return None
    if readers[0].input[0] != dropout.output[0]:
        return None
    match.dropout = ratio
    match.removed.append(dropout)
    return readers[0]


def _reshaped_back(finder: _Finder, name: str) -> list[onnx.NodeProto]:
    """Two Reshapes, each the only reader of what it reads, that give ``name`` its own sizes
    back (an unfold of the heads and the fold undoing it); empty when there are none."""
    chain = []
    for _ in range(2):
        readers = finder.readers.get(name, [])
        if name in finder.pinned or len(readers) != 1 or readers[0].op_type != "Reshape":
            return []
        if readers[0].input[0] != name:
            return []
        chain.append(readers[0])
        name = readers[0].output[0]
    same = finder.graph.dims(name) == finder.graph.dims(chain[0].input[0])
    return chain if same and finder.graph.dims(name) is not None else []


def _folded_context(finder: _Finder, fold: onnx.NodeProto, match: _Match):
    """The context product of probabilities folded back to (B*H, S, T) (BLOOM's ``bmm``)."""
    folded = fold.output[0]
    readers = finder.readers.get(folded, [])
    if folded in finder.pinned or finder.rank(folded) != 3 or finder.rank(fold.input[0]) != 4:
        return None
    if len(readers) != 1 or readers[0].op_type != "MatMul" or readers[0].input[0] != folded:
        return None
    match.probs_fold = fold
    return readers[0]


def _heads_reshape(finder: _Finder, name: str, folds: bool) -> onnx.NodeProto | None:
    """The Reshape making ``name``: folding (B, H, S, D) into (B*H, S, D) (``folds``), or
    unfolding (B*H, S, T) into (B, H, S, T); None when it is neither."""
    node = finder.made_by(name, "Reshape")
    if node is None:
        return None
    folded, heads = (name, node.input[0]) if folds else (node.input[0], name)
    if finder.rank(folded) != 3 or finder.rank(heads) != 4:
        return None
    inner, outer = finder.graph.dims(folded), finder.graph.dims(heads)
    return node if inner is not None and outer is not None and inner[1:] == outer[2:] else None


def _unfolds_heads(finder: _Finder, name: str) -> onnx.NodeProto | None:
    """The Reshape making ``name`` (B, H, S, T) out of (B*H, S, T) scores."""
    return _heads_reshape(finder, name, folds=False)


def _score_product(finder: _Finder, name: str, reader: onnx.NodeProto, match: _Match):
    """Walk back from the softmax's input over bias Adds (and the unfold of heads folded into
    the batch), then scalar scales, to the score MatMul; biases go into the match (outermost
    first)."""
    for _ in range(_MAX_BIASES + 3):
        if not finder.private(name, reader):
            return None
        fold = _scores_fold(finder, name, match)
        if fold is not None:  # XGLM folds the masked scores back before its softmax
            match.probs_fold = fold
            name, reader = fold.input[0], fold
            continue
        unfold = _unfolds_heads(finder, name) if match.unfold is None else None
        if unfold is not None:
            match.unfold = unfold
            match.removed.append(unfold)
            name, reader = unfold.input[0], unfold
            continue
        masked = _masked_by_where(finder, name, match) if match.unfold is None else None
        if masked is not None:
            name, reader = masked
            continue
        clamp = _floor_clamp(finder, name)
        if clamp is not None:  # XGLM's max(scores + mask, finfo.min): biases checked below
            match.clamped = True
            match.removed.append(clamp)
            name, reader = next(n for n in clamp.input if finder.scalar(n) is None), clamp
            continue
        node = finder.made_by(name, "Add")
        if node is None:
            break
        side = _score_side(finder, node)
        if side is None:
            return None
        bias = node.input[1 - side]
        (match.folded_biases if match.unfold is not None else match.biases).append(bias)
        match.removed.append(node)
        name, reader = node.input[side], node
    capped = _soft_capped(finder, name, reader)
    if capped is not None:
        name, reader, match.softcap = capped[0], capped[1], capped[2]
        match.removed += capped[3]
    name, reader = _peel_scales(finder, name, reader, match)
    if not finder.private(name, reader):
        return None
    return finder.made_by(name, "MatMul")


def _soft_capped(finder: _Finder, name: str, reader: onnx.NodeProto):
    """Gemma-2's logit soft-capping ``tanh(scores / cap) * cap`` ending in ``name``: (the
    scores, the node reading them, cap, the three nodes), or None."""
    outer = finder.made_by(name, "Mul") if finder.private(name, reader) else None
    found = _scale_factor(finder, outer, name) if outer is not None else None
    if found is None:
        return None
    tanh = finder.made_by(found[0], "Tanh")
    if (
        tanh is None
        or not finder.private(found[0], outer)
        or not finder.private(tanh.input[0], tanh)
    ):
        return None
    inner = finder.made_by(tanh.input[0], "Mul", "Div")
    divided = _scale_factor(finder, inner, tanh.input[0]) if inner is not None else None
    cap = found[1]
    if divided is None or cap <= 0 or not math.isclose(divided[1] * cap, 1.0, rel_tol=1e-6):
        return None
    return divided[0], inner, cap, [outer, tanh, inner]


def _scores_fold(finder: _Finder, name: str, match: _Match) -> onnx.NodeProto | None:
    """The Reshape folding unfolded (B, H, S, T) scores back into (B*H, S, T) right before the
    softmax (over the last axis, which the fold keeps: the same as a softmax before the fold)."""
    if match.unfold is not None or match.probs_fold is not None:
        return None
    return _heads_reshape(finder, name, folds=True)


def _floor_clamp(finder: _Finder, name: str) -> onnx.NodeProto | None:
    """``max(x, c)`` with ``c`` a scalar at or below -1e30: no change to finite scores."""
    node = finder.made_by(name, "Max")
    if node is None or len(node.input) != 2:
        return None
    fills = [finder.scalar(n) for n in node.input]
    if sum(f is not None for f in fills) != 1:
        return None
    fill = next(f for f in fills if f is not None)
    return node if fill <= -1e30 else None


def _masked_by_where(finder: _Finder, name: str, match: _Match):
    """GPT-Neo's ``where(causal_mask, scores, finfo.min)``: the same as adding the bias
    ``where(causal_mask, 0, finfo.min)`` (float32 scores are far below the fill's size, so
    ``scores + fill`` is the fill). Adds that bias to the match and returns (the scores, the
    Where), or None."""
    where = finder.made_by(name, "Where")
    kept = _kept_side(finder, where) if where is not None else None
    if where is None or kept is None:
        return None
    fill = finder.scalar(where.input[3 - kept])
    dtype = finder.graph.dtypes.get(where.input[kept])
    mask_dims = finder.graph.symbolic_shapes.get(where.input[0])
    if fill is None or not fill <= -1e30 or dtype != np.float32 or mask_dims is None:
        return None
    graph = finder.graph.model.graph
    zero, bias = finder.new_name(f"{name}_kept"), finder.new_name(f"{name}_mask_bias")
    graph.initializer.append(numpy_helper.from_array(np.array(0.0, np.float32), zero))
    # 0 where the scores are kept, the fill where they are not: MPT's masked_fill(mask, fill)
    # keeps them where the mask is false
    branches = [zero, where.input[2]] if kept == 1 else [where.input[1], zero]
    match.before.append(helper.make_node("Where", [where.input[0], *branches], [bias]))
    graph.value_info.append(
        helper.make_tensor_value_info(bias, onnx.TensorProto.FLOAT, list(mask_dims))
    )
    match.biases.append(bias)
    match.removed.append(where)
    return where.input[kept], where


def _kept_side(finder: _Finder, where: onnx.NodeProto) -> int | None:
    """Which branch of a masking Where holds the scores (1: kept where the mask is true, GPT-Neo;
    2: kept where it is false, ``masked_fill``); the other is a fill value."""
    for side in (1, 2):
        if finder.scalar(where.input[3 - side]) is not None and _from_scores(
            finder, where.input[side]
        ):
            return side
    return None


def _score_side(finder: _Finder, add: onnx.NodeProto) -> int | None:
    """Which input of a bias Add carries the scores: the one made (through scales and Adds)
    by a MatMul."""
    return next((side for side in (0, 1) if _from_scores(finder, add.input[side])), None)


def _from_scores(finder: _Finder, name: str) -> bool:
    """Whether ``name`` is made by a MatMul through scales, Adds, Reshapes, masking Wheres and a
    soft cap's Tanh."""
    for _ in range(_MAX_BIASES + 4):
        node = finder.made_by(name, "MatMul", "Mul", "Div", "Add", "Reshape", "Where", "Tanh")
        if node is None:
            return False
        if node.op_type == "MatMul":
            return True
        if node.op_type == "Tanh":  # soft-capped scores (Gemma-2)
            name = node.input[0]
            continue
        if node.op_type == "Reshape":
            name = node.input[0]
            continue
        if node.op_type == "Where":  # a Where masks the scores it keeps, beside a fill value
            name = node.input[2] if finder.scalar(node.input[1]) is not None else node.input[1]
            continue
        if node.op_type == "Add":
            name = node.input[0] if _score_side(finder, node) == 0 else node.input[1]
            continue
        found = _scale_factor(finder, node, name)
        if found is None:
            return False
        name = found[0]
    return False


def _match_attention(finder: _Finder, softmax: onnx.NodeProto) -> _Match | None:
    """The attention around ``softmax``, or None when the chain is not one."""
    axis = int(node_attribute(softmax, "axis", -1 if finder.graph.opset >= 13 else 1))
    rank = finder.rank(softmax.input[0])
    if axis != -1 and (rank is None or axis != rank - 1):
        return None
    if finder.graph.dtypes.get(softmax.input[0], np.dtype(np.float32)).kind != "f":
        return None
    match = _Match()
    context = _context_product(finder, softmax, match)
    if context is None:
        return None
    scores = _score_product(finder, softmax.input[0], softmax, match)
    if scores is None or scores is context:
        return None
    if match.probs and (match.unfold is not None or match.probs_fold is not None):
        return None
    if match.unfold is not None:
        return _folded_match(finder, match, [softmax, scores, context])
    if match.probs_fold is not None:
        return None
    match.q, _ = _peel_scales(finder, scores.input[0], scores, match)
    key_reader = _untransposed_key(finder, scores.input[1], scores, match)
    if key_reader is None:
        return None
    match.v = context.input[1]
    _share_heads(finder, match, key_reader, context)
    match.removed += [softmax, scores, context]
    return match if _ranks_agree(finder, match) else None


def _unfolded(
    finder: _Finder, name: str, reader: onnx.NodeProto, dying: set[int]
) -> onnx.NodeProto | None:
    """The Reshape folding (B, H, S, D) into ``name``, (B*H, S, D), read by ``reader`` alone
    (besides sizes for nodes in ``dying``: XGLM sizes its scores' fold from the folded query)."""
    if not finder.private_but_sized(name, reader, dying):
        return None
    return _heads_reshape(finder, name, folds=True)


def _folded_match(finder: _Finder, match: _Match, chain: list[onnx.NodeProto]) -> _Match | None:
    """BLOOM's attention, heads folded into the batch for both products: q, k and v taken
    before their folds, the biases added to the folded scores unfolded, the fused node
    writing what the context's unfold wrote."""
    _, scores, context = chain
    dying = {id(node) for node in match.removed + chain}
    if match.probs_fold is not None:
        dying.add(id(match.probs_fold))
    q, q_reader = _peel_scales(finder, scores.input[0], scores, match)
    q_fold = _unfolded(finder, q, q_reader, dying)
    key_t = finder.made_by(scores.input[1], "Transpose")
    if q_fold is None or key_t is None or list(node_attribute(key_t, "perm", [])) != [0, 2, 1]:
        return None
    k_fold = _unfolded(finder, key_t.input[0], key_t, dying)
    if k_fold is None or not finder.private(scores.input[1], scores):
        return None
    match.q, match.k, match.v = q_fold.input[0], k_fold.input[0], context.input[1]
    match.removed += [q_fold, key_t, k_fold]
    if match.probs_fold is not None:
        v_fold = _unfolded(finder, context.input[1], context, dying)
        readers = finder.readers.get(context.output[0], [])
        unfolds = [node for node in readers if node.op_type == "Reshape"]
        if v_fold is None or len(unfolds) != 1 or context.output[0] in finder.pinned:
            return None
        if finder.rank(unfolds[0].output[0]) != 4:
            return None
        # the folded context's sizes (read to merge the heads back) are the folded query's
        sizing = [node for node in readers if node is not unfolds[0]]
        if sizing:
            if any(node.op_type != "Shape" for node in sizing):
                return None
            if finder.graph.dims(q) != finder.graph.dims(context.output[0]):
                return None
            match.removed.remove(q_fold)
            match.resized = [(node, q) for node in sizing]
        match.v, match.output = v_fold.input[0], unfolds[0].output[0]
        match.removed += [match.probs_fold, v_fold, unfolds[0]]
    for bias in match.folded_biases:
        unfolded = _unfolded_bias(finder, match, bias, scores.output[0])
        if unfolded is None:
            return None
        match.biases.append(unfolded)
    match.removed += chain
    return match if {finder.rank(n) for n in (match.q, match.k, match.v)} == {4} else None


def _unfolded_bias(finder: _Finder, match: _Match, bias: str, scores: str) -> str | None:
    """``bias`` (B*H, 1, T), added to the folded scores, as (B, H, 1, T) by new nodes:
    ``reshape(bias, (batch, heads, 1, -1))``, the batch read from q where it is dynamic; None
    when it is not one row per folded (batch, head) or the sizes are not known well enough."""
    symbolic = finder.graph.symbolic_shapes
    dims, q_dims, score_dims = symbolic.get(bias), symbolic.get(match.q), symbolic.get(scores)
    dtype = finder.graph.dtypes.get(bias)
    if dims is None or q_dims is None or score_dims is None or dtype is None:
        return None
    heads = q_dims[1]
    if len(dims) != 3 or dims[0] != score_dims[0] or not isinstance(heads, int):
        return None
    rest = [d if isinstance(d, int) else -1 for d in dims[1:]]
    if rest.count(-1) > 1:
        return None  # two sizes to infer
    graph = finder.graph.model.graph
    target, unfolded = finder.new_name(f"{bias}_heads_shape"), finder.new_name(f"{bias}_heads")
    if isinstance(q_dims[0], int):
        graph.initializer.append(
            numpy_helper.from_array(np.array([q_dims[0], heads, *rest], np.int64), target)
        )
    else:  # the batch from q: (batch,) + (heads, 1, -1)
        q_shape, batch = finder.new_name(f"{bias}_q_shape"), finder.new_name(f"{bias}_batch")
        tail, zero, one = (finder.new_name(f"{bias}_{part}") for part in ("tail", "zero", "one"))
        graph.initializer.extend(
            numpy_helper.from_array(np.array(values, np.int64), name)
            for name, values in ((tail, [heads, *rest]), (zero, [0]), (one, [1]))
        )
        match.before += [
            helper.make_node("Shape", [match.q], [q_shape]),
            helper.make_node("Slice", [q_shape, zero, one], [batch]),
            helper.make_node("Concat", [batch, tail], [target], axis=0),
        ]
        int64 = onnx.TensorProto.INT64
        graph.value_info.extend(
            helper.make_tensor_value_info(name, int64, [size])
            for name, size in ((q_shape, 4), (batch, 1), (target, 4))
        )
        symbol = _symbol(finder.graph, str(q_dims[0]))
        if symbol is not None:  # lift_shape_arithmetic writes it (batch_size, 4, 1, -1)
            finder.graph.symbolic_values[target] = (symbol, heads, *rest)
    match.before.append(helper.make_node("Reshape", [bias, target], [unfolded]))
    element = helper.np_dtype_to_tensor_dtype(dtype)
    graph.value_info.append(
        helper.make_tensor_value_info(unfolded, element, [*q_dims[:2], *dims[1:]])
    )
    return unfolded


def _symbol(graph: Graph, name: str):
    """The symbol of dynamic dimension ``name`` in the graph's symbolic values, if any."""
    for value in graph.symbolic_values.values():
        for item in value if isinstance(value, tuple) else (value,):
            for symbol in getattr(item, "free_symbols", ()):
                if str(symbol) == name:
                    return symbol
    return None


def _share_heads(
    finder: _Finder, match: _Match, key_reader: onnx.NodeProto, context: onnx.NodeProto
) -> None:
    """Undo ``repeat_kv`` on both key and value (the fused node repeats them itself); keys and
    values repeated differently keep their repeats."""
    dying = finder.dead | {id(node) for node in match.removed}
    repeated_k = _repeated_heads(finder, match.k, key_reader, dying)
    repeated_v = _repeated_heads(finder, match.v, context, dying)
    if repeated_k is None or repeated_v is None or repeated_k[1] != repeated_v[1]:
        return
    match.k, match.kv_groups, k_nodes = repeated_k
    match.v, _, v_nodes = repeated_v
    match.removed += k_nodes + v_nodes


def _ranks_agree(finder: _Finder, match: _Match) -> bool:
    """q, k and v of one rank: (batch, heads, seq, dim), (batch * heads, seq, dim), or with a
    window axis before the sequence (Hiera's (batch, heads, windows, seq, dim)) when no heads
    are repeated."""
    ranks = {finder.rank(name) for name in (match.q, match.k, match.v)} - {None}
    allowed = {3, 4} if match.kv_groups != 1 else {3, 4, 5}
    return len(ranks) <= 1 and ranks <= allowed


def _may_hold_minus_infinity(finder: _Finder, bias: str) -> bool:
    """Whether a bias can be -inf somewhere (a finite constant or a Where between finite
    constants cannot)."""
    value = finder.graph.constant(bias)
    if value is not None:
        return bool(np.isneginf(value).any()) if value.dtype.kind == "f" else False
    where = finder.made_by(bias, "Where")
    if where is not None:
        branches = [finder.graph.constant(name) for name in where.input[1:]]
        if all(b is not None and b.dtype.kind == "f" for b in branches):
            return any(bool(np.isneginf(b).any()) for b in branches)
    return True


def _fused_nodes(finder: _Finder, match: _Match, anchor: onnx.NodeProto, output: str):
    """The fused node (after the new nodes it reads), named after the softmax."""
    nodes = list(match.before)
    # the biases stay separate inputs, added innermost first as the exporter added them
    biases = list(reversed(match.biases))
    inputs = [match.q, match.k, match.v, *biases]
    masked_rows = match.nan_guard and any(_may_hold_minus_infinity(finder, b) for b in biases)
    fused = helper.make_node(
        FUSED_OP,
        inputs,
        [output, *([match.probs] if match.probs else [])],
        name=anchor.name,
        domain=DOMAIN,
        scale=float(match.scale),
        kv_groups=int(match.kv_groups),
        masked_rows=int(masked_rows),
    )
    if match.softcap:
        fused.attribute.append(helper.make_attribute("softcap", float(match.softcap)))
    if match.dropout is not None:
        fused.attribute.append(helper.make_attribute("dropout", float(match.dropout)))
    for entry in anchor.metadata_props:
        fused.metadata_props.add().CopyFrom(entry)
    for index, node in enumerate(match.before):
        node.name = f"{anchor.name}_unfold_bias_{index}"
    for node in nodes:
        if not node.metadata_props:
            for entry in anchor.metadata_props:
                node.metadata_props.add().CopyFrom(entry)
    return nodes + [fused]


def fuse_attention(graph: Graph) -> int:
    """Replace every scaled dot-product attention chain by one fused node; returns how many."""
    finder = _Finder(graph)
    placed: dict[int, list[onnx.NodeProto]] = {}
    found = 0
    with_probs = False
    for softmax in list(graph.model.graph.node):
        if softmax.op_type != "Softmax" or softmax.domain not in ("", "ai.onnx"):
            continue
        dead_before = set(finder.dead)
        match = _match_attention(finder, softmax)
        if (
            match is not None
            and match.clamped
            and any(_may_hold_minus_infinity(finder, b) for b in match.biases + match.folded_biases)
        ):
            match = None  # the clamp turns -inf into a number: fully masked rows would differ
        if match is None or not math.isfinite(match.scale) or match.scale == 0:
            finder.dead = dead_before
            continue
        context = match.removed[-1]
        finder.dead.update(id(node) for node in match.removed)
        output = match.output or context.output[0]
        for shape, source in match.resized:
            shape.input[0] = source
        placed[id(context)] = _fused_nodes(finder, match, softmax, output)
        with_probs = with_probs or bool(match.probs)
        placed.update((key, [node]) for key, node in match.moved.items())
        found += 1
    if not placed:
        return 0
    nodes = []
    for node in graph.model.graph.node:
        if id(node) in placed:
            nodes.extend(placed[id(node)])
        elif id(node) not in finder.dead:
            nodes.append(node)
    if with_probs:  # the weights' readers may stand before the context product
        nodes = topological_order(nodes, set(graph.inputs) | set(graph.initializers))
    del graph.model.graph.node[:]
    graph.model.graph.node.extend(nodes)
    remove_dead_nodes(graph.model)  # what computed only the removed nodes' inputs
    remove_unused_initializers(graph.model)
    declare_internal_domain(graph.model)
    graph.edited()
    return found


def run(graph: Graph, context: PassContext) -> bool:
    """Fuse scaled dot-product attention chains; the count joins ``context.lifted``."""
    found = fuse_attention(graph)
    if found:
        context.lifted[FUSED_OP] = found
        context.say(f"Fused attention blocks: {found}")
    return bool(found)
