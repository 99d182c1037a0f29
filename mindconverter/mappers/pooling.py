"""Pooling: MaxPool, AveragePool, LpPool (1-D/2-D/3-D), their global forms, MaxUnpool and
RoiAlign."""

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
    Outputs,
    Temp,
    Unsupported,
)
from .common import compact, pad_call, spatial_attrs, spatial_pads
from .registry import mapper
from .roi_align_ops import roi_align_by_ops
from .syntax import ops

_MAX_CELLS = {1: "nn.MaxPool1d", 2: "nn.MaxPool2d", 3: "nn.MaxPool3d"}
_AVG_CELLS = {1: "nn.AvgPool1d", 2: "nn.AvgPool2d", 3: "nn.AvgPool3d"}


def _pool(ctx: NodeContext, cells: dict, is_max: bool):
    x_shape = ctx.require_shape(0)
    rank = len(x_shape) - 2
    if rank not in cells:
        raise Unsupported(f"{rank}-D pooling has no MindSpore cell")
    kernel, strides, dilations = spatial_attrs(ctx, rank)
    begin, end = spatial_pads(ctx, x_shape[2:], kernel, strides, dilations)
    ceil_mode = bool(ctx.attr("ceil_mode", 0))
    x = Input(0)
    rescale = None
    kwargs = {"kernel_size": compact(kernel), "stride": compact(strides)}
    # MindSpore pools pad symmetrically and at most half the kernel: pad explicitly otherwise
    if begin != end or any(b > k // 2 for b, k in zip(begin, kernel)):
        exclude_pad = not is_max and int(ctx.attr("count_include_pad", 0)) == 0
        steps = [  # (only when needed: the sizes may stay dynamic otherwise)
            _onnx_steps(*axis, ceil_mode)
            for axis in zip(x_shape[2:], kernel, strides, begin, end, dilations)
            if ceil_mode or exclude_pad
        ]
        if exclude_pad:
            rescale = _valid_cell_factor(x_shape[2:], kernel, strides, begin, steps)
        if ceil_mode:  # pad the end to fit exactly ONNX's windows: the cell's ceil_mode would
            # add one starting in the end padding, which ONNX drops
            end = [
                max((n - 1) * s + (k - 1) * d + 1 - size - b, 0)
                for n, size, k, s, b, d in zip(
                    steps, x_shape[2:], kernel, strides, begin, dilations
                )
            ]
            ceil_mode = False
        x = pad_call(x, begin, end, -math.inf if is_max else 0.0)
        begin = end = [0] * rank
    if any(begin) or ceil_mode:
        kwargs["pad_mode"] = "pad"
        kwargs["padding"] = compact(begin)
    if ceil_mode:
        kwargs["ceil_mode"] = True
    if is_max and any(d != 1 for d in dilations):
        kwargs["pad_mode"] = "pad"
        kwargs.setdefault("padding", compact(begin))
        kwargs["dilation"] = compact(dilations)
    if not is_max and kwargs.get("pad_mode") == "pad":
        kwargs["count_include_pad"] = bool(ctx.attr("count_include_pad", 0))
    cell = Cell(cells[rank], kwargs=kwargs, args=[x], role="maxpool" if is_max else "avgpool")
    if rescale is not None:
        # averaged over the whole window including zero padding; rescale to the valid cells only
        return cell * Const(rescale)
    return cell


def _onnx_steps(size: int, k: int, s: int, b: int, e: int, d: int, ceil_mode: bool) -> int:
    """The number of windows along one axis, as ONNX counts them."""
    span = (k - 1) * d + 1
    if not ceil_mode:
        return (size + b + e - span) // s + 1
    steps = -(-(size + b + e - span) // s) + 1
    if (steps - 1) * s >= size + b:  # the last window would start in the end padding
        steps -= 1
    return steps


def _valid_cell_factor(spatial, kernel, strides, begin, steps) -> np.ndarray:
    """Per output position: kernel volume / number of non-padding cells in its window."""
    factors = []
    for size, k, s, b, n in zip(spatial, kernel, strides, begin, steps):
        starts = np.arange(n) * s - b
        valid = np.minimum(starts + k, size) - np.maximum(starts, 0)
        factors.append(k / valid)
    grid = factors[0]
    for axis_factor in factors[1:]:
        grid = np.multiply.outer(grid, axis_factor)
    return grid.astype(np.float32)


@mapper("MaxPool")
def max_pool(ctx: NodeContext):
    """MaxPool -> nn.MaxPool1d/2d/3d (pads, dilations, ceil_mode); with the Indices output,
    the windows gathered from a constant table of input positions."""
    if ctx.output_used(1):
        return _max_pool_with_indices(ctx)
    if int(ctx.attr("storage_order", 0)) != 0:
        raise Unsupported("column-major storage_order")
    return _pool(ctx, _MAX_CELLS, True)


def _max_pool_with_indices(ctx: NodeContext):
    """Values and ONNX indices (flat over the whole input, row- or column-major): every window's
    taps gathered by a constant table of input positions (-inf on padding), then max/argmax."""
    shape, out_shape = ctx.require_shape(0), ctx.output_shape(0)
    if out_shape is None or not all(isinstance(d, (int, np.integer)) for d in shape[1:]):
        raise Unsupported("MaxPool indices need static channel and spatial sizes")
    if np.dtype(ctx.input_dtype(0) or np.float32).kind != "f":
        raise Unsupported("MaxPool indices of integer values")
    rank = len(shape) - 2
    kernel, strides, dilations = spatial_attrs(ctx, rank)
    begin, _ = spatial_pads(ctx, shape[2:], kernel, strides, dilations)
    sizes, outs = [int(d) for d in shape[2:]], [int(d) for d in out_shape[2:]]
    grids = np.meshgrid(
        *[np.arange(o) for o in outs], *[np.arange(k) for k in kernel], indexing="ij"
    )
    position = [
        g * s - b + t * d
        for g, t, s, b, d in zip(grids[:rank], grids[rank:], strides, begin, dilations)
    ]
    inside = np.logical_and.reduce([(p >= 0) & (p < n) for p, n in zip(position, sizes)])
    clipped = [np.clip(p, 0, n - 1) for p, n in zip(position, sizes)]
    flat = np.ravel_multi_index(clipped, sizes).reshape(int(np.prod(outs)), -1)
    if int(ctx.attr("storage_order", 0)):  # column-major: the first axis varies fastest
        reported = np.ravel_multi_index(clipped[::-1], sizes[::-1])
    else:
        reported = np.ravel_multi_index(clipped, sizes)
    channels, plane = int(shape[1]), int(np.prod(sizes))
    rows = ops.reshape(Input(0), Lit((-1, channels, plane)))
    taps = ops.gather(rows, Const(flat.reshape(-1).astype(np.int64)), Lit(2))
    taps = ops.reshape(taps, Lit((-1, channels) + flat.shape))
    outside = Const(~inside.reshape(flat.shape))
    taps = Temp(ops.masked_fill(taps, outside, Lit(float("-inf"))), "taps")
    best = Temp(ops.argmax(taps, dim=Lit(-1), keepdim=Lit(True)), "best")
    values = ops.gather_elements(taps, Lit(-1), best)
    windows, width = flat.shape
    in_table = best + Const((np.arange(windows)[:, None] * width).astype(np.int64))
    where = ops.gather(Const(reported.reshape(-1).astype(np.int64)), in_table, Lit(0))
    planes = ops.size(Input(0)) // Lit(plane)
    starts = ops.arange(planes) * Lit(plane)
    starts = ops.reshape(starts, Lit((-1, channels, 1, 1)))
    out = tuple([-1, channels] + outs)
    return Outputs(
        [
            ops.reshape(values, Lit(out)),
            ops.reshape(where + starts, Lit(out)),
        ]
    )


@mapper("AveragePool")
def average_pool(ctx: NodeContext):
    """AveragePool -> nn.AvgPool1d/2d/3d with count_include_pad and ceil_mode."""
    if any(d != 1 for d in ctx.attr("dilations", [])):
        return _dilated_average_pool(ctx)
    return _pool(ctx, _AVG_CELLS, False)


def _window_counts(size, out, k, s, d, begin, end, include_pad) -> np.ndarray:
    """Along one axis: how many taps of each output window ONNX divides by (taps on the input,
    or also on the explicit pads with count_include_pad; never on ceil_mode's extra end)."""
    low, high = (-begin, size + end) if include_pad else (0, size)
    taps = np.arange(out)[:, None] * s - begin + np.arange(k)[None, :] * d
    return ((taps >= low) & (taps < high)).sum(axis=1)


def _dilated_average_pool(ctx: NodeContext):
    """Dilated AveragePool -> window sums by a depthwise convolution with a dilated kernel of
    ones, divided by each window's count (MindSpore's pooling cells take no dilation)."""
    shape, out_shape = ctx.require_shape(0), ctx.output_shape(0)
    rank = len(shape) - 2
    if (
        rank not in (1, 2, 3)
        or out_shape is None
        or not all(isinstance(n, (int, np.integer)) for n in list(shape[1:]) + list(out_shape[2:]))
    ):
        raise Unsupported("dilated average pooling needs static channel and spatial sizes")
    kernel, strides, dilations = spatial_attrs(ctx, rank)
    begin, end = spatial_pads(ctx, shape[2:], kernel, strides, dilations)
    include_pad = bool(int(ctx.attr("count_include_pad", 0)))
    counts = np.ones((), np.float32)
    full_end = []
    for axis in range(rank):
        n, o, k, st, dl = (
            shape[2 + axis],
            out_shape[2 + axis],
            kernel[axis],
            strides[axis],
            dilations[axis],
        )
        full_end.append(max((o - 1) * st + (k - 1) * dl + 1 - (n + begin[axis]), end[axis]))
        along = _window_counts(n, o, k, st, dl, begin[axis], end[axis], include_pad)
        counts = np.multiply.outer(counts, along.astype(np.float32))
    x = pad_call(Input(0), begin, full_end) if any(begin) or any(full_end) else Input(0)
    sums = _window_sums(x, int(shape[1]), kernel, strides, dilations)
    return sums / Const(counts)


def _window_sums(x, channels: int, kernel, strides, dilations):
    """Sums over dilated windows: a depthwise convolution with a kernel of ones."""
    rank = len(kernel)
    ones = np.ones((channels, 1, *kernel), np.float32)
    strides, dilations = tuple(strides), tuple(dilations)
    if rank == 1:  # as a 2-D convolution over a height of 1
        x = ops.expand_dims(x, Lit(2))
        ones, strides, dilations = ones[:, :, None], (1, *strides), (1, *dilations)
    conv = "ops.conv3d" if rank == 3 else "ops.conv2d"
    sums = Call(
        conv,
        [x, Const(ones)],
        {"stride": Lit(strides), "dilation": Lit(dilations), "groups": Lit(channels)},
    )
    return ops.squeeze(sums, Lit(2)) if rank == 1 else sums


def _spatial_axes(ctx: NodeContext) -> tuple[int, ...]:
    rank = ctx.input_rank(0)
    return tuple(range(2, rank))


@mapper("GlobalAveragePool")
def global_average_pool(ctx: NodeContext):
    """GlobalAveragePool -> ops.mean over the spatial axes, keeping them."""
    return ops.mean(Input(0), axis=Lit(_spatial_axes(ctx)), keep_dims=Lit(True))


@mapper("GlobalMaxPool")
def global_max_pool(ctx: NodeContext):
    """GlobalMaxPool -> ops.amax over the spatial axes, keeping them."""
    return ops.amax(Input(0), axis=Lit(_spatial_axes(ctx)), keepdims=Lit(True))


_AVG_CELLS = {1: "nn.AvgPool1d", 2: "nn.AvgPool2d", 3: "nn.AvgPool3d"}


_UNPOOL_OPS = {1: "ops.max_unpool1d", 2: "ops.max_unpool2d", 3: "ops.max_unpool3d"}


def _abs_pow(value, p: int):
    """``|x| ** p`` written the way a person would (``x * x`` for p = 2)."""
    if p == 2:
        return BinOp("*", value, value)
    magnitude = ops.abs(value)
    return magnitude if p == 1 else magnitude ** Lit(p)


def _root(value, p: int):
    if p == 1:
        return value
    if p == 2:
        return ops.sqrt(value)
    return value ** Lit(1.0 / p)


def _lp_p(ctx: NodeContext) -> int:
    p = ctx.attr("p", 2)
    if float(p) != int(p) or int(p) < 1:
        raise Unsupported(f"Lp pooling with p={p}")
    return int(p)


@mapper("LpPool", since=2)
def lp_pool(ctx: NodeContext):
    """LpPool -> (AvgPool(|x|^p) * window size) ** (1/p), padding with zeros (they add nothing to the sum).

    ceil_mode is honoured by padding the end so the last partial window fits; dilations are not.
    """
    shape = ctx.require_shape(0)
    rank = len(shape) - 2
    if rank not in _AVG_CELLS:
        raise Unsupported(f"{rank}-D LpPool")
    p = _lp_p(ctx)
    kernel, strides, dilations = spatial_attrs(ctx, rank)
    begin, end = spatial_pads(ctx, shape[2:], kernel, strides, dilations)
    out_shape = ctx.output_shape(0)
    if any(d != 1 for d in dilations):
        return _dilated_lp_pool(ctx, p, kernel, strides, dilations, begin, end)
    if out_shape is not None and len(out_shape) == len(shape):
        # pad the end so that exactly the ONNX output windows fit (covers ceil_mode)
        end = [
            max((o - 1) * s + k - (n + b), e)
            for o, s, k, n, b, e in zip(out_shape[2:], strides, kernel, shape[2:], begin, end)
        ]
    elif int(ctx.attr("ceil_mode", 0)):
        raise Unsupported("ceil_mode LpPool with an unknown output shape")
    x = _abs_pow(Input(0), p)
    if any(begin) or any(end):
        x = pad_call(x, begin, end)
    pooled = Cell(
        _AVG_CELLS[rank],
        kwargs={"kernel_size": compact(kernel), "stride": compact(strides)},
        args=[x],
        role="avgpool",
    )
    return _root(pooled * Lit(float(math.prod(kernel))), p)


def _dilated_lp_pool(ctx: NodeContext, p, kernel, strides, dilations, begin, end):
    """Dilated LpPool -> window sums of |x|^p by a dilated depthwise convolution, then the
    p-th root (padding adds nothing to the sums)."""
    shape, out_shape = ctx.require_shape(0), ctx.output_shape(0)
    if out_shape is None or not all(
        isinstance(n, (int, np.integer)) for n in list(shape[1:]) + list(out_shape[2:])
    ):
        raise Unsupported("dilated LpPool needs static channel and spatial sizes")
    end = [
        max((o - 1) * s + (k - 1) * d + 1 - (n + b), e)
        for o, s, k, d, n, b, e in zip(
            out_shape[2:], strides, kernel, dilations, shape[2:], begin, end
        )
    ]
    x = _abs_pow(Input(0), p)
    if any(begin) or any(end):
        x = pad_call(x, begin, end)
    return _root(_window_sums(x, int(shape[1]), kernel, strides, dilations), p)


@mapper("GlobalLpPool", since=2)
def global_lp_pool(ctx: NodeContext):
    """GlobalLpPool -> (sum over the spatial axes of |x|^p) ** (1/p), keeping the axes."""
    p = _lp_p(ctx)
    axes = tuple(range(2, ctx.input_rank(0)))
    total = ops.sum(_abs_pow(Input(0), p), dim=Lit(axes), keepdim=Lit(True))
    return _root(total, p)


@mapper("MaxUnpool", since=9)
def max_unpool(ctx: NodeContext):
    """MaxUnpool -> ops.max_unpool1d/2d/3d with the explicit output size.

    ONNX indices count over the whole flattened output, MindSpore's within one (N, C) plane: the
    index is taken modulo the plane size. Indices point into the size the kernel gives; a larger
    output_shape holds that result in its leading corner, zeros after it (the ONNX reference).
    """
    shape = ctx.require_shape(0)
    rank = len(shape) - 2
    if rank not in _UNPOOL_OPS:
        raise Unsupported(f"{rank}-D MaxUnpool")
    kernel, strides, _ = spatial_attrs(ctx, rank)
    pads = list(ctx.attr("pads", [0] * (2 * rank)))
    begin, end = pads[:rank], pads[rank:]
    inferred = list(shape[:2]) + [
        (n - 1) * s - b - e + k for n, s, b, e, k in zip(shape[2:], strides, begin, end, kernel)
    ]
    target = ctx.const_ints(2, "output_shape") if ctx.has_input(2) else inferred
    if len(target) != len(shape):
        raise Unsupported(f"output_shape {target} does not match the input rank")
    if any(t < i for t, i in zip(target[2:], inferred[2:])):
        raise Unsupported(f"output_shape {target} is smaller than the unpooled size {inferred}")
    padding = begin if begin == end else [0] * rank
    # MindSpore accepts an output size within one stride of its own default size
    for n, s, pad, k, size in zip(shape[2:], strides, padding, kernel, inferred[2:]):
        if abs(size - ((n - 1) * s - 2 * pad + k)) >= s:
            raise Unsupported(
                f"MaxUnpool output size {inferred} is too far from the size its kernel gives"
            )
    plane = math.prod(inferred[2:])
    kwargs = {"stride": Lit(compact(strides))}
    if any(padding):
        kwargs["padding"] = Lit(compact(padding))
    kwargs["output_size"] = Lit(tuple(int(v) for v in inferred))
    result = Call(
        _UNPOOL_OPS[rank],
        [Input(0), Input(1) % Lit(plane), Lit(compact(kernel))],
        kwargs,
    )
    extra = [int(t) - int(i) for t, i in zip(target[2:], inferred[2:])]
    return pad_call(result, [0] * rank, extra) if any(extra) else result


@mapper("RoiAlign", since=10)
def roi_align(ctx: NodeContext):
    """RoiAlign (avg mode, output_half_pixel coordinates, fixed sampling_ratio) -> ops.ROIAlign;
    mode 'max' and 'half_pixel' coordinates -> the script's RoiAlignByOps cell.

    MindSpore takes the batch index as the first column of each ROI. Its kernel clamps ROI sizes
    to at least one pixel (the legacy 'output_half_pixel' behaviour), so 'half_pixel' (the default
    from opset 16) and 'max' are written with ops; the adaptive sampling_ratio 0 is not supported.
    """
    mode = ctx.attr("mode", "avg")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in ("avg", "max"):
        raise Unsupported(f"RoiAlign mode '{mode}'")
    transform = ctx.attr(
        "coordinate_transformation_mode", "half_pixel" if ctx.opset >= 16 else "output_half_pixel"
    )
    transform = transform.decode() if isinstance(transform, bytes) else transform
    if transform not in ("half_pixel", "output_half_pixel"):
        raise Unsupported(f"RoiAlign coordinate_transformation_mode '{transform}'")
    sampling = int(ctx.attr("sampling_ratio", 0))
    if sampling <= 0:
        raise Unsupported(
            "RoiAlign with the adaptive sampling_ratio=0 (a sample count per ROI, known only at "
            "run time)"
        )
    if ctx.input_rank(0) != 4:
        raise Unsupported("RoiAlign of a non-4-D input")
    if mode == "max" or transform == "half_pixel":
        return roi_align_by_ops(ctx, sampling, transform == "half_pixel", mode == "max")
    dtype = ctx.input_dtype(1)
    index_column = ops.expand_dims(
        ops.cast(Input(2), DType(dtype.name if dtype is not None else "float32")), Lit(1)
    )
    rois = ops.concat([index_column, Input(1)], axis=Lit(1))
    kwargs = {
        "pooled_height": int(ctx.attr("output_height", 1)),
        "pooled_width": int(ctx.attr("output_width", 1)),
        "spatial_scale": float(ctx.attr("spatial_scale", 1.0)),
        "sample_num": sampling,
        "roi_end_mode": 0,
    }
    return Cell("ops.ROIAlign", kwargs=kwargs, args=[Input(0), rois], role="roi_align")
