"""Reductions and scans: ReduceMean/Sum/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare,
ArgMax/ArgMin, CumSum and CumProd.

ONNX moved ``axes`` from an attribute to an input in opset 13 for ReduceSum and in opset 18 for
the others; ``noop_with_empty_axes`` arrived at the same versions.
"""

from __future__ import annotations

import numpy as np

from .base import (
    Call,
    DType,
    Input,
    Item,
    Lit,
    NodeContext,
    Temp,
    Unsupported,
    normalize_axis,
)
from .common import axes_input_or_attr
from .registry import mapper
from .syntax import ops


def reduce_axes(ctx: NodeContext):
    """The reduction axes as a tuple, or None for all axes (honouring noop_with_empty_axes)."""
    axes = axes_input_or_attr(ctx, 1, since=18)
    if not axes:
        if int(ctx.attr("noop_with_empty_axes", 0)):
            return "noop"
        return None
    rank = ctx.input_rank(0)
    return tuple(sorted(normalize_axis(a, rank) for a in axes))


@mapper("ReduceMean")
def reduce_mean(ctx: NodeContext):
    """ReduceMean -> ops.mean."""
    axes = reduce_axes(ctx)
    if axes == "noop":
        return Input(0)
    keep = bool(int(ctx.attr("keepdims", 1)))
    kwargs = {}
    if axes is not None:
        kwargs["axis"] = Lit(axes[0] if len(axes) == 1 else axes)
    kwargs["keep_dims"] = Lit(keep)
    return ops.mean(Input(0), **kwargs)


def _axes(ctx: NodeContext, since: int):
    """Reduction axes as a sorted tuple, None for all axes, or "noop" (empty axes + noop flag)."""
    axes = axes_input_or_attr(ctx, 1, since=since)
    if not axes:
        if ctx.opset >= since and int(ctx.attr("noop_with_empty_axes", 0)):
            return "noop"
        return None
    rank = ctx.input_rank(0)
    return tuple(sorted(normalize_axis(a, rank) for a in axes))


def _axis_lit(axes: tuple[int, ...]):
    return Lit(axes[0] if len(axes) == 1 else axes)


def _reduce(
    ctx: NodeContext,
    func: str,
    value,
    since: int,
    axis_kw: str,
    keep_kw: str,
    all_axes_needed: bool = False,
):
    """``func(value, axis, keepdims)`` with ONNX's axes rules; None when the reduction is a no-op."""
    axes = _axes(ctx, since)
    if axes == "noop":
        return None
    keep = bool(int(ctx.attr("keepdims", 1)))
    empty = _empty_reduction(ctx, func, axes)
    if empty is not None:
        return empty
    kwargs = {}
    if axes is None and (all_axes_needed or keep):
        axes = tuple(range(ctx.input_rank(0)))
    if axes is not None:
        kwargs[axis_kw] = _axis_lit(axes)
    kwargs[keep_kw] = Lit(keep)
    result = Call(func, [value], kwargs)
    dtype = ctx.output_dtype(0)
    if func in ("ops.sum", "ops.prod") and dtype is not None and dtype.kind in "iu":
        if np.dtype(dtype) != np.int64:  # MindSpore sums and multiplies integers in int64
            result = ops.cast(result, DType(np.dtype(dtype).name))
    return result


def _empty_identity(func: str, dtype: np.dtype):
    """What ``func`` gives over no elements (ONNX: the reduction's identity)."""
    if func in ("ops.any", "ops.all"):
        return func == "ops.all"
    if func in ("ops.sum", "ops.prod"):
        return int(func == "ops.prod") if dtype.kind in "iub" else float(func == "ops.prod")
    largest = np.iinfo(dtype).max if dtype.kind in "iu" else np.inf
    smallest = np.iinfo(dtype).min if dtype.kind in "iu" else -np.inf
    return {"ops.amax": smallest, "ops.amin": largest, "ops.logsumexp": -np.inf}[func]


def _empty_reduction(ctx: NodeContext, func: str, axes):
    """``ops.full`` of the identity when a reduced axis has size 0 (MindSpore's kernels return
    uninitialised memory or fail there); None otherwise."""
    shape, out_shape, dtype = ctx.input_shape(0), ctx.output_shape(0), ctx.output_dtype(0)
    if shape is None or out_shape is None or dtype is None:
        return None
    reduced = range(len(shape)) if axes is None else axes
    if not any(isinstance(shape[a], int) and shape[a] == 0 for a in reduced):
        return None
    if not all(isinstance(d, int) for d in out_shape):
        raise Unsupported("a reduction over an empty axis with a dynamic result shape")
    identity = _empty_identity(func, np.dtype(dtype))
    return ops.full(Lit(tuple(out_shape)), Lit(identity), dtype=DType(np.dtype(dtype).name))


def _sum(ctx: NodeContext, value, since: int = 18):
    return _reduce(ctx, "ops.sum", value, since, "dim", "keepdim")


@mapper("ReduceSum", until=12)
def reduce_sum_attr(ctx: NodeContext):
    """ReduceSum (axes attribute) -> ops.sum."""
    return _sum(ctx, Input(0), since=13) or Input(0)


@mapper("ReduceSum", since=13)
def reduce_sum(ctx: NodeContext):
    """ReduceSum (axes input, noop_with_empty_axes) -> ops.sum."""
    return _sum(ctx, Input(0), since=13) or Input(0)


@mapper("ReduceMax")
def reduce_max(ctx: NodeContext):
    """ReduceMax -> ops.amax (ops.any for bool, which MindSpore's amax rejects)."""
    if ctx.input_dtype(0) == np.bool_:
        return _reduce(ctx, "ops.any", Input(0), 18, "axis", "keep_dims") or Input(0)
    return _reduce(ctx, "ops.amax", Input(0), 18, "axis", "keepdims") or Input(0)


