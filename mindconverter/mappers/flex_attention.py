"""FlexAttention (ai.onnx.preview): scaled dot-product attention whose scores and
probabilities pass through subgraphs of the model (``score_mod``, ``prob_mod``), each converted
into a cell of its own like a control-flow body."""

from __future__ import annotations

import math

import numpy as np
from onnx import helper

from .base import DType, Input, Lit, NodeContext, Temp, Unsupported
from .control_flow import body_cell
from .registry import mapper
from .syntax import ops

_MOD_DOCS = {
    "ScoreMod": "FlexAttention's score_mod: changes the attention scores (batch, heads, query, "
    "key) before the softmax.",
    "ProbMod": "FlexAttention's prob_mod: changes the attention probabilities (batch, heads, "
    "query, key) after the softmax.",
}


def _compute_dtype(ctx: NodeContext, dtype: np.dtype) -> np.dtype:
    """softmax_precision, else float32 for narrow inputs and the input's own type otherwise."""
    precision = ctx.attr("softmax_precision")
    if precision is not None:
        return np.dtype(helper.tensor_dtype_to_np_dtype(int(precision)))
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def _modifier(ctx: NodeContext, attr: str, name: str, value, dims, dtype: np.dtype):
    """``value`` through the subgraph ``attr`` when the node has one."""
    if ctx.attr(attr) is None:
        return value
    elem_type = helper.np_dtype_to_tensor_dtype(dtype)
    return body_cell(ctx, attr, name, [(elem_type, dims)], [value], _MOD_DOCS[name])


@mapper("FlexAttention", domain="ai.onnx.preview")
def flex_attention(ctx: NodeContext):
    """FlexAttention -> softmax(score_mod(Q·Kᵀ·scale)) through prob_mod, times V (K/V heads
    repeated for grouped-query attention)."""
    q_shape, k_shape = ctx.require_shape(0), ctx.require_shape(1)
    if len(q_shape) != 4 or len(k_shape) != 4:
        raise Unsupported("FlexAttention on inputs that are not rank 4")
    dtype = np.dtype(ctx.input_dtype(0) or np.float32)
    if dtype.kind != "f":
        raise Unsupported(f"FlexAttention on {dtype.name} inputs")
    heads, kv_heads, head_size = q_shape[1], k_shape[1], q_shape[3]
    if not all(isinstance(d, int) for d in (heads, kv_heads, head_size)):
        raise Unsupported("FlexAttention with a dynamic number of heads or head size")
    scale = ctx.attr("scale")
    root = math.sqrt(float(scale) if scale is not None else 1.0 / math.sqrt(head_size))
    compute = _compute_dtype(ctx, dtype)
    # MindSpore's CPU matmul is float32/float64 only: narrower inputs multiply in float32 and
    # the scores are rounded back to the input type, as the operator computes them
    wide = dtype if dtype in (np.float32, np.float64) else np.dtype(np.float32)
    q, k, v = (_cast(Input(i), dtype, wide) for i in range(3))
    if heads != kv_heads:
        if heads % kv_heads:
            raise Unsupported("FlexAttention whose query heads are not a multiple of K/V heads")
        group = heads // kv_heads
        k = ops.repeat_interleave(k, Lit(group), axis=Lit(1))
        v = ops.repeat_interleave(v, Lit(group), axis=Lit(1))
    scaled_k = ops.swapaxes(k * Lit(root), Lit(-1), Lit(-2))
    scores = ops.matmul(q * Lit(root), scaled_k)
    scores = _cast(_cast(scores, wide, dtype), dtype, compute)
    dims = [q_shape[0], heads, q_shape[2], k_shape[2]]
    scores = _modifier(ctx, "score_mod", "ScoreMod", Temp(scores, "scores"), dims, compute)
    probs = ops.softmax(scores, axis=Lit(-1))
    probs = _modifier(ctx, "prob_mod", "ProbMod", Temp(probs, "probs"), dims, compute)
    out = ops.matmul(probs, _cast(v, wide, compute))
    return _cast(out, compute, np.dtype(ctx.input_dtype(2) or dtype))


def _cast(value, source: np.dtype, target: np.dtype):
    if np.dtype(source) == np.dtype(target):
        return value
    return ops.cast(value, DType(np.dtype(target).name))
