"""Linear algebra: Gemm and MatMul (``nn.Dense`` when the weight is a constant)."""

from __future__ import annotations

import numpy as np

from .base import BinOp, Call, Cell, Input, Lit, NodeContext
from .registry import mapper


def _dense(
    ctx: NodeContext, x, weight_index: int, weight_out_in: np.ndarray, transform: str, bias=None
):
    out_features, in_features = (int(d) for d in weight_out_in.shape)
    weights = {"weight": ctx.weight(weight_index, weight_out_in, transform)}
    kwargs = {"in_channels": in_features, "out_channels": out_features}
    if bias is None:
        kwargs["has_bias"] = False
    else:
        weights["bias"] = bias
    return Cell("nn.Dense", kwargs=kwargs, args=[x], weights=weights, role="fc")


@mapper("Gemm")
def gemm(ctx: NodeContext):
    """Gemm -> nn.Dense for a constant B (with C as bias when it fits), else ops.matmul."""
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    trans_a, trans_b = int(ctx.attr("transA", 0)), int(ctx.attr("transB", 0))
    a = Call("ops.transpose", [Input(0), Lit((1, 0))]) if trans_a else Input(0)
    b_value = ctx.const(1)
    c_value = ctx.const(2) if ctx.has_input(2) else None
    bias = None
    if b_value is not None:
        weight = b_value if trans_b else b_value.T
        out_features = weight.shape[0]
        bias_fits = (
            c_value is not None
            and alpha == 1.0
            and beta == 1.0
            and c_value.size == out_features
            and c_value.shape[-1:] == (out_features,)
        )
        if bias_fits:
            bias = ctx.weight(
                2,
                c_value.reshape(out_features),
                "" if c_value.ndim == 1 else f"reshape {list(c_value.shape)} to [{out_features}]",
            )
        product = _dense(ctx, a, 1, weight, "" if trans_b else "transpose(1, 0)", bias)
    else:
        b = Call("ops.transpose", [Input(1), Lit((1, 0))]) if trans_b else Input(1)
        product = Call("ops.matmul", [a, b])
    if alpha != 1.0:
        product = BinOp("*", product, Lit(alpha))
    if ctx.has_input(2) and bias is None:
        c = ctx.operand(2)
        product = BinOp("+", product, c if beta == 1.0 else BinOp("*", c, Lit(beta)))
    return product


@mapper("MatMul")
def matmul(ctx: NodeContext):
    """MatMul -> nn.Dense (no bias) for a constant 2-D right operand, else ops.matmul."""
    b_value = ctx.const(1)
    a_shape = ctx.input_shape(0)
    floats = b_value is not None and b_value.dtype.kind == "f"
    if (
        floats
        and b_value.ndim == 2
        and a_shape is not None
        and len(a_shape) >= 2
        and not ctx.is_const(0)
    ):
        return _dense(ctx, Input(0), 1, b_value.T, "transpose(1, 0)")
    return Call("ops.matmul", [ctx.operand(0), ctx.operand(1)])
