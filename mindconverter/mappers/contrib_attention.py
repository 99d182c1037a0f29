"""onnxruntime's attention operators (domain ``com.microsoft``) written as attention.

``Attention`` (BERT/GPT-2 self-attention with one packed q/k/v weight) becomes three
``nn.Dense`` projections cut from the packed weight (``self.query``, ``self.key``,
``self.value``), heads split, ``softmax(q·kᵀ·scale + mask)``, the context merged back;
``MultiHeadAttention`` and ``GroupQueryAttention`` the same computation on given q/k/v;
``RotaryEmbedding`` the rotation of (x1, x2) pairs by the cos/sin caches. Masks follow
onnxruntime: masked positions get ``mask_filter_value`` (default -10000) added to their scores.
Semantics from onnxruntime's ContribOperators.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .attention import rotate
from .base import (
    BinOp,
    Cell,
    Const,
    Input,
    Item,
    Lit,
    NodeContext,
    Outputs,
    Temp,
    Unsupported,
)
from .common import cast_to, dim_expr
from .contrib_fused import MS_DOMAIN
from .registry import mapper
from .syntax import ops

MASK_FILTER = -10000.0
ALL = slice(None)


def size_of(dim, index: int, axis: int):
    """A dimension as an expression: a literal, or ``ops.shape(input)[axis]``."""
    value = dim_expr(dim, index, axis)
    return Lit(value) if isinstance(value, int) else value


def split_heads(value, batch, heads: int, head_size: int, hint: str):
    """(B, S, heads*head_size) -> (B, heads, S, head_size)."""
    split = ops.reshape(value, (batch, Lit(-1), Lit(heads), Lit(head_size)))
    return Temp(ops.transpose(split, Lit((0, 2, 1, 3))), hint)


def merge_heads_sized(context, batch, hidden: int):
    """(B, heads, S, head_size) -> (B, S, hidden) with the hidden size known."""
    moved = ops.transpose(context, Lit((0, 2, 1, 3)))
    return ops.reshape(moved, (batch, Lit(-1), Lit(hidden)))


def attend(q, k, v, scale: float, bias=None):
    """softmax(q·kᵀ·scale + bias)·v on heads-first tensors."""
    scores = ops.matmul(q, ops.swapaxes(k, Lit(-1), Lit(-2)))
    if scale != 1.0:
        scores = scores * Lit(scale)
    if bias is not None:
        scores = scores + bias
    probs = Temp(ops.softmax(Temp(scores, "scores"), Lit(-1)), "probs")
    return ops.matmul(probs, v)


def head_scale(ctx: NodeContext, head_size: int) -> float:
    """The ``scale`` attribute, or 1/sqrt(head size) when it is absent or 0."""
    scale = float(ctx.attr("scale", 0.0) or 0.0)
    return scale if scale else 1.0 / math.sqrt(head_size)


def head_count(ctx: NodeContext, name: str = "num_heads") -> int:
    """A head-count attribute, which must be positive."""
    count = int(ctx.attr(name, 0))
    if count <= 0:
        raise Unsupported(f"{name}={count}")
    return count


def filter_value(ctx: NodeContext) -> float:
    return float(ctx.attr("mask_filter_value", MASK_FILTER))


def keep_to_bias(keep, fill: float):
    """A boolean 'may attend' tensor -> 0 where it may, ``fill`` elsewhere."""
    return ops.where(keep, Lit(0.0), Lit(fill))


def key_mask_bias(ctx: NodeContext, index: int, key_len, fill: float):
    """onnxruntime's mask input as an additive bias broadcasting over (B, N, S, T): key lengths
    (B), a raw 0/1 mask (B, T) or (B, S, T)."""
    rank = ctx.input_rank(index)
    mask = Input(index)
    if rank == 1:
        size, batch = ctx.require_shape(index)[0], ctx.require_shape(0)[0]
        if isinstance(size, int) and isinstance(batch, int) and size != batch:
            raise Unsupported("a mask holding key start and end positions (shape 2*batch)")
        positions = ops.arange(key_len)
        keep = BinOp("<", Item(positions, (None, ALL)), Item(mask, (ALL, None)))
        return Item(keep_to_bias(keep, fill), (ALL, None, None, ALL))
    if rank in (2, 3):
        bias = keep_to_bias(BinOp(">", mask, Lit(0)), fill)
        return Item(bias, (ALL, None, None, ALL) if rank == 2 else (ALL, None))
    raise Unsupported(f"a rank-{rank} attention mask")


def causal_bias(query_len, key_len, fill: float):
    """Query i (the last ``query_len`` of ``key_len`` positions) sees keys up to its own position."""
    if isinstance(query_len, Lit) and isinstance(key_len, Lit):
        rows = np.arange(query_len.value).reshape(-1, 1) + (key_len.value - query_len.value)
        allowed = np.arange(key_len.value).reshape(1, -1) <= rows
        return Const(np.where(allowed, 0.0, fill).astype(np.float32))
    rows = Item(ops.arange(query_len), (ALL, None))
    offset = BinOp("-", key_len, query_len)
    keep = BinOp("<=", Item(ops.arange(key_len), (None, ALL)), rows + offset)
    return keep_to_bias(keep, fill)


def add_bias(total, part):
    return part if total is None else BinOp("+", total, part)


@dataclass
class PackedProjection:
    """The input of a self-attention and its packed (in, q+k+v) weight, as an Attention or a
    QAttention (dequantized) holds them."""

    x: Any
    weight: np.ndarray
    weight_index: int
    weight_note: str = ""  # how the weight was made float (QAttention), before the slicing
    bias_index: int = 2


@dataclass
class AttentionParts:
    """Heads-first q/k/v, the additive mask, and the sizes that merge the heads back."""

    q: Any
    k: Any
    v: Any
    bias: Any
    batch: Any
    v_size: int
    head_size: int


def _projection(ctx: NodeContext, packed: PackedProjection, start: int, size: int, role: str):
    """One of the q/k/v projections cut from the packed weight and bias: an nn.Dense."""
    end = start + size
    note = f"{packed.weight_note}[:, {start}:{end}]; transpose"
    weights = {"weight": ctx.weight(packed.weight_index, packed.weight[:, start:end].T, note)}
    kwargs = {"in_channels": int(packed.weight.shape[0]), "out_channels": size}
    if ctx.has_input(packed.bias_index):
        bias = ctx.require_const(packed.bias_index, "the packed q/k/v bias").reshape(-1)
        weights["bias"] = ctx.weight(packed.bias_index, bias[start:end], f"[{start}:{end}]")
    else:
        kwargs["has_bias"] = False
    return Cell("nn.Dense", kwargs=kwargs, args=[packed.x], weights=weights, role=role)


def _packed_sizes(ctx: NodeContext, total: int) -> list[int]:
    sizes = [int(s) for s in ctx.attr("qkv_hidden_sizes", [])]
    if sizes:
        return sizes
    if total % 3:
        raise Unsupported(f"a packed q/k/v weight of {total} columns")
    return [total // 3] * 3


def packed_self_attention(
    ctx: NodeContext, packed: PackedProjection, mask_index: int, past_index: int
) -> AttentionParts:
    """Self-attention with q/k/v projected by one packed weight (Attention, QAttention):
    ``self.query/key/value`` nn.Dense cells, heads, scores, softmax with the mask, context;
    a past (2, B, N, P, H) is prepended to the keys/values and ``present`` stacks them."""
    heads = head_count(ctx)
    q_size, k_size, v_size = _packed_sizes(ctx, int(packed.weight.shape[1]))
    if q_size != k_size or q_size % heads or v_size % heads:
        raise Unsupported(f"q/k/v sizes {q_size}/{k_size}/{v_size} over {heads} heads")
    if int(ctx.attr("do_rotary", 0)) or int(ctx.attr("past_present_share_buffer", 0)):
        raise Unsupported("attention with a shared past buffer or rotary embedding")
    head_size = q_size // heads
    batch = size_of(ctx.require_shape(0)[0], 0, 0)
    q = split_heads(_projection(ctx, packed, 0, q_size, "query"), batch, heads, head_size, "query")
    k = split_heads(_projection(ctx, packed, q_size, k_size, "key"), batch, heads, head_size, "key")
    value = _projection(ctx, packed, q_size + k_size, v_size, "value")
    v = split_heads(value, batch, heads, v_size // heads, "value")
    query_len = size_of(ctx.require_shape(0)[1], 0, 1)
    key_len = query_len
    if ctx.has_input(past_index):
        k = Temp(ops.concat([Item(Input(past_index), 0), k], axis=Lit(2)), "key")
        v = Temp(ops.concat([Item(Input(past_index), 1), v], axis=Lit(2)), "value")
        key_len = _plus_dims(size_of(ctx.require_shape(past_index)[3], past_index, 3), query_len)
    bias = None
    if ctx.has_input(mask_index):
        bias = key_mask_bias(ctx, mask_index, key_len, filter_value(ctx))
    if int(ctx.attr("unidirectional", 0)):
        bias = add_bias(bias, causal_bias(query_len, key_len, filter_value(ctx)))
    return AttentionParts(q, k, v, bias, batch, v_size, head_size)


def finish_attention(ctx: NodeContext, parts: AttentionParts, extra_bias=None) -> Outputs:
    """The scores, softmax and merged context of :func:`packed_self_attention`'s parts; the
    present output stacks the keys and values."""
    bias = add_bias(parts.bias, extra_bias) if extra_bias is not None else parts.bias
    context = attend(parts.q, parts.k, parts.v, head_scale(ctx, parts.head_size), bias)
    present = None
    if ctx.output_used(1):
        present = ops.stack([parts.k, parts.v], axis=Lit(0))
    merged = merge_heads_sized(context, parts.batch, parts.v_size)
    return Outputs([merged, present][: ctx.num_outputs])


@mapper("Attention", domain=MS_DOMAIN)
def ms_attention(ctx: NodeContext):
    """Attention -> self.query/key/value (nn.Dense cut from the packed weight), heads, scores,
    softmax with the mask (and attention_bias), context; past/present as (2, B, N, T, H)."""
    if ctx.has_input(6):
        raise Unsupported("Attention with past_sequence_length (a shared past buffer)")
    packed = PackedProjection(Input(0), ctx.require_const(1, "the packed q/k/v weight"), 1)
    parts = packed_self_attention(ctx, packed, 3, 4)
    return finish_attention(ctx, parts, Input(5) if ctx.has_input(5) else None)


def _both_lit(a, b) -> bool:
    return isinstance(a, Lit) and isinstance(b, Lit)


def _plus_dims(a, b):
    return Lit(a.value + b.value) if _both_lit(a, b) else BinOp("+", a, b)


def _mha_projection(ctx: NodeContext, index: int, part: int, batch, heads: int, hint: str):
    """Query/key/value ``index`` with its slice of the optional bias, heads first; a 4-D
    key/value is already (B, N, L, H)."""
    shape = ctx.require_shape(index)
    if len(shape) == 4:
        return Input(index), int(shape[3])
    if len(shape) != 3:
        raise Unsupported(f"a rank-{len(shape)} (packed) {hint}")
    hidden = int(shape[2])
    value = Input(index)
    if ctx.has_input(3):
        sizes = [int(ctx.require_shape(0)[2]), int(ctx.require_shape(1)[2])]
        start = sum(sizes[:part])
        bias = ctx.require_const(3, "the q/k/v bias")
        value = value + Const(np.asarray(bias[start : start + hidden]))
    return split_heads(value, batch, heads, hidden // heads, hint), hidden // heads


def _unpacked(value, part: int, hint: str):
    """Part ``part`` of a packed (B, S, N, parts, H) tensor, heads first."""
    return Temp(ops.transpose(Item(value, (ALL, ALL, ALL, part)), Lit((0, 2, 1, 3))), hint)


def _mha_qkv(ctx: NodeContext, batch, heads: int):
    """Heads-first q, k, v from separate inputs, packed q/k/v (B, S, N, 3, H) in the query, or
    packed k/v (B, L, N, 2, H) in the key; with their head sizes (q/k and v)."""
    packed_qkv = ctx.input_rank(0) == 5
    packed_kv = not packed_qkv and ctx.has_input(1) and ctx.input_rank(1) == 5
    if (packed_qkv or packed_kv) and ctx.has_input(3):
        raise Unsupported("MultiHeadAttention with packed inputs and a bias")
    if packed_qkv:
        head = int(ctx.require_shape(0)[4])
        parts = [_unpacked(Input(0), i, hint) for i, hint in enumerate(("query", "key", "value"))]
        return (*parts, head, head)
    if not ctx.has_input(1):
        raise Unsupported("MultiHeadAttention without a key")
    q, head_size = _mha_projection(ctx, 0, 0, batch, heads, "query")
    if packed_kv:
        k, v = _unpacked(Input(1), 0, "key"), _unpacked(Input(1), 1, "value")
        return q, k, v, head_size, int(ctx.require_shape(1)[4])
    k, _ = _mha_projection(ctx, 1, 1, batch, heads, "key")
    v, v_head = _mha_projection(ctx, 2, 2, batch, heads, "value")
    return q, k, v, head_size, v_head


@mapper("MultiHeadAttention", domain=MS_DOMAIN)
def multi_head_attention(ctx: NodeContext):
    """MultiHeadAttention -> heads split from q/k/v (plus bias), past keys/values prepended,
    softmax(q·kᵀ·scale + masks)·v, heads merged; present_key/value are the full keys/values."""
    heads = head_count(ctx)
    batch = size_of(ctx.require_shape(0)[0], 0, 0)
    q, k, v, head_size, v_head = _mha_qkv(ctx, batch, heads)
    query_len = size_of(ctx.require_shape(0)[1], 0, 1)
    key_index = 1 if ctx.has_input(1) else 0
    key_axis = 2 if ctx.input_rank(key_index) == 4 else 1
    key_len = size_of(ctx.require_shape(key_index)[key_axis], key_index, key_axis)
    if ctx.has_input(6) and ctx.has_input(7):
        k = Temp(ops.concat([Input(6), k], axis=Lit(2)), "key")
        v = Temp(ops.concat([Input(7), v], axis=Lit(2)), "value")
        key_len = _plus_dims(size_of(ctx.require_shape(6)[2], 6, 2), key_len)
    fill = filter_value(ctx)
    bias = key_mask_bias(ctx, 4, key_len, fill) if ctx.has_input(4) else None
    if int(ctx.attr("unidirectional", 0)):
        bias = add_bias(bias, causal_bias(query_len, key_len, fill))
    if ctx.has_input(5):
        bias = add_bias(bias, Input(5))
    context = attend(q, k, v, head_scale(ctx, head_size), bias)
    exprs = [
        merge_heads_sized(context, batch, heads * v_head),
        k if ctx.output_used(1) else None,
        v if ctx.output_used(2) else None,
    ]
    if ctx.output_used(3):
        raise Unsupported("MultiHeadAttention's qk output")
    return Outputs(exprs[: ctx.num_outputs])


def _gqa_bias(ctx: NodeContext, query_len, key_len, has_past: bool):
    """GroupQueryAttention's causal mask by the per-row lengths (seqlens_k = total length - 1):
    query i sits at position seqlens_k[b] + 1 - S + i (at i without a past cache)."""
    keys = Item(ops.arange(key_len), (None, None, None, ALL))
    rows = Item(ops.arange(query_len), (None, None, ALL, None))
    lengths = Item(cast_to(Input(5), np.int64), (ALL, None, None, None))
    if has_past:
        position = rows + (lengths + Lit(1) - query_len)
        keep = BinOp("<=", keys, position)
    else:
        keep = ops.logical_and(BinOp("<=", keys, rows), BinOp("<=", keys, lengths))
    window = int(ctx.attr("local_window_size", -1))
    if window > 0:
        current = position if has_past else rows
        keep = ops.logical_and(keep, BinOp(">", keys, current - Lit(window)))
    return keep_to_bias(keep, -math.inf)


def _gqa_qkv(ctx: NodeContext, heads: int, kv_heads: int, batch):
    """Heads-first q, k, v from separate inputs or one packed (B, S, (N + 2*kvN) * H) query."""
    width = int(ctx.require_shape(0)[2])
    if ctx.has_input(1):
        head_size = width // heads
        parts = [Input(0), Input(1), Input(2)]
    else:
        head_size = width // (heads + 2 * kv_heads)
        q_end, k_end = heads * head_size, (heads + kv_heads) * head_size
        packed = Input(0)
        parts = [
            Item(packed, (Ellipsis, slice(None, q_end))),
            Item(packed, (Ellipsis, slice(q_end, k_end))),
            Item(packed, (Ellipsis, slice(k_end, None))),
        ]
    counts = (heads, kv_heads, kv_heads)
    hints = ("query", "key", "value")
    q, k, v = (split_heads(p, batch, n, head_size, h) for p, n, h in zip(parts, counts, hints))
    return q, k, v, head_size


def _gqa_positions(query_len, has_past: bool):
    """Each query's position: 0..S-1, or seqlens_k[b] + 1 - S + i after a past cache."""
    rows = Item(ops.arange(query_len), (None, ALL))
    if not has_past:
        return rows
    lengths = Item(cast_to(Input(5), np.int64), (ALL, None))
    return rows + (lengths + Lit(1) - query_len)


