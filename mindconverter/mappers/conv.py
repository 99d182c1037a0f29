"""Convolutions: Conv (1-D/2-D/3-D) and ConvTranspose as ``nn.Conv*`` cells."""

from __future__ import annotations

import numpy as np

from ..graph.weight_roles import learned_source
from ..graph.weight_steps import Reshape
from .base import Cell, Input, Item, Lit, NodeContext, Param, Unsupported, Weight
from .common import compact, is_static, pad_call, spatial_attrs, spatial_pads
from .registry import mapper
from .syntax import ops

_CONV_CELLS = {1: "nn.Conv1d", 2: "nn.Conv2d", 3: "nn.Conv3d"}
_DECONV_CELLS = {1: "nn.Conv1dTranspose", 2: "nn.Conv2dTranspose", 3: "nn.Conv3dTranspose"}


def _padding_kwargs(begin: list[int], end: list[int], rank: int) -> dict:
    """MindSpore padding: an int when uniform, else (begin, end) per axis in axis order."""
    if not any(begin) and not any(end):
        return {"pad_mode": "valid"}
    if begin == end and len(set(begin)) == 1:
        return {"pad_mode": "pad", "padding": begin[0]}
    pairs = []
    for b, e in zip(begin, end):
        pairs += [int(b), int(e)]
    return {"pad_mode": "pad", "padding": tuple(pairs)}


def _functional_conv(ctx: NodeContext):
    """ops.convNd(x, w, b) for a weight (and bias) computed at run time; padding via ops.pad."""
    rank = len(ctx.input_shape(1)) - 2
    if rank not in (1, 2, 3):
        raise Unsupported(f"{rank}-D convolution")
    x_shape = ctx.require_shape(0)
    kernel, strides, dilations = spatial_attrs(ctx, rank, list(ctx.input_shape(1)[2:]))
    begin, end = spatial_pads(ctx, x_shape[2:], kernel, strides, dilations)
    x = pad_call(Input(0), begin, end) if any(begin) or any(end) else Input(0)
    args = [x, ctx.operand(1), ctx.operand(2) if ctx.has_input(2) else Lit(None)]
    kwargs = {
        "stride": Lit(compact(strides)),
        "dilation": Lit(compact(dilations)),
        "groups": Lit(int(ctx.attr("group", 1))),
    }
    return ops[f"conv{rank}d"](*args, **kwargs)


def _made_up_zero_bias(ctx: NodeContext, index: int) -> bool:
    """A bias of zeros the exporter made up for a layer without one (not a source weight)."""
    value = ctx.const(index)
    return (
        value is not None
        and not value.any()
        and learned_source(ctx.graph, ctx.node.inputs[index]) is None
    )


@mapper("Conv")
def conv(ctx: NodeContext):
    """Conv -> nn.Conv1d/2d/3d with explicit padding (asymmetric 1-D pads go through ops.pad);
    a weight computed at run time goes through the functional ops.conv1d/2d/3d."""
    if not ctx.is_const(1) and ctx.input_shape(1) is not None:
        return _functional_conv(ctx)
    weight = ctx.require_const(1, "the Conv weight")
    rank = weight.ndim - 2
    if rank not in _CONV_CELLS:
        raise Unsupported(f"{rank}-D convolution has no MindSpore cell")
    x_shape = ctx.require_shape(0)
    kernel, strides, dilations = spatial_attrs(ctx, rank, list(weight.shape[2:]))
    begin, end = spatial_pads(ctx, x_shape[2:], kernel, strides, dilations)
    group = int(ctx.attr("group", 1))
    out_channels, in_channels = int(weight.shape[0]), int(weight.shape[1]) * group
    x = Input(0)
    stored = weight
    transform = ()
    if rank == 1:
        stored = weight.reshape(weight.shape[0], weight.shape[1], 1, weight.shape[2])
        transform = (Reshape("reshape to (out, in/group, 1, k) as nn.Conv1d stores it"),)
        if begin != end:
            x = pad_call(x, begin, end)
            begin, end = [0], [0]
    kwargs = {
        "in_channels": in_channels,
        "out_channels": out_channels,
        "kernel_size": compact(kernel),
    }
    if any(s != 1 for s in strides):
        kwargs["stride"] = compact(strides)
    kwargs.update(_padding_kwargs(begin, end, rank))
    if any(d != 1 for d in dilations):
        kwargs["dilation"] = compact(dilations)
    if group != 1:
        kwargs["group"] = group
    weights = {"weight": ctx.weight(1, stored, transform)}
    if ctx.has_input(2) and not _made_up_zero_bias(ctx, 2):
        kwargs["has_bias"] = True
        weights["bias"] = ctx.weight(2)
    elif _batchnorm_folded(ctx):  # zero at export, not after new weights: keep it a Parameter
        kwargs["has_bias"] = True
        conv_path = weights["weight"].source.rpartition(".")[0]
        bias_source = f"{conv_path}.bias" if conv_path else ""
        weights["bias"] = Weight(np.zeros(out_channels, weight.dtype), bias_source)
    return Cell(_CONV_CELLS[rank], kwargs=kwargs, args=[x], weights=weights, role="conv")


