"""onnxruntime's fused float operators (domain ``com.microsoft``) as the layers they fuse.

onnxruntime's transformer optimizer and its graph optimizations fuse common subgraphs into
single operators: Gelu variants, bias additions, MatMul/Gemm/Conv followed by an activation,
layer normalization with a residual (``SkipLayerNormalization``) and the embedding sum of BERT
(``EmbedLayerNormalization``). Each becomes what a person would write: an ``nn.LayerNorm``
holding gamma/beta called on ``x + skip``, an ``nn.Dense`` or ``nn.Conv2d`` followed by the
activation, ``nn.Embedding`` tables. Semantics follow onnxruntime's ContribOperators.md.

The LayerNormalization and SimplifiedLayerNormalization that onnxruntime registers in the
default ONNX domain below opset 17 are mapped here too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .base import (
    BinOp,
    Cell,
    Input,
    Lit,
    NodeContext,
    Outputs,
    Temp,
    Unsupported,
    Weight,
)
from .common import cast_to, dim_expr
from .conv import conv
from .linear import gemm
from .normalization import layer_norm, rms_normalization
from .registry import mapper
from .syntax import ops

MS_DOMAIN = "com.microsoft"


def _text(value, default: str = "") -> str:
    if value is None:
        return default
    return value.decode() if isinstance(value, bytes) else str(value)


# --- activations ------------------------------------------------------------------------------


@mapper("Gelu", domain=MS_DOMAIN)
def ms_gelu(ctx: NodeContext):
    """Gelu -> ops.gelu (the exact, erf form)."""
    return ops.gelu(Input(0))


@mapper("BiasGelu", domain=MS_DOMAIN)
def bias_gelu(ctx: NodeContext):
    """BiasGelu(A, B) -> ops.gelu(A + B) (the erf form)."""
    return ops.gelu(Input(0) + ctx.operand(1))


@mapper("FastGelu", domain=MS_DOMAIN)
def fast_gelu(ctx: NodeContext):
    """FastGelu(X, bias) -> ops.gelu(X + bias, approximate='tanh')."""
    x = Input(0) + ctx.operand(1) if ctx.has_input(1) else Input(0)
    return ops.gelu(x, approximate=Lit("tanh"))


@mapper("QuickGelu", domain=MS_DOMAIN)
def quick_gelu(ctx: NodeContext):
    """QuickGelu -> x * sigmoid(alpha * x)."""
    alpha = float(ctx.attr("alpha", 1.702))
    scaled = Input(0) if alpha == 1.0 else Input(0) * Lit(alpha)
    return Input(0) * ops.sigmoid(scaled)


@mapper("BiasAdd", domain=MS_DOMAIN)
def bias_add(ctx: NodeContext):
    """BiasAdd(X, bias, skip) -> X + bias + skip."""
    return Input(0) + ctx.operand(1) + Input(2)


@mapper("GemmFastGelu", domain=MS_DOMAIN)
def gemm_fast_gelu(ctx: NodeContext):
    """GemmFastGelu(X, W, bias) -> ops.gelu(nn.Dense(X), approximate='tanh') (a constant W), else
    ops.gelu(X @ W + bias, approximate='tanh')."""
    weight = ctx.const(1)
    if weight is not None and weight.ndim == 2 and weight.dtype.kind == "f":
        kwargs = {"in_channels": int(weight.shape[0]), "out_channels": int(weight.shape[1])}
        weights = {"weight": ctx.weight(1, weight.T, "transpose(1, 0)")}
        if ctx.has_input(2) and ctx.is_const(2):
            weights["bias"] = ctx.weight(2)
        else:
            kwargs["has_bias"] = False
        value = Cell("nn.Dense", kwargs=kwargs, args=[Input(0)], weights=weights, role="fc")
        if ctx.has_input(2) and not ctx.is_const(2):
            value = value + Input(2)
    else:
        value = ops.matmul(Input(0), ctx.operand(1))
        if ctx.has_input(2):
            value = value + ctx.operand(2)
    return ops.gelu(value, approximate=Lit("tanh"))


def activation(name: str, value, alpha: float | None = None, beta: float | None = None):
    """``value`` through the activation a fused onnxruntime operator names (FusedConv,
    FusedGemm: ``activation`` and its ``activation_alpha``/``activation_beta``)."""
    if name in ("", "Identity"):
        return value
    if name == "Relu":
        return ops.relu(value)
    if name == "Sigmoid":
        return ops.sigmoid(value)
    if name == "Tanh":
        return ops.tanh(value)
    if name == "LeakyRelu":
        slope = 0.01 if alpha is None else alpha
        return ops.leaky_relu(value, Lit(slope))
    if name == "Clip":
        return ops.clamp(value, Lit(alpha), Lit(beta))
    if name == "HardSigmoid":
        a, b = (0.2 if alpha is None else alpha), (0.5 if beta is None else beta)
        return ops.clamp(value * Lit(a) + Lit(b), Lit(0.0), Lit(1.0))
    raise Unsupported(f"fused activation {name!r}")


@mapper("FusedConv", domain=MS_DOMAIN)
def fused_conv(ctx: NodeContext):
    """FusedConv -> the Conv cell (plus the optional sum input Z) through its activation."""
    name = _text(ctx.attr("activation"))
    params = [float(v) for v in ctx.attr("activation_params", [])]
    out = conv(ctx)
    if ctx.has_input(3):
        out = out + Input(3)
    alpha = params[0] if params else None
    beta = params[1] if len(params) > 1 else None
    return activation(name, out, alpha, beta)


@mapper("FusedGemm", domain=MS_DOMAIN)
def fused_gemm(ctx: NodeContext):
    """FusedGemm -> the Gemm (an nn.Dense when B is constant) through its activation."""
    name = _text(ctx.attr("activation"))
    alpha = ctx.attr("activation_alpha")
    beta = ctx.attr("activation_beta")
    return activation(
        name,
        gemm(ctx),
        None if alpha is None else float(alpha),
        None if beta is None else float(beta),
    )


@mapper("FusedMatMul", domain=MS_DOMAIN)
def fused_matmul(ctx: NodeContext):
    """FusedMatMul -> alpha * ops.matmul(A, B) with A and/or B transposed in their last two axes."""
    if int(ctx.attr("transBatchA", 0)) or int(ctx.attr("transBatchB", 0)):
        raise Unsupported("FusedMatMul with transBatchA/transBatchB")
    operands = []
    for index, flag in ((0, "transA"), (1, "transB")):
        value = ctx.operand(index)
        if int(ctx.attr(flag, 0)):
            rank = ctx.input_rank(index)
            if rank < 2:
                raise Unsupported(f"FusedMatMul {flag} on a rank-{rank} operand")
            value = ops.swapaxes(value, Lit(-1), Lit(-2))
        operands.append(value)
    product = ops.matmul(*operands)
    alpha = float(ctx.attr("alpha", 1.0))
    return product if alpha == 1.0 else product * Lit(alpha)


# --- normalization ---------------------------------------------------------------------------


@mapper("LayerNormalization", since=1, until=16)
def layer_norm_before_17(ctx: NodeContext):
    """LayerNormalization below opset 17 (onnxruntime's own definition in the ONNX domain, which
    its optimizer writes into opset-12..16 models) -> nn.LayerNorm, as from opset 17."""
    return layer_norm(ctx)


@mapper("SimplifiedLayerNormalization", since=1)
def simplified_layer_norm(ctx: NodeContext):
    """SimplifiedLayerNormalization (RMS norm) -> x * rsqrt(mean(x², axes from axis) + eps) * scale."""
    if any(ctx.output_used(i) for i in (1, 2)):
        raise Unsupported("SimplifiedLayerNormalization's inv_std_var output")
    return rms_normalization(ctx)


def _residual_sum(ctx: NodeContext, bias_index: int):
    """input + skip (+ bias): the value a Skip*LayerNormalization normalizes."""
    total = Input(0) + Input(1)
    if ctx.has_input(bias_index):
        total = total + ctx.operand(bias_index)
    return Temp(total, "residual") if ctx.output_used(3) else total


def _hidden_size(ctx: NodeContext, gamma_index: int) -> int:
    gamma = ctx.require_const(gamma_index, "gamma")
    return int(gamma.size)


@mapper("SkipLayerNormalization", domain=MS_DOMAIN)
def skip_layer_norm(ctx: NodeContext):
    """SkipLayerNormalization -> self.layer_norm(x + skip [+ bias]) with an nn.LayerNorm holding
    gamma/beta; the optional fourth output is the sum itself."""
    if ctx.output_used(1) or ctx.output_used(2):
        raise Unsupported("SkipLayerNormalization's mean/inv_std_var outputs")
    hidden = _hidden_size(ctx, 2)
    total = _residual_sum(ctx, 4)
    gamma = ctx.require_const(2, "gamma").reshape(hidden)
    if ctx.has_input(3):
        beta = ctx.weight(3, ctx.require_const(3, "beta").reshape(hidden))
    else:
        beta = Weight(np.zeros(hidden, gamma.dtype), "", "zeros (no beta in the source)")
    norm = Cell(
        "nn.LayerNorm",
        kwargs={"normalized_shape": (hidden,), "epsilon": float(ctx.attr("epsilon", 1e-12))},
        args=[total],
        weights={"gamma": ctx.weight(2, gamma), "beta": beta},
        role="layer_norm",
    )
    return Outputs([norm, None, None, total if ctx.output_used(3) else None][: ctx.num_outputs])


@mapper("SkipSimplifiedLayerNormalization", domain=MS_DOMAIN)
def skip_simplified_layer_norm(ctx: NodeContext):
    """SkipSimplifiedLayerNormalization -> RMS norm of x + skip [+ bias], times gamma; the
    optional fourth output is the sum."""
    if ctx.output_used(1) or ctx.output_used(2):
        raise Unsupported("SkipSimplifiedLayerNormalization's mean/inv_std_var outputs")
    total = _residual_sum(ctx, 3)
    held = total if isinstance(total, Temp) else Temp(total, "residual")
    eps = float(ctx.attr("epsilon", 1e-12))
    mean_sq = ops.mean(BinOp("*", held, held), axis=Lit(-1), keep_dims=Lit(True))
    normalized = held * ops.rsqrt(mean_sq + Lit(eps))
    out = normalized * ctx.operand(2)
    return Outputs([out, None, None, total if ctx.output_used(3) else None][: ctx.num_outputs])


def _float_table(ctx: NodeContext, index: int) -> np.ndarray:
    return np.asarray(ctx.require_const(index, "the embedding table"))


@dataclass
class EmbeddingInputs:
    """Where an Embed*LayerNormalization finds its tables and how they become float:
    ``table(ctx, index)`` gives a table's float value, ``note`` says how it was made."""

    table: Callable[[NodeContext, int], np.ndarray] = _float_table
    note: str = ""
    position_ids: int | None = 8


