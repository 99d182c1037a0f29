"""More activations: Elu, Selu, Celu, Gelu, Mish, Softplus, Softsign, ThresholdedRelu, Shrink,
Hardmax, Swish."""

from __future__ import annotations

import math

import numpy as np

from .base import BinOp, Call, Const, DType, Input, Lit, NodeContext, Unsupported, normalize_axis
from .registry import mapper

SELU_ALPHA = 1.67326319217681884765625
SELU_GAMMA = 1.05070102214813232421875


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-7)


def _elu_expr(alpha: float):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""
    negative = BinOp("*", Lit(alpha), Call("ops.expm1", [Input(0)]))
    return Call("ops.where", [BinOp(">", Input(0), Lit(0.0)), Input(0), negative])


@mapper("Elu", since=6)
def elu(ctx: NodeContext):
    """Elu -> ops.elu (alpha 1), else where(x > 0, x, alpha * expm1(x)) (MindSpore's elu takes alpha 1 only)."""
    alpha = float(ctx.attr("alpha", 1.0))
    if _close(alpha, 1.0):
        return Call("ops.elu", [Input(0)])
    return _elu_expr(alpha)


@mapper("Selu", since=6)
def selu(ctx: NodeContext):
    """Selu -> ops.selu with the default alpha/gamma, else gamma * elu(x, alpha) written out."""
    alpha = float(ctx.attr("alpha", SELU_ALPHA))
    gamma = float(ctx.attr("gamma", SELU_GAMMA))
    if _close(alpha, SELU_ALPHA) and _close(gamma, SELU_GAMMA):
        return Call("ops.selu", [Input(0)])
    inner = Call("ops.elu", [Input(0)]) if _close(alpha, 1.0) else _elu_expr(alpha)
    return BinOp("*", Lit(gamma), inner)


@mapper("Celu", since=12)
def celu(ctx: NodeContext):
    """Celu -> ops.celu(x, alpha)."""
    alpha = float(ctx.attr("alpha", 1.0))
    if alpha == 0.0:
        raise Unsupported("Celu with alpha 0 divides by zero")
    kwargs = {} if alpha == 1.0 else {"alpha": Lit(alpha)}
    return Call("ops.celu", [Input(0)], kwargs)


@mapper("Gelu", since=20)
def gelu(ctx: NodeContext):
    """Gelu -> ops.gelu with approximate 'none' or 'tanh'."""
    approximate = ctx.attr("approximate", "none")
    if isinstance(approximate, bytes):
        approximate = approximate.decode()
    if approximate not in ("none", "tanh"):
        raise Unsupported(f"Gelu approximate={approximate!r}")
    kwargs = {"approximate": Lit("tanh")} if approximate == "tanh" else {}
    return Call("ops.gelu", [Input(0)], kwargs)


@mapper("Mish", since=18)
def mish(ctx: NodeContext):
    """Mish -> ops.mish."""
    return Call("ops.mish", [Input(0)])


@mapper("Softplus")
def softplus(ctx: NodeContext):
    """Softplus -> ops.softplus (ONNX has no beta/threshold: log(1 + exp(x)))."""
    return Call("ops.softplus", [Input(0)])


@mapper("Softsign")
def softsign(ctx: NodeContext):
    """Softsign -> ops.softsign."""
    return Call("ops.softsign", [Input(0)])


@mapper("ThresholdedRelu", since=10)
def thresholded_relu(ctx: NodeContext):
    """ThresholdedRelu -> ops.threshold(x, alpha, 0.0): x where x > alpha, else 0."""
    alpha = float(ctx.attr("alpha", 1.0))
    return Call("ops.threshold", [Input(0), Lit(alpha), Lit(0.0)])


