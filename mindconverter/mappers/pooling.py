"""Pooling: MaxPool, AveragePool (1-D/2-D/3-D) as ``nn.*Pool*`` cells; global pooling as reductions."""

from __future__ import annotations

import math

import numpy as np

from ._common import compact, pad_call, spatial_attrs, spatial_pads
from .base import BinOp, Call, Cell, Const, Input, Lit, NodeContext, Unsupported
from .registry import mapper

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
        if not is_max and int(ctx.attr("count_include_pad", 0)) == 0:
            rescale = _valid_cell_factor(x_shape[2:], kernel, strides, begin, end, ceil_mode)
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
        return BinOp("*", cell, Const(rescale))
    return cell


def _valid_cell_factor(spatial, kernel, strides, begin, end, ceil_mode) -> np.ndarray:
    """Per output position: kernel volume / number of non-padding cells in its window."""
    factors = []
    for size, k, s, b, e in zip(spatial, kernel, strides, begin, end):
        padded = size + b + e
        steps = (padded - k + (s - 1 if ceil_mode else 0)) // s + 1
        starts = np.arange(steps) * s - b
        valid = np.minimum(starts + k, size) - np.maximum(starts, 0)
        factors.append(k / valid)
    grid = factors[0]
    for axis_factor in factors[1:]:
        grid = np.multiply.outer(grid, axis_factor)
    return grid.astype(np.float32)


@mapper("MaxPool")
def max_pool(ctx: NodeContext):
    """MaxPool -> nn.MaxPool1d/2d/3d (pads, dilations, ceil_mode); the indices output is not supported."""
    if ctx.output_used(1):
        raise Unsupported("the Indices output of MaxPool is not supported")
    if int(ctx.attr("storage_order", 0)) != 0:
        raise Unsupported("column-major storage_order")
    return _pool(ctx, _MAX_CELLS, True)


@mapper("AveragePool")
def average_pool(ctx: NodeContext):
    """AveragePool -> nn.AvgPool1d/2d/3d with count_include_pad and ceil_mode."""
    if any(d != 1 for d in ctx.attr("dilations", [])):
        raise Unsupported("dilated average pooling has no MindSpore equivalent")
    return _pool(ctx, _AVG_CELLS, False)


def _spatial_axes(ctx: NodeContext) -> tuple[int, ...]:
    rank = ctx.input_rank(0)
    return tuple(range(2, rank))


@mapper("GlobalAveragePool")
def global_average_pool(ctx: NodeContext):
    """GlobalAveragePool -> ops.mean over the spatial axes, keeping them."""
    return Call("ops.mean", [Input(0)], {"axis": Lit(_spatial_axes(ctx)), "keep_dims": Lit(True)})


@mapper("GlobalMaxPool")
def global_max_pool(ctx: NodeContext):
    """GlobalMaxPool -> ops.amax over the spatial axes, keeping them."""
    return Call("ops.amax", [Input(0)], {"axis": Lit(_spatial_axes(ctx)), "keepdims": Lit(True)})
