"""Signal processing: DFT and STFT as matrix products with constant cosine/sine tables, Col2Im,
and the window generators (Hann, Hamming, Blackman)."""

from __future__ import annotations

import math

import numpy as np
from onnx import helper

from .base import (
    BinOp,
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
from .syntax import ms, ops


def _tables(rows: int, cols: int, length: int, inverse: bool, onesided: bool):
    """(re->re, im->re, re->im, im->im) matrices mapping `rows` input to `cols` output samples."""
    r = np.arange(rows).reshape(-1, 1)
    c = np.arange(cols).reshape(1, -1)
    theta = 2 * np.pi * ((r * c) % length) / length
    cos, sin = np.cos(theta), np.sin(theta)
    if not inverse:  # X[k] = sum_n x[n] e^{-i theta}
        return cos, sin, -sin, cos
    weight = np.ones((rows, 1))
    if onesided:  # a one-sided spectrum stands for its conjugate mirror as well
        weight[1:] = 2
        if length % 2 == 0 and rows > length // 2:
            weight[length // 2] = 1
    cos, sin = cos * weight / length, sin * weight / length
    return cos, -sin, sin, cos


@mapper("DFT", since=17)
def dft(ctx: NodeContext):
    """DFT -> real/imaginary parts times constant cos/sin tables along the signal axis
    (forward, inverse, one-sided and its inverse, dft_length padding/trimming)."""
    shape = ctx.require_shape(0)
    rank = len(shape)
    if shape[-1] not in (1, 2):
        raise Unsupported(f"DFT input's last axis has {shape[-1]} components (expected 1 or 2)")
    if ctx.opset >= 20:
        axis = int(ctx.const_ints(2, "the DFT axis")[0]) if ctx.has_input(2) else -2
    else:
        axis = int(ctx.attr("axis", 1))
    axis = normalize_axis(axis, rank)
    if axis == rank - 1:
        raise Unsupported("DFT along the real/imaginary axis")
    inverse = bool(int(ctx.attr("inverse", 0)))
    onesided = bool(int(ctx.attr("onesided", 0)))
    n_in = shape[axis]
    if ctx.has_input(1):
        length = int(ctx.const_ints(1, "dft_length")[0])
    else:
        length = 2 * (n_in - 1) if inverse and onesided else n_in
    if inverse and onesided:
        rows, cols = min(n_in, length // 2 + 1), length
    elif inverse:
        rows, cols = min(n_in, length), length
    else:
        rows, cols = min(n_in, length), (length // 2 + 1 if onesided else length)
    dtype = np.dtype(ctx.input_dtype(0) or np.float32)
    tables = [Const(t.astype(dtype)) for t in _tables(rows, cols, length, inverse, onesided)]

    def part(index):
        value = Item(Input(0), (Ellipsis, index))
        value = ops.movedim(value, Lit(axis), Lit(-1)) if axis != rank - 2 else value
        if rows < n_in:
            value = Item(value, (Ellipsis, slice(None, rows)))
        return Temp(value, "real" if index == 0 else "imag")

    real = part(0)
    imag = part(1) if shape[-1] == 2 else None

    def combine(from_real, from_imag):
        out = ops.matmul(real, from_real)
        if imag is not None:
            out = out + ops.matmul(imag, from_imag)
        return ops.movedim(out, Lit(-1), Lit(axis)) if axis != rank - 2 else out

    out_real = combine(tables[0], tables[1])
    if inverse and onesided:
        return ops.unsqueeze(out_real, Lit(-1))
    out_imag = combine(tables[2], tables[3])
    return ops.stack([out_real, out_imag], axis=Lit(-1))


@mapper("Col2Im", since=18)
def col2im(ctx: NodeContext):
    """Col2Im (2-D images) -> ops.fold with the block shape, dilations, symmetric pads and
    strides; other ranks and asymmetric pads -> a matmul with a constant 0/1 placement matrix."""
    image = ctx.const_ints(1, "image_shape")
    block = ctx.const_ints(2, "block_shape")
    pads = list(ctx.attr("pads", [0] * 2 * len(image)))
    if len(image) != 2 or pads[:2] != pads[2:]:
        return _col2im_by_matmul(ctx, image, block, pads)
    kwargs = {
        "dilation": Lit(tuple(ctx.attr("dilations", [1, 1]))),
        "padding": Lit(tuple(pads[:2])),
        "stride": Lit(tuple(ctx.attr("strides", [1, 1]))),
    }
    size = ms.Tensor(Lit(tuple(image)), DType("int32"))
    return ops.fold(Input(0), size, Lit(tuple(block)), **kwargs)


MAX_PLACEMENT_ELEMENTS = 1 << 24  # the 0/1 matrix of _col2im_by_matmul (64 MB in float32)


def _col2im_by_matmul(ctx: NodeContext, image: list[int], block: list[int], pads: list[int]):
    """Col2Im over any number of spatial axes: each column entry (channel, block offset,
    position) is summed into its pixel of the padded image by one matmul with a constant 0/1
    matrix, and the pads are cut off."""
    rank = len(image)
    dilations = list(ctx.attr("dilations", [1] * rank)) or [1] * rank
    strides = list(ctx.attr("strides", [1] * rank)) or [1] * rank
    shape = ctx.require_shape(0)
    if len(block) != rank or len(pads) != 2 * rank or len(shape) != 3:
        raise Unsupported(f"Col2Im of a {shape} input with block {block} and pads {pads}")
    padded = [n + pads[i] + pads[rank + i] for i, n in enumerate(image)]
    counts = [
        (p - (d * (b - 1) + 1)) // s + 1 for p, b, d, s in zip(padded, block, dilations, strides)
    ]
    kernel, positions, pixels = math.prod(block), math.prod(counts), math.prod(padded)
    if not isinstance(shape[1], int) or shape[1] % kernel or shape[2] != positions:
        raise Unsupported(f"Col2Im input {shape} does not hold {kernel} x {positions} blocks")
    if kernel * positions * pixels > MAX_PLACEMENT_ELEMENTS:
        raise Unsupported("Col2Im too large for a placement matrix")
    offsets = np.stack(np.meshgrid(*[np.arange(b) for b in block], indexing="ij"), -1)
    starts = np.stack(np.meshgrid(*[np.arange(c) for c in counts], indexing="ij"), -1)
    where = starts.reshape(1, -1, rank) * np.array(strides) + offsets.reshape(
        -1, 1, rank
    ) * np.array(dilations)  # (kernel, positions, rank) pixel coordinates in the padded image
    flat = np.ravel_multi_index(tuple(where.reshape(-1, rank).T), padded)
    placement = np.zeros((kernel * positions, pixels), ctx.input_dtype(0) or np.float32)
    placement[np.arange(kernel * positions), flat] = 1
    channels = shape[1] // kernel
    x = ops.reshape(Input(0), Lit((-1, channels, kernel * positions)))
    y = ops.matmul(x, Const(placement))
    y = ops.reshape(y, Lit((-1, channels, *padded)))
    if not any(pads):
        return y
    window = [slice(pads[i] or None, -pads[rank + i] or None) for i in range(rank)]
    return Item(y, (slice(None), slice(None), *window))


@mapper("STFT", since=17)
def stft(ctx: NodeContext):
    """STFT -> frames cut with static slices and stacked, times the window, times constant
    cos/sin DFT tables (one-sided by default)."""
    shape = ctx.require_shape(0)
    if len(shape) != 3 or shape[-1] not in (1, 2):
        raise Unsupported(f"STFT of a signal shaped {shape}")
    step = int(ctx.const_ints(1, "frame_step")[0])
    if ctx.has_input(3):
        length = int(ctx.const_ints(3, "frame_length")[0])
    elif ctx.has_input(2):
        length = int(ctx.require_shape(2)[0])
    else:
        length = shape[1]
    onesided = bool(int(ctx.attr("onesided", 1)))
    frames = 1 + (shape[1] - length) // step
    if frames > 512:
        raise Unsupported(f"STFT with {frames} frames (each frame is one slice in the script)")
    cols = length // 2 + 1 if onesided else length
    dtype = np.dtype(ctx.input_dtype(0) or np.float32)
    tables = [Const(t.astype(dtype)) for t in _tables(length, cols, length, False, onesided)]

    def framed(index):
        part = Item(Input(0), (slice(None), slice(None), index))
        cut = ops.stack(
            [Item(part, (slice(None), slice(f * step, f * step + length))) for f in range(frames)],
            axis=Lit(1),
        )
        if ctx.has_input(2):
            cut = cut * ctx.operand(2)
        return Temp(cut, "frames" if index == 0 else "frames_imag")

    real = framed(0)
    imag = framed(1) if shape[-1] == 2 else None

    def combine(from_real, from_imag):
        out = ops.matmul(real, from_real)
        return out if imag is None else out + ops.matmul(imag, from_imag)

    return ops.stack([combine(tables[0], tables[1]), combine(tables[2], tables[3])], axis=Lit(-1))


def _window(ctx: NodeContext, coefficients: tuple[float, ...]):
    """``sum_k (-1)^k a_k cos(2πkn/N)`` for n in [0, size), N = size (periodic) or size - 1."""
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(int(ctx.attr("output_datatype", 1))))
    if dtype.kind != "f":
        raise Unsupported(f"a window of dtype {dtype.name}")
    size = ctx.const(0)
    if size is not None:
        length = int(np.asarray(size).reshape(-1)[0])
        n = ops.arange(Lit(length), dtype=DType("float32"))
        denominator = Lit(float(length if int(ctx.attr("periodic", 1)) else length - 1))
    else:
        n = ops.arange(Input(0), dtype=DType("float32"))
        count = ops.cast(Input(0), DType("float32"))
        denominator = count if int(ctx.attr("periodic", 1)) else count - Lit(1.0)
    phase = Temp(n * Lit(2 * math.pi) / denominator, "phase")
    result = None
    for k, a in enumerate(coefficients):
        if k == 0:
            continue
        term = Lit(a) * ops.cos(phase * Lit(float(k)) if k > 1 else phase)
        result = BinOp(
            "-" if k % 2 else "+", Lit(coefficients[0]) if result is None else result, term
        )
    return result if dtype == np.float32 else ops.cast(result, DType(dtype.name))


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


@mapper("MelWeightMatrix", since=17)
def mel_weight_matrix(ctx: NodeContext):
    """MelWeightMatrix (all inputs constant, as exporters write it) -> the matrix computed at
    conversion time by onnx's reference evaluator, as a constant."""
    from onnx.reference import ReferenceEvaluator

    values = [np.asarray(ctx.require_const(i, "MelWeightMatrix's inputs")) for i in range(5)]
    names = [f"input_{i}" for i in range(5)]
    node = helper.make_node(
        "MelWeightMatrix", names, ["matrix"], output_datatype=int(ctx.attr("output_datatype", 1))
    )
    inputs = [
        helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
        for n, v in zip(names, values)
    ]
    graph = helper.make_graph(
        [node], "mel", inputs, [helper.make_empty_tensor_value_info("matrix")]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    (matrix,) = ReferenceEvaluator(model).run(None, dict(zip(names, values)))
    return Const(np.asarray(matrix))