def _batchnorm_folded(ctx: NodeContext) -> bool:
    """Whether the exporter folded a BatchNorm into this convolution and dropped the bias it
    left (zero while the BatchNorm is at its initial statistics)."""
    return "FuseBatchNormIntoConv" in ctx.node.metadata.get("pkg.onnxscript.rewriter.rule_name", "")


def _window_past_the_result(cell, begin, lengths, full, gaps, bias):
    """The window [begin, begin + length) per spatial axis of a transposed convolution whose
    result (full + gap long) it overhangs: padded with zeros first, the bias added after."""
    widths, index = [], [slice(None), slice(None)]
    for b, n, f, g in zip(begin, lengths, full, gaps):
        front, back = max(-b, 0), max(b + n - (f + g), 0)
        widths.append((front, back))
        index.append(slice(b + front or None, b + front + n))
    flat = tuple(size for pair in reversed(widths) for size in pair)
    result = Item(ops.pad(cell, Lit(flat)), tuple(index))
    if bias is None:
        return result
    shape = (1, -1) + (1,) * len(begin)
    return result + ops.reshape(bias, Lit(shape))


def _transposed_window(ctx: NodeContext, x_shape, kernel, strides, dilations, output_padding):
    """ONNX's window of the full transposed convolution: (begin, end, lengths, full, known);
    ``end`` counts from the full result's end (output_padding taken off)."""
    rank = len(kernel)
    known = is_static(list(x_shape[2:]))
    full = [
        (i - 1) * s + (k - 1) * d + 1 if known else None
        for i, s, k, d in zip(x_shape[2:], strides, kernel, dilations)
    ]
    auto_pad = ctx.attr("auto_pad", "NOTSET") or "NOTSET"
    if ctx.has_attr("output_shape") or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if not known:
            raise Unsupported("ConvTranspose to an output shape of an input sized at run time")
        out_shape = ctx.output_shape(0)
        if out_shape is None:
            raise Unsupported("the output shape of ConvTranspose is unknown")
        lengths = [int(t) for t in out_shape[2:]]
        begin = []
        for f, op, t in zip(full, output_padding, lengths):
            total = f + op - t
            small = total // 2
            # ONNX: SAME_UPPER puts the smaller half first, every other setting the larger half.
            begin.append(small if auto_pad == "SAME_UPPER" else total - small)
        end = [f - b - n for f, b, n in zip(full, begin, lengths)]
    else:
        pads = list(ctx.attr("pads", [0] * 2 * rank)) or [0] * 2 * rank
        begin = pads[:rank]
        end = [e - op for e, op in zip(pads[rank:], output_padding)]  # = full - begin - length
        lengths = [f - b - e for f, b, e in zip(full, begin, end)] if known else None
    return begin, end, lengths, full, known


