"""Logic and comparison: And, Or, Xor, Not, Equal, Greater, Less, GreaterOrEqual, LessOrEqual.

The binary forms are registered from opset 7 (multidirectional broadcasting); earlier versions
carried a legacy ``broadcast``/``axis`` attribute pair that is not supported.
"""

from __future__ import annotations

from .base import BinOp, Input, NodeContext
from .common import same_dtype_operand
from .registry import mapper
from .syntax import ops


def _operands(ctx: NodeContext):
    return [same_dtype_operand(ctx, 0), same_dtype_operand(ctx, 1)]


@mapper("And", since=7)
def and_(ctx: NodeContext):
    """And -> ops.logical_and."""
    return ops.logical_and(*_operands(ctx))


@mapper("Or", since=7)
def or_(ctx: NodeContext):
    """Or -> ops.logical_or."""
    return ops.logical_or(*_operands(ctx))


@mapper("Xor", since=7)
def xor(ctx: NodeContext):
    """Xor -> ops.logical_xor."""
    return ops.logical_xor(*_operands(ctx))


@mapper("Not")
def not_(ctx: NodeContext):
    """Not -> ops.logical_not."""
    return ops.logical_not(Input(0))


def _compare(ctx: NodeContext, op: str):
    left, right = _operands(ctx)
    return BinOp(op, left, right)


@mapper("Equal", since=7)
def equal(ctx: NodeContext):
    """Equal -> ``a == b``."""
    return _compare(ctx, "==")


@mapper("Greater", since=7)
def greater(ctx: NodeContext):
    """Greater -> ``a > b``."""
    return _compare(ctx, ">")


@mapper("Less", since=7)
def less(ctx: NodeContext):
    """Less -> ``a < b``."""
    return _compare(ctx, "<")


@mapper("GreaterOrEqual", since=12)
def greater_or_equal(ctx: NodeContext):
    """GreaterOrEqual -> ``a >= b``."""
    return _compare(ctx, ">=")


@mapper("LessOrEqual", since=12)
def less_or_equal(ctx: NodeContext):
    """LessOrEqual -> ``a <= b``."""
    return _compare(ctx, "<=")
