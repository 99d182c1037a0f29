"""Tensors made from attributes or sizes: Constant, ConstantOfShape, Range, OneHot, EyeLike and
Trilu."""

from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

from .base import (
    BinOp,
    Call,
    Const,
    DType,
    Input,
    Item,
    Lit,
    NodeContext,
    Unsupported,
    normalize_axis,
)
from .common import exact_as_scalar, scalar_or_const
from .registry import mapper
from .syntax import ops


@mapper("Constant")
def constant(ctx: NodeContext):
    """Constant (only reached when it could not be folded away) -> its value."""
    for key in ("value", "value_float", "value_int", "value_floats", "value_ints"):
        if ctx.has_attr(key):
            value = np.asarray(ctx.attr(key))
            if key in ("value_float", "value_floats"):
                value = value.astype(np.float32)
            elif key in ("value_int", "value_ints"):
                value = value.astype(np.int64)
            return Const(value)
    raise Unsupported("Constant without a numeric value")


@mapper("OneHot", since=9)
def one_hot(ctx: NodeContext):
    """OneHot -> ops.one_hot (negative indices count from the end, float indices are truncated)."""
    depth_value = np.asarray(ctx.require_const(1, "the OneHot depth")).reshape(-1)
    depth = int(depth_value[0])
    rank = ctx.input_rank(0)
    axis = normalize_axis(int(ctx.attr("axis", -1)), rank + 1)
    indices = Input(0)
    if ctx.input_dtype(0) != np.int64:
        indices = ops.cast(indices, DType("int64"))
    # ONNX: indices in [-depth, depth) select a class, anything else gives an all-off row
    indices = ops.where(BinOp("<", indices, Lit(0)), indices + Lit(depth), indices)
    values = ctx.const(2)
    if values is not None:
        values = np.asarray(values).reshape(-1)
        # int64 and float32 are the dtypes ops.one_hot gives for Python numbers
        if values.dtype in (np.int64, np.float32) and np.isfinite(values[:2]).all():
            off, on = (Lit(v.item()) for v in values[:2])
        else:
            off, on = (Const(np.asarray(v, dtype=values.dtype)) for v in values[:2])
    else:
        off, on = Item(Input(2), 0), Item(Input(2), 1)
    kwargs = {"axis": Lit(axis if axis != rank else -1)}
    return ops.one_hot(indices, Lit(depth), on, off, **kwargs)


@mapper("Range", since=11)
def range_(ctx: NodeContext):
    """Range -> ops.arange(start, limit, delta) (cast back to int32, which ops.arange may widen)."""
    dtype = np.dtype(ctx.input_dtype(0) or np.float32)
    # ops.arange takes int32/int64/float32/float64: other types count in a wider one
    wide = dtype if dtype.name in ("int32", "int64", "float32", "float64") else None
    if wide is None:
        wide = np.dtype(np.int64) if dtype.kind in "iu" else np.dtype(np.float32)
    args = []
    for index in range(3):
        value = ctx.const(index)
        if value is not None:
            args.append(scalar_or_const(np.asarray(value).astype(wide)))
        else:  # a scalar (exporters also pass one-element vectors, which onnxruntime takes)
            value = Input(index)
            if ctx.input_rank(index) != 0:
                value = ops.reshape(value, Lit(()))
            args.append(ops.cast(value, DType(wide.name)) if wide != dtype else value)
    result = ops.arange(*args)
    if dtype != np.int64 and dtype.name != "float32" or wide != dtype:
        result = ops.cast(result, DType(dtype.name))
    return result


@mapper("ConstantOfShape", since=9)
def constant_of_shape(ctx: NodeContext):
    """ConstantOfShape -> ops.full (static sizes) or ops.fill (a shape computed at run time)."""
    value = ctx.attr("value")
    array = (
        numpy_helper.to_array(value)
        if value is not None and not isinstance(value, np.ndarray)
        else value
    )
    array = np.zeros(1, np.float32) if array is None else np.asarray(array).reshape(-1)
    item = array[0].item()
    if array.dtype.kind == "b":
        item = bool(item)
    out_shape = ctx.output_shape(0)
    shape = Input(0)
    if out_shape is not None and all(isinstance(d, (int, np.integer)) for d in out_shape):
        shape = Lit(tuple(int(d) for d in out_shape))
    if not exact_as_scalar(array[0]):  # a Python number reaches GRAPH mode as int32/float32
        zeros = ops.zeros(shape, DType(array.dtype.name))
        return zeros + Const(np.asarray(array[0]))
    if isinstance(shape, Lit):
        return ops.full(shape, Lit(item), dtype=DType(array.dtype.name))
    return ops.fill(DType(array.dtype.name), shape, Lit(item))


@mapper("Trilu", since=14)
def trilu(ctx: NodeContext):
    """Trilu -> ops.triu / ops.tril with the diagonal offset k."""
    k = ctx.const_ints(1, "the diagonal offset k")[0] if ctx.has_input(1) else 0
    func = "ops.triu" if int(ctx.attr("upper", 1)) else "ops.tril"
    kwargs = {"diagonal": Lit(k)} if k else {}
    shape = ctx.input_shape(0)
    if shape is not None and 0 in shape[-2:]:  # an empty matrix (MindSpore's CPU kernel fails)
        return ctx.operand(0)
    return Call(func, [ctx.operand(0)], kwargs)


@mapper("EyeLike", since=9)
def eye_like(ctx: NodeContext):
    """EyeLike -> ops.eye (k == 0) or the constant matrix with its diagonal shifted."""
    n, m = ctx.require_shape(0)
    k = int(ctx.attr("k", 0))
    dtype_attr = ctx.attr("dtype")
    dtype = (
        np.dtype(helper.tensor_dtype_to_np_dtype(int(dtype_attr)))
        if dtype_attr is not None
        else np.dtype(ctx.input_dtype(0) or np.float32)
    )
    if k == 0:
        return ops.eye(Lit(int(n)), Lit(int(m)), DType(dtype.name))
    return Const(np.eye(int(n), int(m), k, dtype=dtype))
