"""Activations: Relu, LeakyRelu, PRelu, Sigmoid, Tanh, Clip, HardSigmoid, HardSwish, Elu, Selu,
Celu, Gelu, Mish, Softplus, Softsign, ThresholdedRelu, Shrink, Swish, SwiGLU, and the softmax
family (Softmax, LogSoftmax, Hardmax)."""

from __future__ import annotations

import math

import numpy as np

from .base import (
    BinOp,
    Call,
    Cell,
    Const,
    DType,
    Input,
    Lit,
    NodeContext,
    Noted,
    Temp,
    Unsupported,
    normalize_axis,
)
from .common import is_static, scalar_or_const
from .registry import mapper
from .syntax import ops

# The parameter-free MindSpore cell that computes an activation call with no keyword arguments,
# for leaf modules of a Sequential (``ops.relu(x)`` -> ``nn.ReLU()``). Each constructor states the
# arguments whose MindSpore default differs from the op: nn.GELU defaults to the tanh
# approximation, ops.gelu (and ONNX's Gelu, PyTorch's nn.GELU) to the exact erf form.
ACTIVATION_CELLS = {
    "ops.relu": "nn.ReLU()",
    "ops.relu6": "nn.ReLU6()",
    "ops.sigmoid": "nn.Sigmoid()",
    "ops.tanh": "nn.Tanh()",
    "ops.hardswish": "nn.HSwish()",
    "ops.hardsigmoid": "nn.HSigmoid()",
    "ops.flatten": "nn.Flatten()",
    "ops.silu": "nn.SiLU()",
    "ops.gelu": "nn.GELU(approximate=False)",
}


@mapper("Relu")
def relu(ctx: NodeContext):
    """Relu -> ops.relu."""
    return ops.relu(Input(0))


@mapper("Sigmoid")
def sigmoid(ctx: NodeContext):
    """Sigmoid -> ops.sigmoid."""
    return ops.sigmoid(Input(0))


@mapper("Tanh")
def tanh(ctx: NodeContext):
    """Tanh -> ops.tanh."""
    return ops.tanh(Input(0))


@mapper("LeakyRelu")
def leaky_relu(ctx: NodeContext):
    """LeakyRelu -> ops.leaky_relu with ONNX's default alpha 0.01."""
    return ops.leaky_relu(Input(0), alpha=Lit(float(ctx.attr("alpha", 0.01))))


@mapper("PRelu")
def prelu(ctx: NodeContext):
    """PRelu -> nn.PReLU when the slope is per channel, else max(x,0) + slope*min(x,0)."""
    slope = ctx.const(1)
    x_shape = ctx.input_shape(0)
    narrow = ctx.input_dtype(0) in (np.float16, np.float32)  # nn.PReLU's kernel types
    if slope is not None and x_shape is not None and len(x_shape) >= 2 and narrow:
        channels = x_shape[1]
        squeezed = np.asarray(slope).reshape(-1)
        # nn.PReLU holds one slope, or one per channel (axis 1) broadcast over the rest.
        per_channel = squeezed.size == channels and slope.ndim >= 1 and slope.shape[0] == channels
        if squeezed.size == 1 or per_channel:
            return Cell(
                "nn.PReLU",
                {"channel": int(squeezed.size), "w": 0.25},
                [Input(0)],
                weights={"w": ctx.weight(1, squeezed.astype(np.float32), "reshape to (channels,)")},
                role="prelu",
            )
    slope_expr = ctx.operand(1)
    positive = ops.relu(Input(0))
    negative = slope_expr * ops.minimum(Input(0), Lit(0.0))
    return positive + negative


@mapper("Clip", until=10)
def clip_attributes(ctx: NodeContext):
    """Clip (opset < 11): bounds as attributes -> ops.clamp."""
    low, high = ctx.attr("min"), ctx.attr("max")
    if low is not None and high is not None and float(low) == 0.0 and float(high) == 6.0:
        return ops.relu6(Input(0))
    kwargs = {}
    if low is not None:
        kwargs["min"] = Lit(float(low))
    if high is not None:
        kwargs["max"] = Lit(float(high))
    return ops.clamp(Input(0), **kwargs)


