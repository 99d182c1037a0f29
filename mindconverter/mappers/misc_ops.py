"""Assorted operators: RMSNormalization, CumProd and the window generators (Hann, Hamming, Blackman)."""

from __future__ import annotations

import math

import numpy as np
from onnx import helper

from .base import (
    BinOp,
    Call,
    Const,
    DType,
    Input,
    Item,
    Lit,
    NodeContext,
    Temp,
    Unsupported,
    normalize_axis,
)
from .registry import mapper


@mapper("RMSNormalization", since=23)
def rms_normalization(ctx: NodeContext):
    """RMSNormalization -> x * rsqrt(mean(x², axes from ``axis`` on) + eps) * scale."""
    rank = ctx.input_rank(0)
    axis = normalize_axis(int(ctx.attr("axis", -1)), rank)
    eps = float(ctx.attr("epsilon", 1e-5))
    axes = tuple(range(axis, rank))
    mean_sq = Call(
        "ops.mean", [BinOp("*", Input(0), Input(0))], {"axis": Lit(axes), "keep_dims": Lit(True)}
    )
    normalized = BinOp("*", Input(0), Call("ops.rsqrt", [BinOp("+", mean_sq, Lit(eps))]))
    return BinOp("*", normalized, ctx.operand(1))


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
        out = Call("ops.cumprod", [x, Lit(axis)])
        return out if dtype.kind == "f" else Call("ops.cast", [out, DType(dtype.name)])

    value = Input(0)
    reverse = bool(int(ctx.attr("reverse", 0)))
    if reverse:
        value = Call("ops.flip", [value, Lit((axis,))])
    if int(ctx.attr("exclusive", 0)):
        value = Temp(value, "x")
        lead = (slice(None),) * axis
        head = Call("ops.ones_like", [Item(value, lead + (slice(None, 1),))])
        body = cumprod(Item(value, lead + (slice(None, -1),)))
        result = Call("ops.concat", [[head, body]], {"axis": Lit(axis)})
    else:
        result = cumprod(value)
    if reverse:
        result = Call("ops.flip", [result, Lit((axis,))])
    return result


def _window(ctx: NodeContext, coefficients: tuple[float, ...]):
    """``sum_k (-1)^k a_k cos(2πkn/N)`` for n in [0, size), N = size (periodic) or size - 1."""
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(int(ctx.attr("output_datatype", 1))))
    if dtype.kind != "f":
        raise Unsupported(f"a window of dtype {dtype.name}")
    size = ctx.const(0)
    if size is not None:
        length = int(np.asarray(size).reshape(-1)[0])
        n = Call("ops.arange", [Lit(length)], {"dtype": DType("float32")})
        denominator = Lit(float(length if int(ctx.attr("periodic", 1)) else length - 1))
    else:
        n = Call("ops.arange", [Input(0)], {"dtype": DType("float32")})
        count = Call("ops.cast", [Input(0), DType("float32")])
        denominator = count if int(ctx.attr("periodic", 1)) else BinOp("-", count, Lit(1.0))
    phase = Temp(BinOp("/", BinOp("*", n, Lit(2 * math.pi)), denominator), "phase")
    result = None
    for k, a in enumerate(coefficients):
        if k == 0:
            continue
        term = BinOp(
            "*", Lit(a), Call("ops.cos", [BinOp("*", phase, Lit(float(k)))] if k > 1 else [phase])
        )
        result = BinOp(
            "-" if k % 2 else "+", Lit(coefficients[0]) if result is None else result, term
        )
    return result if dtype == np.float32 else Call("ops.cast", [result, DType(dtype.name)])


@mapper("HannWindow", since=17)
def hann_window(ctx: NodeContext):
    """HannWindow -> 0.5 - 0.5·cos(2πn/N) over ops.arange(size)."""
    return _window(ctx, (0.5, 0.5))


@mapper("HammingWindow", since=17)
def hamming_window(ctx: NodeContext):
    """HammingWindow -> α - (1-α)·cos(2πn/N), α = 25/46, over ops.arange(size)."""
    return _window(ctx, (25 / 46, 21 / 46))


@mapper("BlackmanWindow", since=17)
def blackman_window(ctx: NodeContext):
    """BlackmanWindow -> 0.42 - 0.5·cos(2πn/N) + 0.08·cos(4πn/N) over ops.arange(size)."""
    return _window(ctx, (0.42, 0.5, 0.08))


@mapper("GridSample", since=16)
def grid_sample(ctx: NodeContext):
    """GridSample -> ops.grid_sample (bilinear, zeros/border/reflection padding)."""
    mode = ctx.attr("mode", "bilinear" if ctx.opset < 20 else "linear")
    padding = ctx.attr("padding_mode", "zeros")
    mode, padding = (v.decode() if isinstance(v, bytes) else v for v in (mode, padding))
    mode = {"linear": "bilinear", "cubic": "bicubic"}.get(mode, mode)
    if mode == "nearest":
        # verified on the node suite: positions exactly halfway between pixels pick the other
        # neighbour than ONNX's round-half-to-even
        raise Unsupported(
            "GridSample mode 'nearest' (MindSpore's grid_sample rounds halfway positions "
            "differently from ONNX)"
        )
    if mode != "bilinear":
        raise Unsupported(f"GridSample mode {mode!r} (MindSpore's grid_sample has no bicubic mode)")
    rank = ctx.input_rank(0)
    if rank not in (4, 5):
        raise Unsupported(f"GridSample on a rank-{rank} input")
    return Call(
        "ops.grid_sample",
        [Input(0), Input(1)],
        {
            "mode": Lit(mode),
            "padding_mode": Lit(padding),
            "align_corners": Lit(bool(int(ctx.attr("align_corners", 0)))),
        },
    )


