"""Element-wise arithmetic: Add, Sub, Mul, Div, Sum."""

from __future__ import annotations

import numpy as np

from .base import BinOp, NodeContext
from .common import fold_operands, same_dtype_operand
from .registry import mapper
from .syntax import ops


def _binary(ctx: NodeContext, op: str):
    if ctx.opset < 7 and int(ctx.attr("broadcast", 0)) and ctx.has_attr("axis"):
        from .base import Unsupported

        raise Unsupported("legacy broadcast with an axis attribute")
    return BinOp(op, same_dtype_operand(ctx, 0), same_dtype_operand(ctx, 1))


@mapper("Add")
def add(ctx: NodeContext):
    """Add -> ``a + b``."""
    return _binary(ctx, "+")


@mapper("Sub")
def sub(ctx: NodeContext):
    """Sub -> ``a - b``."""
    return _binary(ctx, "-")


@mapper("Mul")
def mul(ctx: NodeContext):
    """Mul -> ``a * b``."""
    return _binary(ctx, "*")


@mapper("Div")
def div(ctx: NodeContext):
    """Div -> ``a / b``; integer division truncates toward zero as in ONNX."""
    dtype = ctx.output_dtype(0) or ctx.input_dtype(0)
    if dtype is not None and np.dtype(dtype).kind in "iu":
        return ops.div(
            same_dtype_operand(ctx, 0), same_dtype_operand(ctx, 1), rounding_mode="trunc"
        )
    return _binary(ctx, "/")


@mapper("Sum")
def sum_(ctx: NodeContext):
    """Sum (variadic) -> ``a + b + c ...``."""
    operands = [same_dtype_operand(ctx, index) for index in range(ctx.num_inputs)]
    return fold_operands(operands, lambda left, right: BinOp("+", left, right))
