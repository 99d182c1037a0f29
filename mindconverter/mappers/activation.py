"""Activations: Relu, LeakyRelu, PRelu, Sigmoid, Tanh, Clip, HardSigmoid, HardSwish, Softmax, LogSoftmax."""

from __future__ import annotations

import numpy as np

from ._common import scalar_or_const
from .base import BinOp, Call, Cell, Input, Lit, NodeContext, Temp
from .registry import mapper


@mapper("Relu")
def relu(ctx: NodeContext):
    """Relu -> ops.relu."""
    return Call("ops.relu", [Input(0)])


@mapper("Sigmoid")
def sigmoid(ctx: NodeContext):
    """Sigmoid -> ops.sigmoid."""
    return Call("ops.sigmoid", [Input(0)])


@mapper("Tanh")
def tanh(ctx: NodeContext):
    """Tanh -> ops.tanh."""
    return Call("ops.tanh", [Input(0)])


@mapper("LeakyRelu")
def leaky_relu(ctx: NodeContext):
    """LeakyRelu -> ops.leaky_relu with ONNX's default alpha 0.01."""
    return Call("ops.leaky_relu", [Input(0)], {"alpha": Lit(float(ctx.attr("alpha", 0.01)))})


@mapper("PRelu")
def prelu(ctx: NodeContext):
    """PRelu -> nn.PReLU when the slope is per channel, else max(x,0) + slope*min(x,0)."""
    slope = ctx.const(1)
    x_shape = ctx.input_shape(0)
    if slope is not None and x_shape is not None and len(x_shape) >= 2:
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
    positive = Call("ops.relu", [Input(0)])
    negative = BinOp("*", slope_expr, Call("ops.minimum", [Input(0), Lit(0.0)]))
    return BinOp("+", positive, negative)


@mapper("Clip", until=10)
def clip_attributes(ctx: NodeContext):
    """Clip (opset < 11): bounds as attributes -> ops.clamp."""
    low, high = ctx.attr("min"), ctx.attr("max")
    if low is not None and high is not None and float(low) == 0.0 and float(high) == 6.0:
        return Call("ops.relu6", [Input(0)])
    kwargs = {}
    if low is not None:
        kwargs["min"] = Lit(float(low))
    if high is not None:
        kwargs["max"] = Lit(float(high))
    return Call("ops.clamp", [Input(0)], kwargs)


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
        return Call("ops.relu6", [Input(0)])
    if not kwargs:
        return Input(0)
    return Call("ops.clamp", [Input(0)], kwargs)


@mapper("HardSigmoid")
def hard_sigmoid(ctx: NodeContext):
    """HardSigmoid -> ops.hardsigmoid for PyTorch's slope 1/6, else clamp(alpha*x + beta, 0, 1)."""
    alpha, beta = float(ctx.attr("alpha", 0.2)), float(ctx.attr("beta", 0.5))
    if abs(alpha - 1 / 6) < 1e-6 and abs(beta - 0.5) < 1e-6:
        return Call("ops.hardsigmoid", [Input(0)])
    scaled = BinOp("+", BinOp("*", Input(0), Lit(alpha)), Lit(beta))
    return Call("ops.clamp", [scaled], {"min": Lit(0.0), "max": Lit(1.0)})


@mapper("HardSwish", since=14)
def hard_swish(ctx: NodeContext):
    """HardSwish -> ops.hardswish."""
    return Call("ops.hardswish", [Input(0)])


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
            flat = Call("ops.reshape", [Input(0), Lit((int(np.prod(shape[:axis])), -1))])
            return Call("ops.reshape", [Call(func, [flat], {"axis": Lit(-1)}), Lit(tuple(shape))])
        axis = -1
    if _may_hold_negative_infinity(ctx):
        # MindSpore's CPU softmax zeroes every row after a row that is all -inf (a fully masked
        # attention row); the explicit form keeps the other rows and gives NaN there, as ONNX does.
        shifted = Temp(
            BinOp(
                "-",
                Input(0),
                Call("ops.amax", [Input(0)], {"axis": Lit(axis), "keepdims": Lit(True)}),
            ),
            "shifted",
        )
        if func == "ops.softmax":
            exp = Temp(Call("ops.exp", [shifted]), "exp")
            return BinOp("/", exp, Call("ops.sum", [exp], {"dim": Lit(axis), "keepdim": Lit(True)}))
        total = Call(
            "ops.sum", [Call("ops.exp", [shifted])], {"dim": Lit(axis), "keepdim": Lit(True)}
        )
        return BinOp("-", shifted, Call("ops.log", [total]))
    return Call(func, [Input(0)], {"axis": Lit(axis)})


@mapper("Softmax")
def softmax(ctx: NodeContext):
    """Softmax -> ops.softmax (opsets < 13 flatten at the axis first)."""
    return _softmax(ctx, "ops.softmax")


@mapper("LogSoftmax")
def log_softmax(ctx: NodeContext):
    """LogSoftmax -> ops.log_softmax (opsets < 13 flatten at the axis first)."""
    return _softmax(ctx, "ops.log_softmax")
