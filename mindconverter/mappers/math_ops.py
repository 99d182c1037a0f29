"""Element-wise math: unary functions, Pow, Mod, Max/Min/Mean, Where, IsNaN/IsInf, bit ops.

MindSpore's CPU kernels lack a few integer dtypes that ONNX allows (``ops.sign`` on int8/int16 and
unsigned types, for instance); those cases compute in a supported dtype and cast back.
"""

from __future__ import annotations

import numpy as np

from .base import (
    BinOp,
    Call,
    Const,
    DType,
    Input,
    Lit,
    Neg,
    NodeContext,
    Noted,
    Temp,
    Unsupported,
)
from .common import cast_to, fold_operands, require_dtype, same_dtype_operand
from .registry import mapper
from .syntax import ops


def _kind(ctx: NodeContext, index: int = 0) -> str:
    """numpy kind letter of input ``index`` ('f', 'i', 'u', 'b'); 'f' when unknown."""
    dtype = ctx.input_dtype(index)
    return np.dtype(dtype).kind if dtype is not None else "f"


def _unary(op_type: str, func: str, since: int = 1):
    """A mapper turning ``op_type`` into ``func(x)``; integer inputs are computed in float32 and cast back."""

    @mapper(op_type, since=since)
    def convert(ctx: NodeContext):
        if _kind(ctx) in "iub":
            dtype = require_dtype(ctx, 0)
            return cast_to(Call(func, [cast_to(Input(0), np.float32)]), dtype)
        return Call(func, [Input(0)])

    convert.__name__ = convert.__qualname__ = op_type.lower()
    convert.__doc__ = f"{op_type} -> {func}."
    return convert


reciprocal = _unary("Reciprocal", "ops.reciprocal")
sqrt = _unary("Sqrt", "ops.sqrt")
exp = _unary("Exp", "ops.exp")


# MindSpore's float32 log on CPU is off by up to about 12 ulps (median 3): a value that is a
# whole number exactly (log(2) / log(2) * 8) comes out just below it and truncates one lower
LOG_WHY = "float64 log: MindSpore's float32 log is a few ulps low and would floor a bucket"
_ARITHMETIC = {"Div", "Mul", "Add", "Sub"}
_INTEGER_TYPES = {2, 3, 4, 5, 6, 7, 12, 13}  # onnx.TensorProto integer element types


@mapper("Log")
def log(ctx: NodeContext):
    """Log -> ops.log; integer inputs are computed in float32 and cast back, and a float32 log
    whose value is truncated to an integer (T5 and WavLM's relative position buckets) is
    computed in float64."""
    if _kind(ctx) in "iub":
        dtype = require_dtype(ctx, 0)
        return cast_to(ops.log(cast_to(Input(0), np.float32)), dtype)
    if ctx.input_dtype(0) == np.float32 and _truncated(ctx, ctx.node.outputs[0]):
        precise = ops.log(cast_to(Input(0), np.float64))
        return Noted(cast_to(precise, np.float32), LOG_WHY)
    return ops.log(Input(0))


def _truncated(ctx: NodeContext, name: str, depth: int = 4) -> bool:
    """Whether ``name`` reaches a cast to an integer type or a Floor through a few arithmetic
    nodes."""
    for reader in ctx.graph.consumer_nodes.get(name, []):
        if reader.op_type == "Floor":
            return True
        if reader.op_type == "Cast":
            to = next((a.i for a in reader.attribute if a.name == "to"), 0)
            if to in _INTEGER_TYPES:
                return True
        if reader.op_type in _ARITHMETIC and depth and _truncated(ctx, reader.output[0], depth - 1):
            return True
    return False


floor = _unary("Floor", "ops.floor")
ceil = _unary("Ceil", "ops.ceil")
round_ = _unary("Round", "ops.round", since=11)  # MindSpore rounds half to even, as ONNX does
erf = _unary("Erf", "ops.erf", since=9)
sin = _unary("Sin", "ops.sin", since=7)
cos = _unary("Cos", "ops.cos", since=7)
tan = _unary("Tan", "ops.tan", since=7)
asin = _unary("Asin", "ops.asin", since=7)
acos = _unary("Acos", "ops.acos", since=7)
atan = _unary("Atan", "ops.atan", since=7)
sinh = _unary("Sinh", "ops.sinh", since=9)
cosh = _unary("Cosh", "ops.cosh", since=9)
asinh = _unary("Asinh", "ops.asinh", since=9)
acosh = _unary("Acosh", "ops.acosh", since=9)
atanh = _unary("Atanh", "ops.atanh", since=9)


@mapper("Abs")
def abs_(ctx: NodeContext):
    """Abs -> ops.abs (unsigned values are their own absolute value)."""
    if _kind(ctx) == "u":
        return Input(0)
    return ops.abs(Input(0))