@mapper("ReduceMin")
def reduce_min(ctx: NodeContext):
    """ReduceMin -> ops.amin (ops.all for bool, which MindSpore's amin rejects)."""
    if ctx.input_dtype(0) == np.bool_:
        return _reduce(ctx, "ops.all", Input(0), 18, "axis", "keep_dims") or Input(0)
    return _reduce(ctx, "ops.amin", Input(0), 18, "axis", "keepdims") or Input(0)


@mapper("ReduceProd")
def reduce_prod(ctx: NodeContext):
    """ReduceProd -> ops.prod."""
    return _reduce(ctx, "ops.prod", Input(0), 18, "axis", "keep_dims") or Input(0)


@mapper("ReduceL1")
def reduce_l1(ctx: NodeContext):
    """ReduceL1 -> ops.sum(ops.abs(x))."""
    value = ops.abs(Input(0))
    return _sum(ctx, value) or value


@mapper("ReduceL2")
def reduce_l2(ctx: NodeContext):
    """ReduceL2 -> ops.sqrt(ops.sum(ops.square(x)))."""
    square = ops.square(Input(0))
    return ops.sqrt(_sum(ctx, square) or square)


@mapper("ReduceSumSquare")
def reduce_sum_square(ctx: NodeContext):
    """ReduceSumSquare -> ops.sum(ops.square(x))."""
    square = ops.square(Input(0))
    return _sum(ctx, square) or square


@mapper("ReduceLogSum")
def reduce_log_sum(ctx: NodeContext):
    """ReduceLogSum -> ops.log(ops.sum(x))."""
    return ops.log(_sum(ctx, Input(0)) or Input(0))


@mapper("ReduceLogSumExp")
def reduce_log_sum_exp(ctx: NodeContext):
    """ReduceLogSumExp -> ops.logsumexp (numerically stable)."""
    result = _reduce(ctx, "ops.logsumexp", Input(0), 18, "dim", "keepdim", all_axes_needed=True)
    return result or ops.log(ops.exp(Input(0)))


def _arg_reduce(ctx: NodeContext, func: str, dim_kw: str, keep_kw: str):
    shape = ctx.require_shape(0)
    axis = normalize_axis(int(ctx.attr("axis", 0)), len(shape))
    keep = bool(int(ctx.attr("keepdims", 1)))
    kwargs = {dim_kw: Lit(axis), keep_kw: Lit(keep)}
    if ctx.opset >= 12 and int(ctx.attr("select_last_index", 0)):
        # the last extreme element is the first one of the reversed axis
        flipped = ops.flip(Input(0), Lit((axis,)))
        return Lit(int(shape[axis]) - 1) - Call(func, [flipped], kwargs)
    return Call(func, [Input(0)], kwargs)


@mapper("ArgMax")
def arg_max(ctx: NodeContext):
    """ArgMax -> ops.argmax (select_last_index through a flipped axis)."""
    return _arg_reduce(ctx, "ops.argmax", "dim", "keepdim")


@mapper("ArgMin")
def arg_min(ctx: NodeContext):
    """ArgMin -> ops.argmin (select_last_index through a flipped axis)."""
    # ops.argmin returns int32; ONNX ArgMin returns int64
    return ops.cast(_arg_reduce(ctx, "ops.argmin", "axis", "keepdims"), DType("int64"))


@mapper("CumSum", since=11)
def cum_sum(ctx: NodeContext):
    """CumSum -> ops.cumsum; ``exclusive`` subtracts the element, ``reverse`` flips the axis."""
    rank = ctx.input_rank(0)
    axis_value = np.asarray(ctx.require_const(1, "the CumSum axis")).reshape(-1)
    if axis_value.size != 1:
        raise Unsupported("CumSum axis must be a scalar")
    axis = normalize_axis(int(axis_value[0]), rank)
    reverse = bool(int(ctx.attr("reverse", 0)))
    value = Input(0)
    if reverse:
        value = ops.flip(value, Lit((axis,)))
    result = ops.cumsum(value, Lit(axis))
    if int(ctx.attr("exclusive", 0)):
        result = result - value
    if reverse:
        result = ops.flip(result, Lit((axis,)))
    return result


@mapper("CumProd", since=26)
def cum_prod(ctx: NodeContext):
    """CumProd -> ops.cumprod; ``exclusive`` shifts in a 1, ``reverse`` flips the axis."""
    rank = ctx.input_rank(0)
    axis_value = np.asarray(ctx.require_const(1, "the CumProd axis")).reshape(-1)
    if axis_value.size != 1:
        raise Unsupported("CumProd axis must be a scalar")
    axis = normalize_axis(int(axis_value[0]), rank)
    dtype = np.dtype(ctx.input_dtype(0) or np.float32)

    def cumprod(x):  # ops.cumprod widens int32 to int64
        out = ops.cumprod(x, Lit(axis))
        return out if dtype.kind == "f" else ops.cast(out, DType(dtype.name))

    value = Input(0)
    reverse = bool(int(ctx.attr("reverse", 0)))
    if reverse:
        value = ops.flip(value, Lit((axis,)))
    if int(ctx.attr("exclusive", 0)):
        value = Temp(value, "x")
        lead = (slice(None),) * axis
        head = ops.ones_like(Item(value, lead + (slice(None, 1),)))
        body = cumprod(Item(value, lead + (slice(None, -1),)))
        result = ops.concat([head, body], axis=Lit(axis))
    else:
        result = cumprod(value)
    if reverse:
        result = ops.flip(result, Lit((axis,)))
    return result