@mapper("Clip", since=11)
def clip_inputs(ctx: NodeContext):
    """Clip (opset >= 11): bounds as optional inputs -> ops.clamp (ops.relu6 for [0, 6])."""
    kwargs = {}
    is_float = ctx.input_dtype(0) is not None and ctx.input_dtype(0).kind == "f"
    values = []
    for index, key in ((1, "min"), (2, "max")):
        if not ctx.has_input(index):
            values.append(None)
            continue
        value = ctx.const(index)
        if value is None:
            kwargs[key] = Input(index)
            values.append(None)
        else:
            kwargs[key] = scalar_or_const(value, like_float=is_float)
            values.append(float(np.asarray(value).reshape(())))
    if values == [0.0, 6.0] and is_float:
        return ops.relu6(Input(0))
    if not kwargs:
        return Input(0)
    return ops.clamp(Input(0), **kwargs)


@mapper("HardSigmoid")
def hard_sigmoid(ctx: NodeContext):
    """HardSigmoid -> ops.hardsigmoid for PyTorch's slope 1/6, else clamp(alpha*x + beta, 0, 1)."""
    alpha, beta = float(ctx.attr("alpha", 0.2)), float(ctx.attr("beta", 0.5))
    if abs(alpha - 1 / 6) < 1e-6 and abs(beta - 0.5) < 1e-6:
        return ops.hardsigmoid(Input(0))
    scaled = Input(0) * Lit(alpha) + Lit(beta)
    return ops.clamp(scaled, min=Lit(0.0), max=Lit(1.0))


@mapper("HardSwish", since=14)
def hard_swish(ctx: NodeContext):
    """HardSwish -> ops.hardswish."""
    return ops.hardswish(Input(0))


def _may_hold_negative_infinity(ctx: NodeContext, limit: int = 64) -> bool:
    """True when an ``-inf`` constant flows into input 0 (attention masks), looking ``limit`` nodes up."""
    producers = {}
    for node in ctx.graph.nodes:
        for name in node.outputs:
            producers[name] = node
    pending, seen = [ctx.node.inputs[0]], set()
    while pending and len(seen) < limit:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        value = ctx.graph.constants.get(name)
        if value is not None:
            if value.dtype.kind == "f" and np.isneginf(value).any():
                return True
            continue
        node = producers.get(name)
        if node is not None:
            pending.extend(n for n in node.inputs if n)
            for attr in node.attrs.values():
                if (
                    isinstance(attr, np.ndarray)
                    and attr.dtype.kind == "f"
                    and np.isneginf(attr).any()
                ):
                    return True
    return False


def _softmax(ctx: NodeContext, func: str):
    rank = ctx.input_rank(0)
    axis = int(ctx.attr("axis", 1 if ctx.opset < 13 else -1))
    if ctx.opset < 13 and rank > 1:
        axis = axis + rank if axis < 0 else axis
        if axis != rank - 1:
            # Before opset 13 the input is flattened to 2-D at `axis` and normalised over the rest.
            shape = ctx.require_shape(0)
            flat = ops.reshape(Input(0), Lit((int(np.prod(shape[:axis])), -1)))
            back = Lit(tuple(shape)) if is_static(shape) else ops.shape(Input(0))
            return ops.reshape(Call(func, [flat], {"axis": Lit(-1)}), back)
        axis = -1
    if _may_hold_negative_infinity(ctx):
        # MindSpore's CPU softmax zeroes every row after a row that is all -inf (a fully masked
        # attention row); the explicit form keeps the other rows and gives NaN there, as ONNX does.
        shifted = Temp(
            Input(0) - ops.amax(Input(0), axis=Lit(axis), keepdims=Lit(True)),
            "shifted",
        )
        note = "explicit softmax: MindSpore's CPU kernel zeroes the rows after a fully masked row"
        if func == "ops.softmax":
            exp = Temp(ops.exp(shifted), "exp")
            total = ops.sum(exp, dim=Lit(axis), keepdim=Lit(True))
            return Noted(exp / total, note)
        total = ops.sum(ops.exp(shifted), dim=Lit(axis), keepdim=Lit(True))
        return Noted(shifted - ops.log(total), note)
    return Call(func, [Input(0)], {"axis": Lit(axis)})