@mapper("Neg")
def neg(ctx: NodeContext):
    """Neg -> ``-x``."""
    return Neg(Input(0))


@mapper("Sign", since=9)
def sign(ctx: NodeContext):
    """Sign -> ops.sign; unsigned -> (x != 0) as 0/1; int8/int16 via int32."""
    kind = _kind(ctx)
    if kind in "iu":
        dtype = require_dtype(ctx, 0)
        if kind == "u":
            return cast_to(cast_to(Input(0), np.bool_), dtype)
        if dtype.itemsize < 4:
            return cast_to(ops.sign(cast_to(Input(0), np.int32)), dtype)
    return ops.sign(Input(0))


def _scalar_exponent(ctx: NodeContext, base_kind: str) -> Lit | None:
    """A constant scalar exponent as a literal (int when integral), unless it would change the shape."""
    value = ctx.const(1)
    shape = ctx.input_shape(0)
    if value is None or value.size != 1 or shape is None or np.ndim(value) > len(shape):
        return None
    item = np.asarray(value).reshape(()).item()
    if float(item).is_integer() and (base_kind != "f" or abs(item) < 2**24):
        return Lit(int(item))
    if base_kind != "f":
        return None  # an integer base with a fractional exponent is computed in float64 below
    return Lit(float(item))


@mapper("Pow", since=7)
def pow_(ctx: NodeContext):
    """Pow -> ``x ** p`` for a constant scalar exponent, else ops.pow; the result keeps x's dtype.

    An integer base with a floating exponent is raised in float64 and truncated back, as
    onnxruntime does; exponents of another dtype (allowed from opset 12) are cast to x's dtype.
    """
    base_dtype = require_dtype(ctx, 0)
    base_kind = base_dtype.kind
    literal = _scalar_exponent(ctx, base_kind)
    if literal is not None:
        return Input(0) ** literal
    exponent = ctx.operand(1) if ctx.is_const(1) else Input(1)
    exp_dtype = ctx.input_dtype(1)
    if base_kind in "iu" and exp_dtype is not None and np.dtype(exp_dtype).kind == "f":
        raised = ops.pow(cast_to(Input(0), np.float64), cast_to(exponent, np.float64))
        return cast_to(raised, base_dtype)
    if exp_dtype is not None and np.dtype(exp_dtype) != base_dtype:
        exponent = cast_to(exponent, base_dtype)
    return ops.pow(Input(0), exponent)


@mapper("Mod", since=10)
def mod(ctx: NodeContext):
    """Mod -> ops.fmod (fmod=1, sign of the dividend) or ops.remainder (fmod=0, sign of the divisor).

    Floats with fmod=0 (valid from opset 28) follow numpy's mod, written out: MindSpore's
    remainder (and fmod) give NaN for an infinite divisor and +0 where the divisor is negative.
    """
    c_style = int(ctx.attr("fmod", 0)) == 1
    args = [same_dtype_operand(ctx, 0), same_dtype_operand(ctx, 1)]
    if c_style or _kind(ctx) == "u":
        return ops.fmod(*args)
    if _kind(ctx) == "f":
        return _float_mod(*args)
    divisor = ctx.const(1)
    shape = ctx.input_shape(0)
    if (
        divisor is not None
        and divisor.size == 1
        and shape is not None
        and divisor.ndim <= len(shape)
    ):
        args[1] = Lit(int(np.asarray(divisor).reshape(-1)[0]))  # a tensor keeps its dtype
    return BinOp("%", *args)  # Python's % on integer tensors: the sign of the divisor


def _float_mod(x, y):
    """numpy's mod on floats: C's fmod (x itself for a finite x over an infinite y), moved by
    y when its sign differs from y's; a zero result takes y's sign."""
    finite_by_infinite = ops.logical_and(ops.isinf(y), ops.isfinite(x))
    rest = Temp(ops.where(finite_by_infinite, x, ops.fmod(x, y)), "rest")
    other_sign = ops.logical_xor(BinOp("<", rest, Lit(0)), BinOp("<", y, Lit(0)))
    moved = ops.logical_and(BinOp("!=", rest, Lit(0)), other_sign)
    rest = Temp(ops.where(moved, rest + y, rest), "rest")
    zero = Temp(ops.zeros_like(rest), "zero")  # in x's dtype (a literal is float32)
    signed_zero = ops.where(BinOp("<", y, Lit(0)), Neg(zero), zero)
    return ops.where(BinOp("==", rest, Lit(0)), signed_zero, rest)


def _variadic(ctx: NodeContext, func: str):
    operands = [same_dtype_operand(ctx, index) for index in range(ctx.num_inputs)]
    return fold_operands(operands, lambda left, right: Call(func, [left, right]))


