"""Quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
ConvInteger, QLinearMatMul and QLinearConv, with ONNX's exact integer semantics.

- Rounding is ``ops.round``, which rounds halves to even on MindSpore's CPU backend (as ONNX's
  ``round_half_to_even`` and onnxruntime's ``nearbyintf``); saturation is ``ops.clamp`` to the
  output type's range before the cast.
- Integer matrix products are ``ops.matmul`` on int32 tensors (exact).
- Integer convolutions: MindSpore's convolutions are float-only, so the shifted operands
  ``x - x_zero_point`` and ``w - w_zero_point`` (integers in [-255, 255]) are split into base-16
  digits (``v = 16 * high + low``, ``high`` in [-16, 15], ``low`` in [0, 15]) until every partial
  sum of a float32 convolution is an integer below 2**24 in magnitude, hence computed exactly in
  any summation order; the per-digit results are rounded, cast to int32 and combined in int32.
- The requantizing operators (QLinearMatMul, QLinearConv) follow onnxruntime: the exact int32
  accumulator (plus the int32 bias) is converted to float32 and multiplied by the float32
  multiplier ``(a_scale * b_scale) / y_scale`` (per output channel for per-channel weight scales),
  rounded half to even, shifted by the output zero point and saturated. Accumulators beyond
  2**24 in magnitude lose low bits in that float32 conversion exactly as onnxruntime's do.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from .base import (
    BinOp,
    Call,
    Const,
    DType,
    Input,
    Item,
    Lit,
    NodeContext,
    Outputs,
    Temp,
    Unsupported,
)
from .common import compact, pad_call, spatial_attrs, spatial_pads
from .narrow_types import CONTAINER_NAMES, FLOAT_FORMATS, cast_to_narrow
from .registry import mapper
from .syntax import ops

_ELEM_TYPES = {
    "float8_e4m3fn": TensorProto.FLOAT8E4M3FN,
    "float8_e4m3fnuz": TensorProto.FLOAT8E4M3FNUZ,
    "float8_e5m2": TensorProto.FLOAT8E5M2,
    "float8_e5m2fnuz": TensorProto.FLOAT8E5M2FNUZ,
    "float4_e2m1fn": TensorProto.FLOAT4E2M1,
}

_RANGES = {
    "uint8": (0, 255),
    "int8": (-128, 127),
    "uint16": (0, 65535),
    "int16": (-32768, 32767),
    "int4": (-8, 7),
    "uint4": (0, 15),
    "int2": (-2, 1),
    "uint2": (0, 3),
}
EXACT_FLOAT = 2**24  # integers below this magnitude are exact in float32


def _cast(value, dtype: str) -> Call:
    return ops.cast(value, DType(dtype))


def _saturate(value, dtype: str) -> Call:
    """Clamp a float tensor of integral values to ``dtype``'s range and cast it (2- and 4-bit
    types to their int8/uint8 container)."""
    low, high = _RANGES[dtype]
    held = CONTAINER_NAMES.get(dtype, dtype)
    return _cast(ops.clamp(value, Lit(float(low)), Lit(float(high))), held)


def _quantized_dtype(ctx: NodeContext, zp_index: int) -> str:
    """The integer type of a quantized output: the zero point's, else ``output_dtype``, else
    uint8."""
    if ctx.has_input(zp_index):
        dtype = ctx.input_dtype(zp_index)
        if dtype is None:
            raise Unsupported("the dtype of the zero point is unknown")
        name = np.dtype(dtype).name
    elif ctx.attr("output_dtype", 0):
        try:
            name = np.dtype(helper.tensor_dtype_to_np_dtype(int(ctx.attr("output_dtype")))).name
        except Exception as exc:  # noqa: BLE001 - float8/int4 types without a numpy dtype
            raise Unsupported(f"quantized output type {ctx.attr('output_dtype')}") from exc
    else:
        name = "uint8"
    if name not in _RANGES and name not in FLOAT_FORMATS:
        raise Unsupported(f"quantized type {name}")
    return name


def _broadcast(
    ctx: NodeContext, index: int, rank: int, axis: int, dtype: str, block: int = 0, length=None
):
    """Input ``index`` (a scale or zero point) in ``dtype``, shaped to broadcast against a tensor
    of rank ``rank``: scalars stay scalars, a 1-D tensor runs along ``axis``, a blocked one
    (``block`` > 0, same rank as the data) is repeated ``block`` times along ``axis``."""
    value = ctx.const(index)
    if value is not None:
        array = np.asarray(value)
        if array.size == 1 and array.ndim <= 1:
            item = array.reshape(()).item()
            return Lit(float(np.float32(item)) if dtype == "float32" else int(item))
        if block and array.ndim == rank:
            array = np.repeat(array, block, axis=axis)
            array = np.take(array, np.arange(length), axis=axis)
        elif array.ndim == 1:
            array = array.reshape((-1,) + (1,) * (rank - 1 - axis))
        return Const(array.astype(dtype))
    expr = Input(index)
    if block:
        expr = ops.repeat_interleave(_cast(expr, dtype), Lit(block), Lit(axis))
        blocks = (ctx.input_shape(index) or [None] * rank)[axis]
        if not isinstance(blocks, (int, np.integer)):
            raise Unsupported("blocked quantization parameters of unknown shape")
        if blocks * block != length:
            expr = Item(expr, (slice(None),) * axis + (slice(None, length),))
        return expr
    shape = ctx.input_shape(index)
    if shape is not None and len(shape) == 1 and rank - 1 - axis > 0:
        expr = ops.reshape(expr, Lit((-1,) + (1,) * (rank - 1 - axis)))
    return _cast(expr, dtype)


def _axis_and_block(ctx: NodeContext) -> tuple[int, int, int, int | None]:
    """(rank, axis, block_size, length along axis) of input 0."""
    shape = ctx.require_shape(0)
    rank = len(shape)
    axis = int(ctx.attr("axis", 1))
    scale_shape = ctx.input_shape(1)
    per_tensor = scale_shape is not None and int(np.prod(scale_shape)) == 1
    if not -rank <= axis < rank:
        if not per_tensor:  # the axis only matters for per-axis and blocked parameters
            raise Unsupported(f"axis {axis} is out of range for rank {rank}")
        axis = 0
    axis = axis % rank if rank else 0
    block = int(ctx.attr("block_size", 0)) if ctx.opset >= 21 else 0
    length = int(shape[axis]) if block else None
    return rank, axis, block, length


@mapper("QuantizeLinear", since=10)
def quantize_linear(ctx: NodeContext):
    """QuantizeLinear -> saturate(round_half_even(x / scale) + zero_point), per tensor, per axis
    or per block; to a float8/float4 type: x / scale + zero_point cast with ONNX's rounding and
    ``saturate``."""
    dtype = _quantized_dtype(ctx, 2)
    rank, axis, block, length = _axis_and_block(ctx)
    x = Input(0)
    if np.dtype(ctx.input_dtype(0) or np.float32) != np.float32:
        x = _cast(x, "float32")
    scale = _broadcast(ctx, 1, rank, axis, "float32", block, length)
    if dtype in FLOAT_FORMATS:
        value = BinOp("/", x, scale)
        if ctx.has_input(2):
            value = value + _broadcast(ctx, 2, rank, axis, "float32", block, length)
        target = np.dtype(helper.tensor_dtype_to_np_dtype(_ELEM_TYPES[dtype]))
        saturate = bool(int(ctx.attr("saturate", 1)))
        return cast_to_narrow(value, np.dtype(np.float32), target, saturate, "up")
    value = ops.round(BinOp("/", x, scale))
    if ctx.has_input(2):
        zero = _broadcast(ctx, 2, rank, axis, "float32", block, length)
        if not (isinstance(zero, Lit) and zero.value == 0):
            value = value + zero
    return _saturate(value, dtype)


@mapper("DequantizeLinear", since=10)
def dequantize_linear(ctx: NodeContext):
    """DequantizeLinear -> float32(int32(x) - int32(zero_point)) * scale, per tensor, per axis or
    per block (then cast to the scale's type when it is not float32)."""
    source = np.dtype(ctx.input_dtype(0) or np.uint8).name
    if source not in _RANGES and source != "int32" and source not in FLOAT_FORMATS:
        raise Unsupported(f"dequantizing {source}")
    rank, axis, block, length = _axis_and_block(ctx)
    if source in FLOAT_FORMATS:  # float8/float4 values, held exactly in float16
        value = _cast(Input(0), "float32")
        if ctx.has_input(2):
            value = BinOp("-", value, _broadcast(ctx, 2, rank, axis, "float32", block, length))
        scale = _broadcast(ctx, 1, rank, axis, "float32", block, length)
        return _dequantized(ctx, BinOp("*", value, scale))
    value = _cast(Input(0), "int32")
    if ctx.has_input(2):
        zero = _broadcast(ctx, 2, rank, axis, "int32", block, length)
        if not (isinstance(zero, Lit) and zero.value == 0):
            value = BinOp("-", value, zero)
    scale = _broadcast(ctx, 1, rank, axis, "float32", block, length)
    return _dequantized(ctx, BinOp("*", _cast(value, "float32"), scale))


def _dequantized(ctx: NodeContext, result):
    """A float32 dequantized value in the scale's type."""
    target = np.dtype(ctx.input_dtype(1) or np.float32).name
    if target not in ("float32", "float16"):
        raise Unsupported(f"dequantizing to {target}")
    return result if target == "float32" else _cast(result, target)


@mapper("DynamicQuantizeLinear", since=11)
def dynamic_quantize_linear(ctx: NodeContext):
    """DynamicQuantizeLinear -> (y, scale, zero_point) as onnxruntime computes them: the range is
    widened to include 0, scale = range / 255 (1 when the range is empty, i.e. all zeros),
    zero_point = round_half_even(clamp(-min / scale, 0, 255))."""
    x = Input(0)
    low = Temp(ops.minimum(ops.amin(x), Lit(0.0)), "x_min")
    high = Temp(ops.maximum(ops.amax(x), Lit(0.0)), "x_max")
    spread = (high - low) / Lit(255.0)
    scale = Temp(ops.where(BinOp("==", high, low), Lit(1.0), spread), "scale")
    zero_float = ops.round(ops.clamp(Lit(0.0) - low / scale, Lit(0.0), Lit(255.0)))
    zero_float = Temp(zero_float, "zero_point")
    y = _saturate(ops.round(x / scale) + zero_float, "uint8")
    return Outputs([y, scale, _cast(zero_float, "uint8")])


def _shifted(ctx: NodeContext, index: int, zp_index: int, zp_axis: int, rank: int):
    """int32(input ``index``) - zero point (input ``zp_index``, scalar or along ``zp_axis``)."""
    value = _cast(Input(index), "int32")
    if not ctx.has_input(zp_index):
        return value
    zero = ctx.const(zp_index)
    if zero is not None and not np.asarray(zero).any():
        return value
    if zero is None and ctx.input_shape(zp_index) is not None:
        zp_rank = len(ctx.input_shape(zp_index))
        if zp_rank > 1:  # already N-D, e.g. (..., M, 1) for A or (..., 1, N) for B
            return BinOp("-", value, _cast(Input(zp_index), "int32"))
    if zero is not None and np.asarray(zero).ndim > 1:
        return value - Const(np.asarray(zero).astype(np.int32))
    return BinOp("-", value, _broadcast(ctx, zp_index, rank, zp_axis, "int32"))


def _integer_matmul(ctx: NodeContext, a: int, a_zp: int, b: int, b_zp: int):
    """(A - a_zero_point) @ (B - b_zero_point) in int32; a 1-D a_zero_point runs along A's rows,
    a 1-D b_zero_point along B's columns."""
    a_rank, b_rank = len(ctx.require_shape(a)), len(ctx.require_shape(b))
    left = _shifted(ctx, a, a_zp, max(a_rank - 2, 0), a_rank)
    right = _shifted(ctx, b, b_zp, b_rank - 1, b_rank)
    return ops.matmul(left, right)


@mapper("MatMulInteger", since=10)
def matmul_integer(ctx: NodeContext):
    """MatMulInteger -> ops.matmul on the int32 operands minus their zero points (exact)."""
    return _integer_matmul(ctx, 0, 2, 1, 3)


def _digits(value, count: int, const: bool):
    """Base-16 digits (most significant first) of a float32 integer tensor or numpy array: the
    top digit carries the sign, the others are in [0, 15]."""
    if count == 1:
        return [value]
    if const:
        high = np.floor_divide(value, 16)
        return [high.astype(np.float32), (value - 16 * high).astype(np.float32)]
    high = Temp(ops.floor(value / Lit(16.0)), "high")
    return [high, Temp(value - high * Lit(16.0), "low")]


def _split_counts(terms: int) -> tuple[int, int]:
    """How many base-16 digits the data and the weight need for exact float32 partial sums of
    ``terms`` products of integers in [-255, 255]."""
    for x_digits, w_digits, bound in ((1, 1, 255 * 255), (2, 1, 16 * 255), (2, 2, 16 * 16)):
        if terms * bound < EXACT_FLOAT:
            return x_digits, w_digits
    raise Unsupported(f"an integer convolution summing {terms} products per output")


def _integer_conv(ctx: NodeContext, x: int, x_zp: int, w: int, w_zp: int):
    """The exact int32 convolution of (x - x_zero_point) with (w - w_zero_point), padding with
    the zero point (i.e. padding the shifted data with 0); see the module docstring."""
    w_shape = ctx.require_shape(w)
    rank = len(w_shape) - 2
    if rank not in (1, 2, 3):
        raise Unsupported(f"{rank}-D convolution")
    x_shape = ctx.require_shape(x)
    kernel, strides, dilations = spatial_attrs(ctx, rank, list(w_shape[2:]))
    begin, end = spatial_pads(ctx, x_shape[2:], kernel, strides, dilations)
    group = int(ctx.attr("group", 1))
    terms = int(np.prod(w_shape[1:]))
    x_digits, w_digits = _split_counts(terms)

    data = _cast(_shifted(ctx, x, x_zp, 0, 1), "float32")
    if any(begin) or any(end):
        data = pad_call(data, begin, end)
    data = Temp(data, "shifted") if x_digits > 1 else data
    weight_value = ctx.const(w)
    zero = ctx.const(w_zp) if ctx.has_input(w_zp) else np.zeros((), np.int64)
    if weight_value is not None and zero is not None:
        zero = np.asarray(zero).astype(np.int64)
        zero = zero.reshape((-1,) + (1,) * (rank + 1)) if zero.ndim == 1 else zero
        weight = (np.asarray(weight_value).astype(np.int64) - zero).astype(np.float32)
        weights = [Const(d) for d in _digits(weight, w_digits, const=True)]
    else:
        weight = Temp(_cast(_shifted(ctx, w, w_zp, 0, rank + 2), "float32"), "weight")
        weights = _digits(weight, w_digits, const=False)
    datas = _digits(data, x_digits, const=False)
    kwargs = {
        "stride": Lit(compact(strides)),
        "dilation": Lit(compact(dilations)),
        "groups": Lit(group),
    }
    total = None
    for i, part in enumerate(datas):
        for j, kernel_part in enumerate(weights):
            conv = ops[f"conv{rank}d"](part, kernel_part, **kwargs)
            term = _cast(ops.round(conv), "int32")
            power = 16 ** ((len(datas) - 1 - i) + (len(weights) - 1 - j))
            term = term if power == 1 else term * Lit(power)
            total = term if total is None else BinOp("+", total, term)
    return total


@mapper("ConvInteger", since=10)
def conv_integer(ctx: NodeContext):
    """ConvInteger -> exact int32 convolution of the shifted operands (float32 convolutions of
    base-16 digits combined in int32)."""
    return _integer_conv(ctx, 0, 2, 1, 3)


def _multiplier(ctx: NodeContext, a_scale: int, b_scale: int, y_scale: int, rank: int, axis: int):
    """float32 (a_scale * b_scale) / y_scale, shaped along ``axis`` when b_scale is 1-D."""
    values = [ctx.const(i) for i in (a_scale, b_scale, y_scale)]
    if all(v is not None for v in values):
        a, b, y = (np.asarray(v).astype(np.float32) for v in values)
        if a.size != 1 or y.size != 1:
            raise Unsupported("per-axis scales other than the weight's")
        product = (a.reshape(()) * b) / y.reshape(())
        if product.size == 1:
            return Lit(float(product.reshape(())))
        return Const(product.reshape((-1,) + (1,) * (rank - 1 - axis)).astype(np.float32))
    a, b, y = (_broadcast(ctx, i, rank, axis, "float32") for i in (a_scale, b_scale, y_scale))
    return BinOp("*", a, b) / y


def _requantize(ctx: NodeContext, accumulator, multiplier, zp_index: int, rank: int):
    """saturate(round_half_even(float32(accumulator) * multiplier) + y_zero_point)."""
    dtype = _quantized_dtype(ctx, zp_index)
    value = ops.round(BinOp("*", _cast(accumulator, "float32"), multiplier))
    zero = _broadcast(ctx, zp_index, rank, 0, "float32")
    if not (isinstance(zero, Lit) and zero.value == 0):
        value = value + zero
    return _saturate(value, dtype)


@mapper("QLinearMatMul", since=10)
def qlinear_matmul(ctx: NodeContext):
    """QLinearMatMul -> exact int32 (a - a_zp) @ (b - b_zp), then requantized as onnxruntime does
    (float32 accumulator times the float32 multiplier a_scale * b_scale / y_scale, rounded half to
    even, plus y_zero_point, saturated)."""
    rank = max(len(ctx.require_shape(0)), len(ctx.require_shape(3)), 1)
    accumulator = _integer_matmul(ctx, 0, 2, 3, 5)
    multiplier = _multiplier(ctx, 1, 4, 6, rank, rank - 1)
    return _requantize(ctx, accumulator, multiplier, 7, rank)


@mapper("QLinearConv", since=10)
def qlinear_conv(ctx: NodeContext):
    """QLinearConv -> exact int32 convolution of the shifted operands plus the int32 bias, then
    requantized as onnxruntime does (per output channel for a 1-D w_scale)."""
    rank = len(ctx.require_shape(3))
    accumulator = _integer_conv(ctx, 0, 2, 3, 5)
    if ctx.has_input(8):
        bias = ctx.const(8)
        if bias is not None:
            bias_expr = Const(np.asarray(bias).astype(np.int32).reshape((-1,) + (1,) * (rank - 2)))
        else:
            bias_expr = ops.reshape(Input(8), Lit((-1,) + (1,) * (rank - 2)))
        accumulator = accumulator + bias_expr
    multiplier = _multiplier(ctx, 1, 4, 6, rank, 1)
    return _requantize(ctx, accumulator, multiplier, 7, rank)