def _functional_conv_transpose(ctx: NodeContext):
    """ConvTranspose with a weight computed at run time, written with ops: the input spread
    out by the strides (zeros between its values), padded by the dilated kernel's reach less
    ONNX's pads, then ops.convNd with the weight's taps flipped and its channel axes swapped
    (per group)."""
    w_shape, x_shape = ctx.input_shape(1), ctx.require_shape(0)
    rank = len(w_shape) - 2
    if rank not in (1, 2, 3):
        raise Unsupported(f"{rank}-D transposed convolution")
    if not is_static(list(w_shape)) or not is_static(list(x_shape[1:])):
        raise Unsupported("a run-time ConvTranspose weight with sizes known only at run time")
    kernel, strides, dilations = spatial_attrs(ctx, rank, list(w_shape[2:]))
    group = int(ctx.attr("group", 1))
    in_channels, out_per_group = int(w_shape[0]), int(w_shape[1])
    output_padding = list(ctx.attr("output_padding", [0] * rank)) or [0] * rank
    begin, end, _, _, _ = _transposed_window(
        ctx, x_shape, kernel, strides, dilations, output_padding
    )
    taps = ops.flip(ctx.operand(1), Lit(tuple(range(2, rank + 2))))
    per_group = (group, in_channels // group, out_per_group, *kernel)
    taps = ops.reshape(taps, Lit(per_group))
    taps = ops.transpose(taps, Lit((0, 2, 1, *range(3, rank + 3))))
    taps = ops.reshape(taps, Lit((group * out_per_group, in_channels // group, *kernel)))
    x = Input(0)
    spatial = [int(n) for n in x_shape[2:]]
    if any(s > 1 for s in strides):  # zeros between the values: (L, 1) padded to (L, s), merged
        interleaved = [size for n in spatial for size in (n, 1)]
        x = ops.reshape(x, Lit((-1, in_channels, *interleaved)))
        gaps = [size for s in strides for size in (0, s - 1)]
        x = pad_call(x, [0] * 2 * rank, gaps)
        merged = tuple(n * s for n, s in zip(spatial, strides))
        x = ops.reshape(x, Lit((-1, in_channels, *merged)))
    reach = [(k - 1) * d for k, d in zip(kernel, dilations)]
    front = [r - b for r, b in zip(reach, begin)]
    back = [r - e - (s - 1) for r, e, s in zip(reach, end, strides)]  # the spread's extra zeros
    if any(f > 0 for f in front) or any(b > 0 for b in back):
        x = pad_call(x, [max(f, 0) for f in front], [max(b, 0) for b in back])
    bias = ctx.operand(2) if ctx.has_input(2) else Lit(None)
    kwargs = {"dilation": Lit(compact(dilations)), "groups": Lit(group)}
    y = ops[f"conv{rank}d"](x, taps, bias, **kwargs)
    if any(f < 0 for f in front) or any(b < 0 for b in back):
        window = [slice(-f if f < 0 else None, b if b < 0 else None) for f, b in zip(front, back)]
        y = Item(y, (slice(None), slice(None), *window))
    return y


@mapper("ConvTranspose")
def conv_transpose(ctx: NodeContext):
    """ConvTranspose -> nn.Conv2dTranspose (and 1-D/3-D) with padding and output_padding;
    a weight computed at run time goes through ops.conv1d/2d/3d on the input spread out by
    the strides."""
    if not ctx.is_const(1) and ctx.input_shape(1) is not None:
        return _functional_conv_transpose(ctx)
    weight = ctx.require_const(1, "the ConvTranspose weight")
    rank = weight.ndim - 2
    if rank not in _DECONV_CELLS:
        raise Unsupported(f"{rank}-D transposed convolution has no MindSpore cell")
    x_shape = ctx.require_shape(0)
    kernel, strides, dilations = spatial_attrs(ctx, rank, list(weight.shape[2:]))
    group = int(ctx.attr("group", 1))
    in_channels, out_channels = int(weight.shape[0]), int(weight.shape[1]) * group
    output_padding = list(ctx.attr("output_padding", [0] * rank)) or [0] * rank
    # The full (uncropped) transposed convolution; ONNX's result is a window of it. Spatial
    # sizes known only at run time (regions of interest...) leave it unknown: explicit pads
    # then still give the window, counted from the ends.
    begin, end, lengths, full, known = _transposed_window(
        ctx, x_shape, kernel, strides, dilations, output_padding
    )
    # A stride longer than the dilated kernel: MindSpore's "valid" result is longer than the full
    # one by the gap (bias-only cells at the end, which output_padding may reach) and its "pad"
    # mode fails, so the window is sliced from the "valid" result.
    gaps = [max(s - (k - 1) * d - 1, 0) for s, k, d in zip(strides, kernel, dilations)]
    beyond = any(b < 0 for b in begin) or any(e < -g for e, g in zip(end, gaps))
    # MindSpore crops symmetric padding itself; any other window is sliced from the full result.
    symmetric = begin == end and len(set(begin)) == 1 and not any(gaps) and not beyond
    kwargs = {
        "in_channels": in_channels,
        "out_channels": out_channels,
        "kernel_size": compact(kernel),
    }
    if any(s != 1 for s in strides):
        kwargs["stride"] = compact(strides)
    stored = weight
    transform = ""
    if rank == 1:
        stored = weight.reshape(weight.shape[0], weight.shape[1], 1, weight.shape[2])
        transform = "reshape to (in, out/group, 1, k) as nn.Conv1dTranspose stores it"
    if symmetric and begin[0]:
        kwargs.update({"pad_mode": "pad", "padding": int(begin[0])})
    else:
        kwargs["pad_mode"] = "valid"
    if any(d != 1 for d in dilations):
        kwargs["dilation"] = compact(dilations)
    if group != 1:
        kwargs["group"] = group
    weights = {"weight": ctx.weight(1, stored, transform)}
    has_bias = ctx.has_input(2) and not _made_up_zero_bias(ctx, 2)
    if has_bias and not beyond:
        kwargs["has_bias"] = True
        weights["bias"] = ctx.weight(2)
    cell = Cell(_DECONV_CELLS[rank], kwargs=kwargs, args=[Input(0)], weights=weights, role="deconv")
    if symmetric:
        return cell
    if beyond and not known:
        raise Unsupported(
            "ConvTranspose output_padding past the taps of an input sized at run time"
        )
    if beyond:  # output_padding reaches past every tap: zeros there, then the bias everywhere
        bias = Param(ctx.weight(2), role="bias") if has_bias else None
        return _window_past_the_result(cell, begin, lengths, full, gaps, bias)

    if known:
        window = [
            slice(b or None, (f - e) if e or g else None)
            for b, e, f, g in zip(begin, end, full, gaps)
        ]
    else:  # counted from the end of MindSpore's "valid" result, which is full + gap long
        window = [
            slice(b or None, -(e + g) if e + g else None) for b, e, g in zip(begin, end, gaps)
        ]
    index = (slice(None), slice(None)) + tuple(window)
    return Item(cell, index)
