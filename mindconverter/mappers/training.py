"""Optimizer steps of the ``ai.onnx.preview.training`` domain: Adagrad, Adam and Momentum.

Each node updates one or more tensors X from their gradients G and optimizer state; the inputs
are ``R`` (learning rate), ``T`` (update count), then the tensors in groups (all X, all G, ...),
and the outputs come grouped the same way. The update rules are written out elementwise.
"""

from __future__ import annotations

from .base import BinOp, DType, Input, Lit, NodeContext, Outputs, Temp, Unsupported
from .registry import mapper
from .syntax import ops

DOMAIN = "ai.onnx.preview.training"


def _groups(ctx: NodeContext, per_tensor: int) -> int:
    """How many tensors the node updates (inputs after R and T come ``per_tensor`` groups)."""
    count, rest = divmod(ctx.num_inputs - 2, per_tensor)
    if rest or count == 0:
        raise Unsupported(f"{ctx.num_inputs} inputs do not form groups of {per_tensor} tensors")
    return count


def _times(factor: float, value):
    return value if factor == 1.0 else Lit(factor) * value


def _regularized_gradient(ctx: NodeContext, x, g):
    """``norm_coefficient * X + G`` (the gradient of the L2 penalty added)."""
    norm = float(ctx.attr("norm_coefficient", 0.0))
    if norm == 0.0:
        return g
    return Temp(Lit(norm) * x + g, "g_regularized")


def _float(value):
    """A rank-0 count or rate as float32 (``T`` is int64)."""
    return ops.cast(value, DType("float32"))


@mapper("Adagrad", domain=DOMAIN)
def adagrad(ctx: NodeContext):
    """Adagrad: ``H += G**2``, ``X -= r * G / (sqrt(H) + epsilon)`` with
    ``r = R / (1 + T * decay_factor)``."""
    count = _groups(ctx, 3)
    decay = float(ctx.attr("decay_factor", 0.0))
    epsilon = float(ctx.attr("epsilon", 0.0))
    rate = Input(0)
    if decay:
        rate = Temp(Input(0) / (Lit(1.0) + _times(decay, _float(Input(1)))), "rate")
    new_x, new_h = [], []
    for i in range(count):
        x, g, h = Input(2 + i), Input(2 + count + i), Input(2 + 2 * count + i)
        g = _regularized_gradient(ctx, x, g)
        h_new = Temp(h + BinOp("*", g, g), "h_new")
        scale = ops.sqrt(h_new) + Lit(epsilon)
        new_x.append(x - rate * g / scale)
        new_h.append(h_new)
    return Outputs(new_x + new_h)


@mapper("Adam", domain=DOMAIN)
def adam(ctx: NodeContext):
    """Adam with bias correction once ``T > 0`` and optional L2 terms before and after."""
    count = _groups(ctx, 4)
    alpha = float(ctx.attr("alpha", 0.9))
    beta = float(ctx.attr("beta", 0.999))
    epsilon = float(ctx.attr("epsilon", 0.0))
    post = float(ctx.attr("norm_coefficient_post", 0.0))
    steps = Temp(_float(Input(1)), "steps")
    corrected = (
        Input(0)
        * ops.sqrt(Lit(1.0) - ops.pow(Lit(beta), steps))
        / (Lit(1.0) - ops.pow(Lit(alpha), steps))
    )
    rate = Temp(ops.where(ops.gt(Input(1), Lit(0)), corrected, Input(0)))
    new_x, new_v, new_h = [], [], []
    for i in range(count):
        x, g = Input(2 + i), Input(2 + count + i)
        v, h = Input(2 + 2 * count + i), Input(2 + 3 * count + i)
        g = _regularized_gradient(ctx, x, g)
        v_new = Temp(BinOp("+", _times(alpha, v), _times(1.0 - alpha, g)), "v_new")
        h_new = Temp(BinOp("+", _times(beta, h), _times(1.0 - beta, BinOp("*", g, g))), "h_new")
        scale = ops.sqrt(h_new) + Lit(epsilon)
        x_new = x - rate * (v_new / scale)
        new_x.append(_times(1.0 - post, x_new))
        new_v.append(v_new)
        new_h.append(h_new)
    return Outputs(new_x + new_v + new_h)


@mapper("Momentum", domain=DOMAIN)
def momentum(ctx: NodeContext):
    """Momentum (``mode`` standard or nesterov); the first update (``T == 0``) takes the whole
    gradient into the velocity."""
    count = _groups(ctx, 3)
    alpha = float(ctx.attr("alpha"))
    beta = float(ctx.attr("beta"))
    mode = ctx.attr("mode", "standard")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in ("standard", "nesterov"):
        raise Unsupported(f"Momentum mode '{mode}'")
    gain = Temp(ops.where(ops.gt(Input(1), Lit(0)), Lit(beta), Lit(1.0)), "gain")
    new_x, new_v = [], []
    for i in range(count):
        x, g, v = Input(2 + i), Input(2 + count + i), Input(2 + 2 * count + i)
        g = _regularized_gradient(ctx, x, g)
        v_new = Temp(_times(alpha, v) + gain * g, "v_new")
        step = v_new if mode == "standard" else BinOp("+", g, _times(alpha, v_new))
        new_x.append(x - Input(0) * step)
        new_v.append(v_new)
    return Outputs(new_x + new_v)
