"""Scaled dot-product attention written as mindnlp writes it.

:func:`sdpa_expression` is the one rendering of ``softmax(q @ kᵀ * scale + bias) @ v`` on
heads-first tensors (grouped key/value heads repeated, fully masked rows kept at zero where
MindSpore's softmax would spoil the whole tensor). The fused node of
``mindconverter/passes/fuse_attention.py`` (``ScaledDotProductAttention`` in the internal
domain) maps through it; mappers of other attention operators can call it too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..graph.internal_domain import DOMAIN
from .base import (
    BinOp,
    Call,
    Cell,
    Expr,
    Input,
    Lit,
    Method,
    NodeContext,
    Outputs,
    Temp,
    Unsupported,
)
from .registry import mapper
from .syntax import ops


@dataclass(frozen=True)
class SdpaOptions:
    """How the attention is computed: the score scale, query heads per key/value head, and
    whether rows the bias masks fully must give zeros (the exporter's NaN guard), and the cap of
    Gemma-2's soft-capped scores."""

    scale: float
    head_dim: int | None = None
    kv_groups: int = 1
    masked_rows: bool = False
    softcap: float = 0.0  # Gemma-2's cap on the scores (0: none)
    dropout: float | None = None  # the probabilities' dropout ratio (None: no dropout layer)


def _scaled(product: Expr, options: SdpaOptions) -> Expr:
    """``product / math.sqrt(head_dim)`` when that is the scale, else ``product * scale``."""
    if options.head_dim and math.isclose(
        options.scale, 1.0 / math.sqrt(options.head_dim), rel_tol=1e-6
    ):
        return product / Call("math.sqrt", [Lit(options.head_dim)])
    if math.isclose(options.scale, 1.0, rel_tol=1e-7):
        return product
    return product * Lit(options.scale)


def _added(scores: Expr, bias: Expr) -> Expr:
    """``scores + a + b``: each bias term added in turn (left to right, as exported)."""
    if isinstance(bias, BinOp) and bias.op == "+":
        return BinOp("+", _added(scores, bias.left), bias.right)
    return BinOp("+", scores, bias)


def sdpa_expression(q: Expr, k: Expr, v: Expr, bias: Expr | None, options: SdpaOptions) -> Expr:
    """``softmax(q @ kᵀ * scale + bias, axis=-1) @ v`` on (..., heads, seq, head_dim) tensors."""
    return sdpa_parts(q, k, v, bias, options)[0]


def sdpa_parts(q: Expr, k: Expr, v: Expr, bias: Expr | None, options: SdpaOptions):
    """The context ``softmax(q @ kᵀ * scale + bias, axis=-1) @ v`` and the probabilities."""
    if options.kv_groups > 1:
        k = Temp(ops.repeat_interleave(k, Lit(options.kv_groups), axis=Lit(1)), "k")
        # the values' repeat is short enough to read inside the product that uses it
        v = ops.repeat_interleave(v, Lit(options.kv_groups), axis=Lit(1))
    product = ops.matmul(q, Method(k, "swapaxes", [Lit(-1), Lit(-2)]))
    scaled = _scaled(product, options)
    if options.softcap:  # logit soft-capping: cap * tanh(scores / cap)
        cap = Lit(options.softcap)
        scaled = ops.tanh(scaled / cap) * cap
    scores = Temp(scaled, "scores")
    logits = scores if bias is None else _added(scores, bias)
    if not (options.masked_rows and bias is not None):
        probs = Temp(ops.softmax(logits, axis=Lit(-1)), "probs")
    else:
        # the script's masked_softmax keeps PyTorch's zeros for fully masked rows (its comment
        # says why)
        probs = Temp(Call("masked_softmax", [scores, bias]), "probs")
    weights: Expr = probs
    if options.dropout is not None:  # a training-mode export: HF's attention dropout
        weights = Cell("nn.Dropout", {"p": options.dropout}, [probs], role="dropout")
    return ops.matmul(weights, v), probs


@mapper("ScaledDotProductAttention", domain=DOMAIN)
def scaled_dot_product_attention(ctx: NodeContext):
    """ScaledDotProductAttention (fused by passes/fuse_attention.py) -> matmul, softmax, matmul."""
    q_shape = ctx.input_shape(0)
    if q_shape is None or len(q_shape) < 2:
        raise Unsupported("attention needs the query's rank")
    head_dim = q_shape[-1] if isinstance(q_shape[-1], int) else None
    options = SdpaOptions(
        scale=float(ctx.attr("scale", 1.0)),
        head_dim=head_dim,
        kv_groups=int(ctx.attr("kv_groups", 1)),
        masked_rows=bool(int(ctx.attr("masked_rows", 0))),
        softcap=float(ctx.attr("softcap", 0.0)),
        dropout=None if ctx.attr("dropout", None) is None else float(ctx.attr("dropout")),
    )
    # several biases (a mask and ALiBi) are added one after the other, as the exporter did
    bias: Expr | None = None
    for index in range(3, len(ctx.node.inputs)):
        if ctx.has_input(index):
            bias = Input(index) if bias is None else bias + Input(index)
    if (
        bias is not None
        and len(ctx.node.inputs) > 4
        and any(ctx.input_dtype(i) == np.dtype(bool) for i in range(3, len(ctx.node.inputs)))
    ):
        raise Unsupported("a boolean attention mask is read alone")
    if bias is not None and ctx.input_dtype(3) == np.dtype(bool):
        # a mask of the positions to keep (passes/tidy.py): masked_softmax reads it as it is
        if not options.masked_rows:
            raise Unsupported("a boolean attention mask needs the fully-masked-rows softmax")
    context, probs = sdpa_parts(Input(0), Input(1), Input(2), bias, options)
    if ctx.num_outputs > 1 and ctx.has_output(1):  # the weights are read too
        return Outputs([context, probs])
    return context