@mapper("Softmax")
def softmax(ctx: NodeContext):
    """Softmax -> ops.softmax (opsets < 13 flatten at the axis first)."""
    return _softmax(ctx, "ops.softmax")


@mapper("LogSoftmax")
def log_softmax(ctx: NodeContext):
    """LogSoftmax -> ops.log_softmax (opsets < 13 flatten at the axis first)."""
    return _softmax(ctx, "ops.log_softmax")


SELU_ALPHA = 1.67326319217681884765625


SELU_GAMMA = 1.05070102214813232421875


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-7)


def _elu_expr(alpha: float):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""
    negative = Lit(alpha) * ops.expm1(Input(0))
    return ops.where(BinOp(">", Input(0), Lit(0.0)), Input(0), negative)


@mapper("Elu", since=6)
def elu(ctx: NodeContext):
    """Elu -> ops.elu (alpha 1), else where(x > 0, x, alpha * expm1(x)) (MindSpore's elu takes alpha 1 only)."""
    alpha = float(ctx.attr("alpha", 1.0))
    if _close(alpha, 1.0):
        return ops.elu(Input(0))
    return _elu_expr(alpha)


@mapper("Selu", since=6)
def selu(ctx: NodeContext):
    """Selu -> ops.selu with the default alpha/gamma, else gamma * elu(x, alpha) written out."""
    alpha = float(ctx.attr("alpha", SELU_ALPHA))
    gamma = float(ctx.attr("gamma", SELU_GAMMA))
    if _close(alpha, SELU_ALPHA) and _close(gamma, SELU_GAMMA):
        return ops.selu(Input(0))
    inner = ops.elu(Input(0)) if _close(alpha, 1.0) else _elu_expr(alpha)
    return Lit(gamma) * inner


@mapper("Celu", since=12)
def celu(ctx: NodeContext):
    """Celu -> ops.celu(x, alpha)."""
    alpha = float(ctx.attr("alpha", 1.0))
    if alpha == 0.0:
        raise Unsupported("Celu with alpha 0 divides by zero")
    kwargs = {} if alpha == 1.0 else {"alpha": Lit(alpha)}
    return ops.celu(Input(0), **kwargs)


@mapper("Gelu", since=20)
def gelu(ctx: NodeContext):
    """Gelu -> ops.gelu with approximate 'none' or 'tanh'."""
    approximate = ctx.attr("approximate", "none")
    if isinstance(approximate, bytes):
        approximate = approximate.decode()
    if approximate not in ("none", "tanh"):
        raise Unsupported(f"Gelu approximate={approximate!r}")
    kwargs = {"approximate": Lit("tanh")} if approximate == "tanh" else {}
    return ops.gelu(Input(0), **kwargs)


@mapper("Mish", since=18)
def mish(ctx: NodeContext):
    """Mish -> ops.mish."""
    return ops.mish(Input(0))


@mapper("Softplus")
def softplus(ctx: NodeContext):
    """Softplus -> ops.softplus (ONNX has no beta/threshold: log(1 + exp(x)))."""
    return ops.softplus(Input(0))


@mapper("Softsign")
def softsign(ctx: NodeContext):
    """Softsign -> ops.softsign."""
    return ops.softsign(Input(0))


