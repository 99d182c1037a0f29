"""Attention (opset 23+): scaled dot-product attention written as matmul / softmax ops.

Covers 3-D (``q_num_heads``/``kv_num_heads``) and 4-D inputs, grouped-query attention, float
and boolean masks (shorter masks padded), ``is_causal`` (offset-aligned with a past cache),
``scale``, ``softcap``, ``past_key``/``past_value`` -> ``present_*``, ``nonpad_kv_seqlen``
(opset 24), ``left_window_size``/``right_window_size`` (opset 25), ``softmax_precision`` and
every ``qk_matmul_output_mode``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from onnx import helper

from .base import (
    BinOp,
    Const,
    DType,
    Input,
    Item,
    Lit,
    Neg,
    NodeContext,
    Outputs,
    Temp,
    Unsupported,
)
from .registry import mapper
from .sdpa import SdpaOptions, sdpa_expression
from .syntax import ops

NEG_INF = -math.inf


def _heads_first(value, shape, heads: int):
    """(B, S, H*D) -> (B, H, S, D)."""
    batch, seq, hidden = shape
    if hidden % heads:
        raise Unsupported(f"hidden size {hidden} is not a multiple of {heads} heads")
    split = ops.reshape(value, Lit((batch, seq, heads, hidden // heads)))
    return ops.transpose(split, Lit((0, 2, 1, 3)))


def _bias_from_allowed(allowed, dtype: np.dtype):
    """A boolean 'may attend' tensor -> additive bias (0 where allowed, -inf elsewhere)."""
    bias = ops.where(allowed, Lit(0.0), Lit(NEG_INF))
    if np.dtype(dtype) != np.float32:
        bias = ops.cast(bias, DType(np.dtype(dtype).name))
    return bias


def _add(total, part):
    return part if total is None else BinOp("+", total, part)


@dataclass
class _Layout:
    """Query, key and value with heads first, and the sizes the computation needs."""

    q: Any
    k: Any
    v: Any
    batch: int
    q_heads: int
    q_len: int
    head: int
    kv_heads: int
    kv_len: int
    rank: int


def _layout(ctx: NodeContext) -> _Layout:
    """Heads-first q/k/v (3-D inputs are split into heads) and their sizes."""
    q_shape, k_shape, v_shape = ctx.require_shape(0), ctx.require_shape(1), ctx.require_shape(2)
    rank = len(q_shape)
    q, k, v = Input(0), Input(1), Input(2)
    if rank == 3:
        q_heads = ctx.attr("q_num_heads")
        kv_heads = ctx.attr("kv_num_heads")
        if q_heads is None or kv_heads is None:
            raise Unsupported("3-D Attention needs q_num_heads and kv_num_heads")
        q = _heads_first(q, q_shape, int(q_heads))
        k = _heads_first(k, k_shape, int(kv_heads))
        v = _heads_first(v, v_shape, int(kv_heads))
        return _Layout(
            q, k, v, q_shape[0], int(q_heads), q_shape[1], q_shape[2] // int(q_heads),
            int(kv_heads), k_shape[1], rank,
        )  # fmt: skip
    if rank == 4:
        batch, q_heads, q_len, head = q_shape
        return _Layout(q, k, v, batch, q_heads, q_len, head, k_shape[1], k_shape[2], rank)
    raise Unsupported(f"Attention on rank-{rank} inputs")


def _input_mask(ctx: NodeContext, dtype: np.dtype, total_len: int):
    """The attn_mask input (3) as an additive bias padded to the key length, or None."""
    if not ctx.has_input(3):
        return None
    mask_dtype = np.dtype(ctx.input_dtype(3) or dtype)
    mask_shape = ctx.require_shape(3)
    mask = Input(3)
    pad = total_len - mask_shape[-1]
    if pad > 0:
        fill = NEG_INF
        if mask_dtype == np.bool_:  # pad as int8 (0 = masked), then back to bool
            mask = ops.cast(mask, DType("int8"))
            fill = 0
        mask = ops.pad(mask, Lit((0, pad)), value=Lit(fill))
        if mask_dtype == np.bool_:
            mask = ops.cast(mask, DType("bool_"))
    if mask_dtype == np.bool_:
        return _bias_from_allowed(mask, dtype)
    if mask_dtype != dtype:
        return ops.cast(mask, DType(dtype.name))
    return mask


def _window_bias(ctx: NodeContext, dtype: np.dtype, q_len: int, total_len: int, past_len: int):
    """The causal / sliding-window parts of the bias: (parts to add in order, whether they are
    computed at run time, the allowed (query, key) pairs known at conversion time)."""
    left = int(ctx.attr("left_window_size", -1)) if ctx.opset >= 25 else -1
    right = int(ctx.attr("right_window_size", -1)) if ctx.opset >= 25 else -1
    causal = bool(int(ctx.attr("is_causal", 0)))
    rows = np.arange(q_len).reshape(-1, 1)
    cols = np.arange(total_len).reshape(1, -1)
    if ctx.has_input(6):
        # per-batch offset nonpad_kv_seqlen[b] - q_len; diff = i + offset - j
        lengths = ops.reshape(Input(6), Lit((-1, 1, 1, 1)))
        offset = Temp(lengths - Lit(q_len), "offset")
        diff = Temp(Const((rows - cols).astype(np.int64)) + offset, "diff")
        parts, allowed = [], None
        if causal:
            allowed = BinOp(">=", diff, Lit(0))
        if left >= 0:
            part = BinOp("<=", diff, Lit(left))
            allowed = part if allowed is None else ops.logical_and(allowed, part)
        if right >= 0:
            part = BinOp("<=", Neg(diff), Lit(right))
            allowed = part if allowed is None else ops.logical_and(allowed, part)
        if allowed is not None:
            parts.append(_bias_from_allowed(allowed, dtype))
        keep = BinOp(
            "<",
            Const(np.arange(total_len, dtype=np.int64).reshape(1, 1, 1, -1)),
            ops.reshape(Input(6), Lit((-1, 1, 1, 1))),
        )
        return parts + [_bias_from_allowed(keep, dtype)], True, None
    diff = rows + past_len - cols
    allowed = np.ones_like(diff, dtype=bool)
    if causal:
        allowed &= diff >= 0
    if left >= 0:
        allowed &= diff <= left
    if right >= 0:
        allowed &= -diff <= right
    if allowed.all():
        return [], False, None
    return [_bias_from_allowed(Const(allowed), dtype)], False, allowed


def _probabilities(ctx: NodeContext, logits, bias, dtype: np.dtype, masked_at_run_time: bool):
    """softmax over the keys in the requested precision; fully masked rows give 0."""
    precision = ctx.attr("softmax_precision")
    if precision is not None:
        soft_dtype = np.dtype(helper.tensor_dtype_to_np_dtype(int(precision)))
        if soft_dtype != dtype:
            logits = ops.cast(logits, DType(soft_dtype.name))
    if masked_at_run_time:
        # Rows whose every key is masked attend nothing (ONNX defines their output as 0). They
        # are zeroed before the softmax too: MindSpore's softmax turns a whole tensor to 0 when
        # one row is all -inf.
        masked_rows = Temp(
            BinOp("==", ops.amax(bias, Lit(-1), keepdims=Lit(True)), Lit(NEG_INF)),
            "masked_rows",
        )
        logits = ops.where(masked_rows, Lit(0.0), logits)
        probs = ops.where(masked_rows, Lit(0.0), ops.softmax(logits, Lit(-1)))
    else:
        probs = ops.softmax(logits, Lit(-1))
    return Temp(ops.cast(probs, DType(dtype.name)), "probs")


def _shared_heads(layout: _Layout, present_k, present_v):
    """Keys and values repeated so grouped key/value heads serve every query head."""
    if layout.kv_heads == layout.q_heads:
        return present_k, present_v
    if layout.q_heads % layout.kv_heads:
        raise Unsupported(
            f"{layout.q_heads} query heads cannot share {layout.kv_heads} key/value heads"
        )
    reps = layout.q_heads // layout.kv_heads
    k_used = ops.repeat_interleave(present_k, Lit(reps), axis=Lit(1))
    v_used = ops.repeat_interleave(present_v, Lit(reps), axis=Lit(1))
    return k_used, v_used


def _scaled_scores(ctx: NodeContext, layout: _Layout, k_used):
    """q·kᵀ·scale (the scale split over both factors), with the optional softcap."""
    scale = ctx.attr("scale")
    scale = 1.0 / math.sqrt(layout.head) if scale is None else float(scale)
    root = math.sqrt(scale)
    scores = ops.matmul(layout.q * Lit(root), ops.transpose(k_used * Lit(root), Lit((0, 1, 3, 2))))
    softcap = ctx.attr("softcap")
    if softcap is not None and float(softcap) > 0:
        cap = float(softcap)
        scores = ops.tanh(scores / Lit(cap)) * Lit(cap)
    return scores


def _plain(ctx: NodeContext, dtype: np.dtype, layout: _Layout):
    """The shared rendering (``mappers/sdpa.py``) when the node asks for nothing more than
    heads-first softmax(q·kᵀ·scale + float mask)·v; None otherwise."""
    extras = [ctx.has_input(i) for i in (4, 5, 6)] + [ctx.output_used(i) for i in (1, 2, 3)]
    options = ("is_causal", "softcap", "softmax_precision", "left_window_size", "right_window_size")
    if layout.rank != 4 or dtype != np.float32 or any(extras):
        return None
    if any(ctx.attr(name) not in (None, 0, -1) for name in options):
        return None
    if layout.q_heads % layout.kv_heads:
        return None
    if ctx.has_input(3):
        mask_shape = ctx.require_shape(3)
        if ctx.input_dtype(3) != dtype or mask_shape[-1] != layout.kv_len:
            return None
    scale = ctx.attr("scale")
    options_ = SdpaOptions(
        scale=1.0 / math.sqrt(layout.head) if scale is None else float(scale),
        head_dim=layout.head,
        kv_groups=layout.q_heads // layout.kv_heads,
        masked_rows=ctx.has_input(3),
    )
    bias = Input(3) if ctx.has_input(3) else None
    return sdpa_expression(layout.q, layout.k, layout.v, bias, options_)


@mapper("Attention", since=23)
def attention(ctx: NodeContext):
    """Attention -> softmax(q·kᵀ·scale [softcap] + mask) · v with reshapes for heads and caches."""
    dtype = np.dtype(ctx.input_dtype(0) or np.float32)
    if (
        dtype.kind != "f"
        or dtype.itemsize < 2
        or dtype.name not in ("float16", "float32", "float64")
    ):
        raise Unsupported(f"Attention on {dtype.name} inputs")
    layout = _layout(ctx)
    plain = _plain(ctx, dtype, layout)
    if plain is not None:
        return plain
    has_past = ctx.has_input(4) and ctx.has_input(5)
    if ctx.has_input(4) != ctx.has_input(5):
        raise Unsupported("past_key and past_value must be given together")
    k, v, past_len = layout.k, layout.v, 0
    if has_past:
        past_len = int(ctx.require_shape(4)[2])
        k = ops.concat([Input(4), k], axis=Lit(2))
        v = ops.concat([Input(5), v], axis=Lit(2))
    present_k = Temp(k, "present_key")
    present_v = Temp(v, "present_value")
    total_len = layout.kv_len + past_len
    if ctx.has_input(6) and has_past:
        raise Unsupported("nonpad_kv_seqlen together with a past cache")

    bias = _input_mask(ctx, dtype, total_len)
    window, window_at_run_time, static_allowed = _window_bias(
        ctx, dtype, layout.q_len, total_len, past_len
    )
    for part in window:
        bias = _add(bias, part)
    if bias is not None:
        bias = Temp(bias, "attn_bias")
    masked_at_run_time = (
        ctx.has_input(3)
        or window_at_run_time
        or (static_allowed is not None and not static_allowed.any(axis=-1).all())
    )

    k_used, v_used = _shared_heads(layout, present_k, present_v)
    scores = _scaled_scores(ctx, layout, k_used)
    mode = int(ctx.attr("qk_matmul_output_mode", 0))
    want_qk = ctx.output_used(3)
    if want_qk and mode in (0, 1):
        scores = Temp(scores, "scores")
    with_bias = scores if bias is None else BinOp("+", scores, bias)
    if want_qk and mode == 2:
        with_bias = Temp(with_bias, "scores")
    probs = _probabilities(ctx, with_bias, bias, dtype, masked_at_run_time)
    out = ops.matmul(probs, v_used)
    if layout.rank == 3:
        out = ops.reshape(
            ops.transpose(out, Lit((0, 2, 1, 3))), Lit((layout.batch, layout.q_len, -1))
        )

    qk_out = None
    if want_qk:
        qk_out = {0: scores, 1: scores, 2: with_bias, 3: probs}.get(mode)
        if qk_out is None:
            raise Unsupported(f"qk_matmul_output_mode {mode}")
        if mode == 2 and bias is not None:
            qk_out = ops.cast(qk_out, DType(dtype.name))
    exprs = [
        out,
        present_k if ctx.output_used(1) else None,
        present_v if ctx.output_used(2) else None,
        qk_out,
    ]
    return Outputs(exprs[: max(ctx.num_outputs, 1)])


@mapper("RotaryEmbedding", since=23)
def rotary_embedding(ctx: NodeContext):
    """RotaryEmbedding -> rotate (x1, x2) pairs by the cos/sin caches (gathered by position_ids);
    the part past ``rotary_embedding_dim`` passes through."""
    shape = ctx.require_shape(0)
    rank = len(shape)
    x = Input(0)
    if rank == 3:
        heads = int(ctx.attr("num_heads", 0))
        if heads <= 0:
            raise Unsupported("3-D RotaryEmbedding needs num_heads")
        x = Temp(ops.reshape(x, Lit((shape[0], shape[1], heads, shape[2] // heads))), "heads")
        head, head_axis = shape[2] // heads, 2  # (B, S, H, D): caches broadcast over axis 2
    elif rank == 4:
        head, head_axis = shape[3], 1  # (B, H, S, D)
    else:
        raise Unsupported(f"RotaryEmbedding on a rank-{rank} input")
    dim = int(ctx.attr("rotary_embedding_dim", 0)) or head
    cos, sin = ctx.operand(1), ctx.operand(2)
    if ctx.has_input(3):
        cos = ops.gather(cos, Input(3), Lit(0))
        sin = ops.gather(sin, Input(3), Lit(0))
    cos = Temp(ops.unsqueeze(cos, Lit(head_axis)), "cos")
    sin = Temp(ops.unsqueeze(sin, Lit(head_axis)), "sin")
    out = rotate(x, cos, sin, dim, head, bool(int(ctx.attr("interleaved", 0))))
    if rank == 3:
        out = ops.reshape(out, Lit(tuple(shape)))
    return out


def rotate(x, cos, sin, dim: int, head: int, interleaved: bool):
    """(x1, x2) pairs of the first ``dim`` features rotated by cos/sin; the rest pass through."""
    rotated = Item(x, (Ellipsis, slice(None, dim))) if dim < head else x
    if interleaved:
        x1, x2 = Item(rotated, (Ellipsis, slice(0, None, 2))), Item(rotated, (Ellipsis, slice(1, None, 2)))  # fmt: skip
    else:
        half = dim // 2
        x1, x2 = Item(rotated, (Ellipsis, slice(None, half))), Item(rotated, (Ellipsis, slice(half, dim)))  # fmt: skip
    x1, x2 = Temp(x1, "x1"), Temp(x2, "x2")
    real = BinOp("*", cos, x1) - BinOp("*", sin, x2)
    imag = BinOp("*", sin, x1) + BinOp("*", cos, x2)
    if interleaved:
        pairs = ops.stack([real, imag], axis=Lit(-1))
        out = ops.flatten(pairs, start_dim=Lit(-2))
    else:
        out = ops.concat([real, imag], axis=Lit(-1))
    if dim < head:
        out = ops.concat([out, Item(x, (Ellipsis, slice(dim, None)))], axis=Lit(-1))
    return out


@mapper("CausalConvWithState", since=27)
def causal_conv_with_state(ctx: NodeContext):
    """CausalConvWithState -> depthwise causal conv1d written as a sum of k shifted slices of
    [past_state | input] times the per-channel taps, optional bias and SiLU; the last k-1 steps
    are the present state."""
    batch, channels, length = ctx.require_shape(0)
    taps = int(ctx.require_shape(1)[2])
    activation = ctx.attr("activation", "none")
    activation = activation.decode() if isinstance(activation, bytes) else activation
    if activation not in ("none", "silu", "swish"):
        raise Unsupported(f"CausalConvWithState activation {activation!r}")
    dtype = np.dtype(ctx.input_dtype(0) or np.float32)
    if taps > 1:
        past = (
            Input(3)
            if ctx.has_input(3)
            else ops.zeros(Lit((batch, channels, taps - 1)), dtype=DType(dtype.name))
        )
        padded = Temp(ops.concat([past, Input(0)], axis=Lit(2)), "padded")
    else:
        padded = Input(0)
    weight = ctx.operand(1)
    widen = dtype != np.float32  # accumulate half precision in float32
    if widen:
        padded = Temp(ops.cast(padded, DType("float32")), "padded32")
        weight = Temp(ops.cast(weight, DType("float32")), "weight32")
    out = None
    for j in range(taps):
        window = Item(padded, (Ellipsis, slice(j, j + length))) if taps > 1 else padded
        term = window * Item(weight, (slice(None), 0, slice(j, j + 1)))
        out = term if out is None else out + term
    if ctx.has_input(2):
        out = out + ops.reshape(ctx.operand(2), Lit((-1, 1)))
    if activation != "none":
        out = ops.silu(out)
    if widen:
        out = ops.cast(out, DType(dtype.name))
    if not ctx.output_used(1):
        return Outputs([out] + [None] * (ctx.num_outputs - 1))
    if taps == 1:  # no state to carry: an empty (B, C, 0) tensor
        return Outputs([out, ops.zeros(Lit((batch, channels, 0)), dtype=DType(dtype.name))])
    present = Item(padded, (Ellipsis, slice(length, None)))
    if widen:
        present = ops.cast(present, DType(dtype.name))
    return Outputs([out, present])


def _heads(value, shape, heads: int, dtype_cast: bool):
    batch, steps, hidden = shape
    value = ops.reshape(value, Lit((batch, steps, heads, hidden // heads)))
    value = ops.transpose(value, Lit((0, 2, 1, 3)))
    return ops.cast(value, DType("float32")) if dtype_cast else value


@mapper("LinearAttention", since=27)
def linear_attention(ctx: NodeContext):
    """LinearAttention -> the recurrent state update unrolled over the (static, short) sequence:
    state = state·exp(decay) [gated]; v = beta·(v - kᵀ·state) [delta]; state += k ⊗ v;
    out_t = scale · q_t · state (state repeated over query-head groups), computed in float32."""
    rule = ctx.attr("update_rule", "gated_delta")
    rule = rule.decode() if isinstance(rule, bytes) else rule
    if rule not in ("linear", "gated", "delta", "gated_delta"):
        raise Unsupported(f"LinearAttention update_rule {rule!r}")
    q_heads, kv_heads = ctx.attr("q_num_heads"), ctx.attr("kv_num_heads")
    if not q_heads or not kv_heads or int(q_heads) % int(kv_heads):
        raise Unsupported("LinearAttention needs q_num_heads a multiple of kv_num_heads")
    q_heads, kv_heads = int(q_heads), int(kv_heads)
    q_shape, k_shape, v_shape = ctx.require_shape(0), ctx.require_shape(1), ctx.require_shape(2)
    if len(q_shape) != 3:
        raise Unsupported(f"LinearAttention on rank-{len(q_shape)} inputs")
    batch, steps, _ = q_shape
    if steps > 16:
        raise Unsupported(f"LinearAttention over {steps} steps (unrolled only up to 16)")
    d_k, d_v = q_shape[2] // q_heads, v_shape[2] // kv_heads
    dtype = np.dtype(ctx.input_dtype(0) or np.float32)
    widen = dtype != np.float32
    q = Temp(_heads(Input(0), q_shape, q_heads, widen), "q")
    k = Temp(_heads(Input(1), k_shape, kv_heads, widen), "k")
    v = Temp(_heads(Input(2), v_shape, kv_heads, widen), "v")
    gating, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    if gating and not ctx.has_input(4) or delta and not ctx.has_input(5):
        raise Unsupported(f"update_rule {rule!r} without its decay/beta input")
    if gating:
        decay_shape = ctx.require_shape(4)
        if decay_shape[-1] == kv_heads:
            decay = ops.transpose(
                ops.reshape(Input(4), Lit((batch, steps, kv_heads, 1))), Lit((0, 2, 1, 3))
            )
            decay = ops.cast(decay, DType("float32")) if widen else decay
        else:
            decay = _heads(Input(4), decay_shape, kv_heads, widen)
        decay = Temp(ops.exp(decay), "decay")
    if delta:
        beta_shape = ctx.require_shape(5)
        beta = ops.transpose(
            ops.reshape(Input(5), Lit((batch, steps, beta_shape[-1], 1))), Lit((0, 2, 1, 3))
        )
        beta = Temp(ops.cast(beta, DType("float32")) if widen else beta, "beta")
    state_dtype = np.dtype(ctx.input_dtype(3) or dtype) if ctx.has_input(3) else dtype
    if ctx.has_input(3):
        state = Input(3) if state_dtype == np.float32 else ops.cast(Input(3), DType("float32"))
    else:
        state = ops.zeros(Lit((batch, kv_heads, d_k, d_v)), dtype=DType("float32"))
    scale = ctx.attr("scale")
    scale = 1.0 / math.sqrt(d_k) if not scale else float(scale)
    group = q_heads // kv_heads
    outputs = []
    for i in range(steps):
        at = (slice(None), slice(None), i)
        k_t, v_t = Item(k, at), Item(v, at)
        if gating:
            state = state * ops.unsqueeze(Item(decay, at), Lit(-1))
        if delta:
            state = Temp(state, "state")
            k_t = Temp(k_t, "k_t")
            retrieved = ops.squeeze(ops.matmul(ops.unsqueeze(k_t, Lit(2)), state), Lit(2))
            v_t = Item(beta, at) * (v_t - retrieved)
        update = ops.unsqueeze(k_t, Lit(-1)) * ops.unsqueeze(v_t, Lit(-2))
        state = Temp(state + update, "state")
        read = state if group == 1 else ops.repeat_interleave(state, Lit(group), axis=Lit(1))
        step = ops.matmul(ops.unsqueeze(Item(q, at), Lit(2)), read)
        outputs.append(step * Lit(scale))
    out = outputs[0] if steps == 1 else ops.concat(outputs, axis=Lit(2))
    out = ops.reshape(ops.transpose(out, Lit((0, 2, 1, 3))), Lit((batch, steps, q_heads * d_v)))
    if widen:
        out = ops.cast(out, DType(dtype.name))
    present = state if state_dtype == np.float32 else ops.cast(state, DType(state_dtype.name))
    return Outputs([out, present if ctx.output_used(1) else None][: ctx.num_outputs])