@mapper("Shrink", since=9)
def shrink(ctx: NodeContext):
    """Shrink -> ops.hardshrink (bias 0) / ops.softshrink (bias == lambd), else the where() form.

    y = x - bias where x > lambd, x + bias where x < -lambd, 0 elsewhere. Integer inputs use
    the where() form; their results are computed in float and cast back when the bias is fractional.
    """
    bias = float(ctx.attr("bias", 0.0))
    lambd = float(ctx.attr("lambd", 0.5))
    dtype = ctx.input_dtype(0)
    is_float = dtype is None or np.dtype(dtype).kind == "f"
    if is_float and lambd >= 0:
        if bias == 0.0:
            return Call("ops.hardshrink", [Input(0)], {"lambd": Lit(lambd)} if lambd != 0.5 else {})
        if bias == lambd:
            return Call("ops.softshrink", [Input(0)], {"lambd": Lit(lambd)} if lambd != 0.5 else {})
    x = Input(0)
    integral_bias = bias.is_integer()
    if not is_float and not integral_bias:
        x = Call("ops.cast", [x, DType("float32")])
    bias_lit = Lit(int(bias)) if not is_float and integral_bias else Lit(bias)
    lambd_lit = Lit(lambd)
    inner = Call(
        "ops.where",
        [BinOp(">", x, lambd_lit), BinOp("-", x, bias_lit), Call("ops.zeros_like", [x])],
    )
    result = Call("ops.where", [BinOp("<", x, Lit(-lambd)), BinOp("+", x, bias_lit), inner])
    if not is_float and not integral_bias:
        result = Call("ops.cast", [result, DType(np.dtype(dtype).name)])
    return result


def _hardmax_axis(ctx: NodeContext, axis: int):
    shape = ctx.require_shape(0)
    axis = normalize_axis(axis, len(shape))
    dtype = np.dtype(ctx.input_dtype(0) or np.float32)
    # MindSpore's one_hot makes float16/float32 only: other dtypes are made in float32 and cast.
    made = dtype if dtype in (np.float16, np.float32) else np.dtype(np.float32)
    on, off = Const(np.array(1, made)), Const(np.array(0, made))

    def finish(expr):
        return expr if made == dtype else Call("ops.cast", [expr, DType(dtype.name)])

    return shape, axis, on, off, finish


@mapper("Hardmax", until=12)
def hardmax_flatten(ctx: NodeContext):
    """Hardmax (opset < 13): one-hot of the argmax over the input flattened to 2-D at ``axis``."""
    shape, axis, on, off, finish = _hardmax_axis(ctx, int(ctx.attr("axis", 1)))
    if axis == len(shape) - 1:
        index = Call("ops.argmax", [Input(0)], {"dim": Lit(-1)})
        return finish(Call("ops.one_hot", [index, Lit(int(shape[-1])), on, off], {"axis": Lit(-1)}))
    depth = int(np.prod(shape[axis:], dtype=np.int64))
    flat = Call("ops.reshape", [Input(0), Lit((int(np.prod(shape[:axis], dtype=np.int64)), depth))])
    index = Call("ops.argmax", [flat], {"dim": Lit(-1)})
    hot = Call("ops.one_hot", [index, Lit(depth), on, off], {"axis": Lit(-1)})
    return finish(Call("ops.reshape", [hot, Lit(tuple(int(d) for d in shape))]))


@mapper("Hardmax", since=13)
def hardmax(ctx: NodeContext):
    """Hardmax (opset >= 13): one-hot of the argmax along ``axis`` (first maximum wins)."""
    shape, axis, on, off, finish = _hardmax_axis(ctx, int(ctx.attr("axis", -1)))
    out_axis = -1 if axis == len(shape) - 1 else axis
    index = Call("ops.argmax", [Input(0)], {"dim": Lit(out_axis)})
    return finish(
        Call("ops.one_hot", [index, Lit(int(shape[axis])), on, off], {"axis": Lit(out_axis)})
    )


@mapper("Swish", since=24)
def swish(ctx: NodeContext):
    """Swish -> ops.silu (alpha 1), else x * sigmoid(alpha * x)."""
    alpha = float(ctx.attr("alpha", 1.0))
    if alpha == 1.0:
        return Call("ops.silu", [Input(0)])
    return BinOp("*", Input(0), Call("ops.sigmoid", [BinOp("*", Lit(alpha), Input(0))]))