@mapper("ThresholdedRelu", since=10)
def thresholded_relu(ctx: NodeContext):
    """ThresholdedRelu -> ops.threshold(x, alpha, 0.0): x where x > alpha, else 0."""
    alpha = float(ctx.attr("alpha", 1.0))
    return ops.threshold(Input(0), Lit(alpha), Lit(0.0))


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
    has_kernel = dtype is None or np.dtype(dtype) in (np.float16, np.float32)
    if has_kernel and lambd >= 0:
        if bias == 0.0:
            return ops.hardshrink(Input(0), **({"lambd": Lit(lambd)} if lambd != 0.5 else {}))
        if bias == lambd:
            return ops.softshrink(Input(0), **({"lambd": Lit(lambd)} if lambd != 0.5 else {}))
    x = Input(0)
    integral_bias = bias.is_integer()
    if not is_float and not integral_bias:
        x = ops.cast(x, DType("float32"))
    bias_lit = Lit(int(bias)) if not is_float and integral_bias else Lit(bias)
    lambd_lit = Lit(lambd)
    inner = ops.where(BinOp(">", x, lambd_lit), x - bias_lit, ops.zeros_like(x))
    result = ops.where(BinOp("<", x, Lit(-lambd)), x + bias_lit, inner)
    if not is_float and not integral_bias:
        result = ops.cast(result, DType(np.dtype(dtype).name))
    return result


def _hardmax_axis(ctx: NodeContext, axis: int):
    shape = ctx.require_shape(0)
    axis = normalize_axis(axis, len(shape))
    dtype = np.dtype(ctx.input_dtype(0) or np.float32)
    # MindSpore's one_hot makes float16/float32 only: other dtypes are made in float32 and cast.
    made = dtype if dtype in (np.float16, np.float32) else np.dtype(np.float32)
    on, off = Const(np.array(1, made)), Const(np.array(0, made))

    def finish(expr):
        if made == dtype:
            return expr
        note = (
            f"MindSpore's one_hot makes float16/float32 only: made in float32, cast to {dtype.name}"
        )
        return Noted(ops.cast(expr, DType(dtype.name)), note)

    return shape, axis, on, off, finish


@mapper("Hardmax", until=12)
def hardmax_flatten(ctx: NodeContext):
    """Hardmax (opset < 13): one-hot of the argmax over the input flattened to 2-D at ``axis``."""
    shape, axis, on, off, finish = _hardmax_axis(ctx, int(ctx.attr("axis", 1)))
    if axis == len(shape) - 1:
        index = ops.argmax(Input(0), dim=Lit(-1))
        return finish(ops.one_hot(index, Lit(int(shape[-1])), on, off, axis=Lit(-1)))
    depth = int(np.prod(shape[axis:], dtype=np.int64))
    flat = ops.reshape(Input(0), Lit((int(np.prod(shape[:axis], dtype=np.int64)), depth)))
    index = ops.argmax(flat, dim=Lit(-1))
    hot = ops.one_hot(index, Lit(depth), on, off, axis=Lit(-1))
    return finish(ops.reshape(hot, Lit(tuple(int(d) for d in shape))))


@mapper("Hardmax", since=13)
def hardmax(ctx: NodeContext):
    """Hardmax (opset >= 13): one-hot of the argmax along ``axis`` (first maximum wins)."""
    shape, axis, on, off, finish = _hardmax_axis(ctx, int(ctx.attr("axis", -1)))
    out_axis = -1 if axis == len(shape) - 1 else axis
    index = ops.argmax(Input(0), dim=Lit(out_axis))
    return finish(ops.one_hot(index, Lit(int(shape[axis])), on, off, axis=Lit(out_axis)))


@mapper("Swish", since=24)
def swish(ctx: NodeContext):
    """Swish -> ops.silu (alpha 1), else x * sigmoid(alpha * x)."""
    alpha = float(ctx.attr("alpha", 1.0))
    if alpha == 1.0:
        return ops.silu(Input(0))
    return Input(0) * ops.sigmoid(Lit(alpha) * Input(0))


@mapper("SwiGLU", since=28)
def swiglu(ctx: NodeContext):
    """SwiGLU -> a · sigmoid(alpha · a) · b."""
    alpha = float(ctx.attr("alpha", 1.0))
    gate_in = Input(0) if alpha == 1.0 else Input(0) * Lit(alpha)
    return Input(0) * ops.sigmoid(gate_in) * ctx.operand(1)