def _gqa_rotary(ctx: NodeContext, q, k, positions, head_size: int):
    """q and k rotated by the cos/sin caches (inputs 7, 8) at the query positions."""
    half = int(ctx.require_shape(7)[1])
    cos = ops.gather(ctx.operand(7), positions, Lit(0))
    sin = ops.gather(ctx.operand(8), positions, Lit(0))
    cos = Temp(ops.unsqueeze(cos, Lit(1)), "cos")
    sin = Temp(ops.unsqueeze(sin, Lit(1)), "sin")
    interleaved = bool(int(ctx.attr("rotary_interleaved", 0)))
    q = Temp(rotate(q, cos, sin, 2 * half, head_size, interleaved), "query")
    k = Temp(rotate(k, cos, sin, 2 * half, head_size, interleaved), "key")
    return q, k


@mapper("GroupQueryAttention", domain=MS_DOMAIN)
def group_query_attention(ctx: NodeContext):
    """GroupQueryAttention -> causal attention (by the per-row lengths seqlens_k) whose key/value
    heads are repeated over the query heads; q/k/v separate or packed, optionally rotated by
    the cos/sin caches; a past cache is prepended (present = past + new)."""
    if any(ctx.has_input(i) for i in range(9, 12)) or float(ctx.attr("softcap", 0.0) or 0.0):
        raise Unsupported("GroupQueryAttention with position ids, a bias, head sinks or softcap")
    if int(ctx.attr("smooth_softmax", 0)) or int(ctx.attr("qk_output", 0)):
        raise Unsupported("GroupQueryAttention with smooth_softmax or the qk output")
    heads, kv_heads = head_count(ctx), head_count(ctx, "kv_num_heads")
    if heads % kv_heads:
        raise Unsupported(f"{heads} query heads cannot share {kv_heads} key/value heads")
    batch = size_of(ctx.require_shape(0)[0], 0, 0)
    q, k, v, head_size = _gqa_qkv(ctx, heads, kv_heads, batch)
    query_len = size_of(ctx.require_shape(0)[1], 0, 1)
    key_len = query_len
    has_past = ctx.has_input(3) and ctx.require_shape(3)[2] != 0
    if int(ctx.attr("do_rotary", 0)):
        q, k = _gqa_rotary(ctx, q, k, _gqa_positions(query_len, has_past), head_size)
    if has_past:
        k = Temp(ops.concat([Input(3), k], axis=Lit(2)), "present_key")
        v = Temp(ops.concat([Input(4), v], axis=Lit(2)), "present_value")
        key_len = _plus_dims(size_of(ctx.require_shape(3)[2], 3, 2), query_len)
    k_used, v_used = k, v
    if heads != kv_heads:
        reps = Lit(heads // kv_heads)
        k_used = ops.repeat_interleave(k, reps, axis=Lit(1))
        v_used = ops.repeat_interleave(v, reps, axis=Lit(1))
    bias = _gqa_bias(ctx, query_len, key_len, has_past)
    context = attend(q, k_used, v_used, head_scale(ctx, head_size), bias)
    exprs = [merge_heads_sized(context, batch, heads * head_size), k, v]
    return Outputs([e if ctx.output_used(i) or i == 0 else None for i, e in enumerate(exprs)])


def _rotary_positions(ctx: NodeContext, seq_axis: int):
    """Position ids (B, S), or the scalar start position plus 0..S-1."""
    shape = ctx.require_shape(1)
    if len(shape) == 2:
        return Input(1)
    seq = size_of(ctx.require_shape(0)[seq_axis], 0, seq_axis)
    start = Item(cast_to(Input(1), np.int64), 0)
    return Item(ops.arange(seq) + start, (None, ALL))


@mapper("RotaryEmbedding", domain=MS_DOMAIN)
def ms_rotary_embedding(ctx: NodeContext):
    """RotaryEmbedding (input, position_ids, cos_cache, sin_cache) -> the cos/sin rows of each
    position rotate the (x1, x2) pairs of each head; (B, S, N*H) or (B, N, S, H) inputs."""
    if int(ctx.attr("is_packed_batching", 0)):
        raise Unsupported("RotaryEmbedding with packed batching")
    shape = ctx.require_shape(0)
    half = int(ctx.require_shape(2)[1])
    dim = int(ctx.attr("rotary_embedding_dim", 0)) or 2 * half
    x = Input(0)
    if len(shape) == 3:
        heads = int(ctx.attr("num_heads", 0)) or int(shape[2]) // max(dim, 1)
        if heads <= 0 or int(shape[2]) % heads:
            raise Unsupported(f"a hidden size of {shape[2]} over {heads} heads")
        head = int(shape[2]) // heads
        batch = size_of(shape[0], 0, 0)
        x = Temp(ops.reshape(x, (batch, Lit(-1), Lit(heads), Lit(head))), "heads")
        seq_axis, head_axis = 1, 2
    elif len(shape) == 4:
        head, seq_axis, head_axis = int(shape[3]), 2, 1
    else:
        raise Unsupported(f"RotaryEmbedding on a rank-{len(shape)} input")
    positions = _rotary_positions(ctx, seq_axis)
    cos = ops.gather(ctx.operand(2), positions, Lit(0))
    sin = ops.gather(ctx.operand(3), positions, Lit(0))
    cos = Temp(ops.unsqueeze(cos, Lit(head_axis)), "cos")
    sin = Temp(ops.unsqueeze(sin, Lit(head_axis)), "sin")
    out = rotate(x, cos, sin, dim, head, bool(int(ctx.attr("interleaved", 0))))
    if len(shape) == 3:
        out = ops.reshape(out, (batch, Lit(-1), Lit(int(shape[2]))))
    return out