@mapper("Max")
def max_(ctx: NodeContext):
    """Max (variadic) -> nested ops.maximum (uint16, which MindSpore's CPU maximum lacks, via int32)."""
    dtype = ctx.input_dtype(0)
    if dtype is not None and np.dtype(dtype) == np.uint16:
        operands = [cast_to(Input(0), np.int32)]
        operands += [cast_to(ctx.operand(index), np.int32) for index in range(1, ctx.num_inputs)]
        return cast_to(fold_operands(operands, lambda a, b: ops.maximum(a, b)), dtype)
    return _variadic(ctx, "ops.maximum")


@mapper("Min")
def min_(ctx: NodeContext):
    """Min (variadic) -> nested ops.minimum."""
    return _variadic(ctx, "ops.minimum")


@mapper("Mean")
def mean(ctx: NodeContext):
    """Mean (variadic) -> ``(a + b + ...) / n``."""
    operands = [same_dtype_operand(ctx, index) for index in range(ctx.num_inputs)]
    expr = fold_operands(operands, lambda left, right: BinOp("+", left, right))
    if ctx.num_inputs == 1:
        return expr
    return expr / Lit(float(ctx.num_inputs))


@mapper("Where", since=9)
def where(ctx: NodeContext):
    """Where -> ops.where(condition, x, y)."""
    operands = [ctx.operand(0) if ctx.is_const(0) else Input(0)]
    for index in (1, 2):
        operands.append(ctx.operand(index) if ctx.is_const(index) else Input(index))
    return ops.where(*operands)


@mapper("IsNaN", since=9)
def is_nan(ctx: NodeContext):
    """IsNaN -> ops.isnan."""
    return ops.isnan(Input(0))


@mapper("IsInf", since=10)
def is_inf(ctx: NodeContext):
    """IsInf -> ops.isinf, or ``x == inf`` / ``x == -inf`` when only one sign is detected."""
    positive = int(ctx.attr("detect_positive", 1))
    negative = int(ctx.attr("detect_negative", 1))
    if positive and negative:
        return ops.isinf(Input(0))
    if positive:
        return BinOp("==", Input(0), Lit(float("inf")))
    if negative:
        return BinOp("==", Input(0), Lit(float("-inf")))
    return ops.zeros_like(Input(0), dtype=DType("bool"))


@mapper("BitShift", since=11)
def bit_shift(ctx: NodeContext):
    """BitShift -> ops.bitwise_left_shift / ops.bitwise_right_shift by the direction attribute.

    Shift amounts outside [0, bits) give 0 (or the sign fill for a right shift of a signed value,
    as opset 28 defines); MindSpore wraps them, so such amounts are guarded unless the amount
    is a constant known to be in range.
    """
    direction = ctx.attr("direction")
    if isinstance(direction, bytes):
        direction = direction.decode()
    if direction not in ("LEFT", "RIGHT"):
        raise Unsupported(f"BitShift direction {direction!r} (expected LEFT or RIGHT)")
    func = "ops.bitwise_left_shift" if direction == "LEFT" else "ops.bitwise_right_shift"
    x = ctx.operand(0) if ctx.is_const(0) else Input(0)
    amount = ctx.operand(1) if ctx.is_const(1) else Input(1)
    dtype = require_dtype(ctx, 0)
    bits = dtype.itemsize * 8
    known = ctx.const(1)
    if known is not None and np.all((known >= 0) & (known < bits)):
        return Call(func, [x, amount])
    out_of_range = BinOp(">=", amount, Const(np.array(bits, dtype)))
    if dtype.kind == "i":
        out_of_range = BinOp("<", amount, Const(np.array(0, dtype))) | out_of_range
        if direction == "RIGHT":  # shifting by bits - 1 leaves only the sign fill
            clamped = ops.where(out_of_range, Const(np.array(bits - 1, dtype)), amount)
            return Call(func, [x, clamped])
    return ops.where(out_of_range, ops.zeros_like(x), Call(func, [x, amount]))


def _bitwise(ctx: NodeContext, func: str):
    return Call(func, [ctx.operand(0) if ctx.is_const(0) else Input(0), ctx.operand(1)])


@mapper("BitwiseAnd", since=18)
def bitwise_and(ctx: NodeContext):
    """BitwiseAnd -> ops.bitwise_and."""
    return _bitwise(ctx, "ops.bitwise_and")


@mapper("BitwiseOr", since=18)
def bitwise_or(ctx: NodeContext):
    """BitwiseOr -> ops.bitwise_or."""
    return _bitwise(ctx, "ops.bitwise_or")


@mapper("BitwiseXor", since=18)
def bitwise_xor(ctx: NodeContext):
    """BitwiseXor -> ops.bitwise_xor."""
    return _bitwise(ctx, "ops.bitwise_xor")


@mapper("BitwiseNot", since=18)
def bitwise_not(ctx: NodeContext):
    """BitwiseNot -> ops.invert."""
    return ops.invert(Input(0))