def _embedding(ctx: NodeContext, spec: EmbeddingInputs, index: int, ids, role: str) -> Cell:
    table = spec.table(ctx, index)
    if table.ndim != 2:
        raise Unsupported(f"an embedding table of rank {table.ndim}")
    return Cell(
        "nn.Embedding",
        kwargs={"vocab_size": int(table.shape[0]), "embedding_size": int(table.shape[1])},
        args=[ids],
        weights={"embedding_table": ctx.weight(index, table, spec.note)},
        role=role,
    )


def _positions(ctx: NodeContext, position_ids: int | None):
    """Position ids: the input when given (broadcast over the batch), else 0..S-1."""
    if position_ids is not None and ctx.has_input(position_ids):
        return Input(position_ids)
    seq = dim_expr(ctx.require_shape(0)[1], 0, 1)
    return ops.arange(Lit(seq) if isinstance(seq, int) else seq)


def embedding_layer_norm(ctx: NodeContext, spec: EmbeddingInputs) -> Outputs:
    """Word + position (+ segment) nn.Embedding cells (inputs 2, 3, 4 for ids 0, positions and
    segments 1) through an nn.LayerNorm (gamma 5, beta 6); the mask_index output counts the
    unmasked tokens of each row (mask 7); output 2 is the sum of the embeddings."""
    total = BinOp(
        "+",
        _embedding(ctx, spec, 2, Input(0), "word_embeddings"),
        _embedding(ctx, spec, 3, _positions(ctx, spec.position_ids), "position_embeddings"),
    )
    if ctx.has_input(1) and ctx.has_input(4):
        total = total + _embedding(ctx, spec, 4, Input(1), "token_type_embeddings")
    if ctx.output_used(2):
        total = Temp(total, "embeddings")
    gamma, beta = spec.table(ctx, 5).reshape(-1), spec.table(ctx, 6).reshape(-1)
    norm = Cell(
        "nn.LayerNorm",
        kwargs={"normalized_shape": (gamma.size,), "epsilon": float(ctx.attr("epsilon", 1e-12))},
        args=[total],
        weights={
            "gamma": ctx.weight(5, gamma, spec.note),
            "beta": ctx.weight(6, beta, spec.note),
        },
        role="layer_norm",
    )
    mask_index = None
    if ctx.output_used(1):
        if not ctx.has_input(7):
            raise Unsupported("the mask_index output without a mask input")
        mask_index = cast_to(ops.sum(cast_to(Input(7), np.int32), Lit(1)), np.int32)
    exprs = [norm, mask_index, total if ctx.output_used(2) else None]
    return Outputs(exprs[: max(ctx.num_outputs, 1)])


@mapper("EmbedLayerNormalization", domain=MS_DOMAIN)
def embed_layer_norm(ctx: NodeContext):
    """EmbedLayerNormalization -> word + position (+ segment) embeddings (nn.Embedding cells)
    through an nn.LayerNorm; the mask_index output is the number of unmasked tokens per row."""
    return embedding_layer_norm(ctx, EmbeddingInputs())