@mapper("CenterCropPad", since=18)
def center_crop_pad(ctx: NodeContext):
    """CenterCropPad -> a centred slice on axes that shrink, then ops.pad (zeros) on axes that grow
    (the extra element of an odd difference goes to the end)."""
    in_shape = ctx.require_shape(0)
    rank = len(in_shape)
    target = ctx.const_ints(1, "the target shape")
    axes = [normalize_axis(int(a), rank) for a in ctx.attr("axes", list(range(rank)))]
    if len(axes) != len(target):
        raise Unsupported("CenterCropPad shape and axes differ in length")
    crop = [slice(None)] * rank
    pads = [(0, 0)] * rank
    for axis, size in zip(axes, target):
        dim = in_shape[axis]
        if size < dim:
            start = (dim - size) // 2
            crop[axis] = slice(start, start + size)
        elif size > dim:
            before = (size - dim) // 2
            pads[axis] = (before, size - dim - before)
    value = Input(0)
    if any(s != slice(None) for s in crop):
        value = Item(value, tuple(crop))
    padded = [a for a in range(rank) if pads[a] != (0, 0)]
    if padded:
        flat = []
        for axis in range(rank - 1, min(padded) - 1, -1):  # ops.pad lists the last axis first
            flat.extend(pads[axis])
        value = Call("ops.pad", [value, Lit(tuple(flat))])
    return value


@mapper("AffineGrid", since=20)
def affine_grid(ctx: NodeContext):
    """AffineGrid -> ops.affine_grid(theta, size, align_corners)."""
    size = ctx.const_ints(1, "the output size")
    if len(size) not in (4, 5):
        raise Unsupported(f"AffineGrid of a {len(size)}-element size")
    return Call(
        "ops.affine_grid",
        [Input(0), Lit(tuple(size))],
        {"align_corners": Lit(bool(int(ctx.attr("align_corners", 0))))},
    )


@mapper("Det", since=11)
def det(ctx: NodeContext):
    """Det -> ops.det over the last two axes."""
    return Call("ops.det", [Input(0)])


@mapper("BitCast", since=26)
def bit_cast(ctx: NodeContext):
    """BitCast -> reinterpret the bits with ``Tensor.view(dtype)`` (same element size only);
    bool -> uint8 is an ordinary cast."""
    source = np.dtype(ctx.input_dtype(0) or np.float32)
    target = np.dtype(helper.tensor_dtype_to_np_dtype(int(ctx.attr("to"))))
    if source.itemsize != target.itemsize or target.kind not in "biuf" or source.kind not in "biuf":
        raise Unsupported(f"BitCast from {source.name} to {target.name}")
    if source == target:
        return Input(0)
    if source.kind == "b" or target.kind == "b":
        return Call("ops.cast", [Input(0), DType(target.name)])
    return Call("ms.Tensor.view", [Input(0), DType(target.name)])


@mapper("SwiGLU", since=28)
def swiglu(ctx: NodeContext):
    """SwiGLU -> a · sigmoid(alpha · a) · b."""
    alpha = float(ctx.attr("alpha", 1.0))
    gate_in = Input(0) if alpha == 1.0 else BinOp("*", Input(0), Lit(alpha))
    return BinOp("*", BinOp("*", Input(0), Call("ops.sigmoid", [gate_in])), ctx.operand(1))


@mapper("TensorScatter", since=24)
def tensor_scatter(ctx: NodeContext):
    """TensorScatter -> write ``update`` into the cache at per-batch ``write_indices`` along ``axis``:
    every cache position p reads update[p - write_index] where that lies in range (modulo the cache
    length in circular mode) and keeps the cache value elsewhere."""
    shape = ctx.require_shape(0)
    update_shape = ctx.require_shape(1)
    rank = len(shape)
    axis = normalize_axis(int(ctx.attr("axis", -2)), rank)
    if axis == 0:
        raise Unsupported("TensorScatter along the batch axis")
    mode = ctx.attr("mode", "linear")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in ("linear", "circular"):
        raise Unsupported(f"TensorScatter mode {mode!r}")
    length, count = shape[axis], update_shape[axis]
    positions = np.arange(length, dtype=np.int64).reshape(
        [length if a == axis else 1 for a in range(rank)]
    )
    source = Const(positions)
    if ctx.has_input(2):
        start = Call("ops.reshape", [Input(2), Lit((-1,) + (1,) * (rank - 1))])
        source = BinOp("-", source, start)
        if mode == "circular":
            source = BinOp("%", BinOp("+", source, Lit(length)), Lit(length))
    source = Temp(source, "source")
    inside = Call("ops.logical_and", [BinOp(">=", source, Lit(0)), BinOp("<", source, Lit(count))])
    index_shape = tuple(update_shape[a] if a != axis else length for a in range(rank))
    index = Call(
        "ops.broadcast_to", [Call("ops.clip", [source, Lit(0), Lit(count - 1)]), Lit(index_shape)]
    )
    written = Call("ops.gather_elements", [Input(1), Lit(axis), index])
    return Call(
        "ops.where", [Call("ops.broadcast_to", [inside, Lit(tuple(shape))]), written, Input(0)]
    )
