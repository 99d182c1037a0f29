"""onnxruntime's quantized operators (domain ``com.microsoft``) as a trainable float network.

The weights the quantizers stored as integers (``MatMulNBits``' 2/4/8-bit blocks,
``GatherBlockQuantized`` tables, the int8 weights of ``DynamicQuantizeMatMul``,
``MatMulIntegerToFloat``, ``QAttention``, ``QGemm``) are dequantized once, at conversion, into
float ``nn.Dense``/``nn.Embedding`` weights: ``(q - zero_point) * scale``; the weight map
records that transform. Activations the operator quantizes at run time (``DynamicQuantizeMatMul``
and the ``QLinear*`` element-wise family, whose inputs and outputs are integer tensors) are
quantized and dequantized as onnxruntime does, so the outputs match it; a straight-through
estimator (``x + stop_gradient(fake - x)``) keeps gradients flowing through that rounding.
Semantics from onnxruntime's ContribOperators.md.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .base import (
    BinOp,
    Cell,
    Const,
    DType,
    Input,
    Lit,
    NodeContext,
    Param,
    Temp,
    Unsupported,
    Weight,
)
from .common import cast_to
from .contrib_attention import PackedProjection, finish_attention, packed_self_attention
from .contrib_fused import MS_DOMAIN, EmbeddingInputs, embedding_layer_norm
from .pooling import average_pool
from .quantization import dequantize_linear, quantize_linear
from .recurrent import lstm
from .registry import mapper
from .syntax import ops

_RANGES = {"uint8": (0, 255), "int8": (-128, 127), "uint16": (0, 65535), "int16": (-32768, 32767)}


def unpack_bits(packed: np.ndarray, bits: int, count: int) -> np.ndarray:
    """Integers of ``bits`` bits packed low-order first into the uint8 bytes of the last axis;
    the first ``count`` of each row."""
    if bits not in (2, 4, 8):
        raise Unsupported(f"{bits}-bit packed weights")
    if bits == 8:
        return np.asarray(packed).astype(np.int32)[..., :count]
    shifts = (np.arange(8 // bits) * bits).astype(np.uint8)
    values = (np.asarray(packed, np.uint8)[..., None] >> shifts) & np.uint8((1 << bits) - 1)
    return values.reshape(*packed.shape[:-1], -1)[..., :count].astype(np.int32)


def _nbits_zero_points(ctx: NodeContext, n: int, blocks: int, bits: int) -> np.ndarray:
    """MatMulNBits' zero points as (N, blocks): packed like the weight, float, or the default
    2^(bits-1)."""
    if not ctx.has_input(3):
        return np.full((n, blocks), 2 ** (bits - 1), np.float32)
    zero = np.asarray(ctx.require_const(3, "the zero points"))
    if zero.dtype == np.uint8:
        return unpack_bits(zero.reshape(n, -1), bits, blocks).astype(np.float32)
    return zero.reshape(n, blocks).astype(np.float32)


def _nbits_blocks(ctx: NodeContext) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MatMulNBits' weight unpacked: the integers (N, blocks, block) and the scales and zero
    points (N, blocks), float32."""
    k, n = int(ctx.attr("K")), int(ctx.attr("N"))
    bits, block = int(ctx.attr("bits", 4)), int(ctx.attr("block_size"))
    packed = np.asarray(ctx.require_const(1, "the quantized weight"))
    if int(ctx.attr("weight_prepacked", 0)) or packed.ndim != 3:
        raise Unsupported("a prepacked MatMulNBits weight")
    blocks = packed.shape[1]
    if packed.shape != (n, -(-k // block), block * bits // 8):
        raise Unsupported(f"a packed weight of shape {list(packed.shape)} for K={k}, N={n}")
    if ctx.has_input(4):
        g_idx = np.asarray(ctx.require_const(4, "g_idx")).reshape(-1)
        if not np.array_equal(g_idx[:k], np.arange(k) // block):
            raise Unsupported("MatMulNBits with a reordering g_idx")
    values = unpack_bits(packed.reshape(n, blocks, -1), bits, block)
    scales = np.asarray(ctx.require_const(2, "the scales")).astype(np.float32).reshape(n, blocks)
    return values, scales, _nbits_zero_points(ctx, n, blocks, bits)


def nbits_weight(ctx: NodeContext) -> np.ndarray:
    """MatMulNBits' weight dequantized to float32 (N, K): (q - zero_point) * scale per block."""
    values, scales, zero = _nbits_blocks(ctx)
    weight = (values.astype(np.float32) - zero[..., None]) * scales[..., None]
    return weight.reshape(values.shape[0], -1)[:, : int(ctx.attr("K"))]


@dataclasses.dataclass
class QuantizedWeight:
    """A weight the checkpoint keeps as integers (--keep_quantized): ``values`` [N, blocks,
    block], ``scale`` and ``zero_point`` [N, blocks], read from inputs ``sources`` (the values',
    the scale's and the zero point's; None for a zero point the operator defaults)."""

    values: np.ndarray
    scale: np.ndarray
    zero_point: np.ndarray
    sources: tuple[int, int, int | None]
    note: str


def quantized_dense(ctx: NodeContext, x, weight: QuantizedWeight, bias: int | None) -> Cell:
    """The script's QuantizedDense cell: the integers kept, dequantized as it runs."""
    n, blocks, block = weight.values.shape
    value_index, scale_index, zero_index = weight.sources
    zero_note = f"{weight.note}; one zero point a block"
    weights = {
        "weight": ctx.weight(value_index, weight.values, weight.note),
        "scale": ctx.weight(scale_index, weight.scale[..., None], f"{weight.note}; one a block"),
        "zero_point": (
            ctx.weight(zero_index, weight.zero_point[..., None], zero_note)
            if zero_index is not None
            else Weight(weight.zero_point[..., None], "", "the operator's default zero point")
        ),
    }
    kwargs = {
        "in_channels": int(ctx.attr("K")) if ctx.has_attr("K") else blocks * block,
        "out_channels": n,
        "blocks": blocks,
        "block": block,
    }
    if weight.values.dtype != np.int8:
        kwargs["dtype"] = DType(weight.values.dtype.name)
    if bias is not None and ctx.has_input(bias):
        weights["bias"] = ctx.weight(bias, np.asarray(ctx.require_const(bias, "the bias")))
    else:
        kwargs["has_bias"] = False
    return Cell("QuantizedDense", kwargs=kwargs, args=[x], weights=weights, role="fc")


def _nbits_quantized(ctx: NodeContext) -> QuantizedWeight:
    """MatMulNBits' weight unpacked to one uint8 a value, with its block scales and zero points."""
    bits, block = int(ctx.attr("bits", 4)), int(ctx.attr("block_size"))
    values, scales, zero = _nbits_blocks(ctx)
    note = f"unpacked from {bits}-bit blocks of {block}, one value a byte (K={ctx.attr('K')})"
    sources = (1, 2, 3 if ctx.has_input(3) else None)
    return QuantizedWeight(values.astype(np.uint8), scales, zero, sources, note)


def _columns_quantized(ctx: NodeContext, weight: int, scale: int, zero: int) -> QuantizedWeight:
    """An integer (K, N) weight with a scalar or per-column scale and zero point, as N rows of
    one block of K."""
    values = np.asarray(ctx.require_const(weight, "the quantized weight"))
    k, n = values.shape
    scales = np.asarray(ctx.require_const(scale, "the weight scale")).astype(np.float32)
    zero_point = (
        np.asarray(ctx.require_const(zero, "the weight zero point")).astype(np.float32)
        if ctx.has_input(zero)
        else np.zeros((), np.float32)
    )
    if scales.size not in (1, n) or zero_point.size not in (1, n):
        raise Unsupported("a weight scale or zero point that is neither per tensor nor per column")
    return QuantizedWeight(
        np.ascontiguousarray(values.T).reshape(n, 1, k),
        np.broadcast_to(scales.reshape(-1), (n,)).reshape(n, 1).copy(),
        np.broadcast_to(zero_point.reshape(-1), (n,)).reshape(n, 1).copy(),
        (weight, scale, zero if ctx.has_input(zero) else None),
        "transpose(1, 0); as [N, 1, K]",
    )


@mapper("MatMulNBits", domain=MS_DOMAIN)
def matmul_nbits(ctx: NodeContext):
    """MatMulNBits -> nn.Dense(K, N) holding the dequantized float weight (and the bias);
    QuantizedDense holding the unpacked integers with --keep_quantized."""
    if ctx.keep_quantized:
        return quantized_dense(ctx, Input(0), _nbits_quantized(ctx), 5)
    weight = nbits_weight(ctx)
    bits, block = int(ctx.attr("bits", 4)), int(ctx.attr("block_size"))
    dtype = np.dtype(ctx.input_dtype(0) or np.float32)
    note = f"dequantized from {bits}-bit blocks of {block}: (q - zero_point) * scale"
    weights = {"weight": ctx.weight(1, weight.astype(dtype), note)}
    kwargs = {"in_channels": int(ctx.attr("K")), "out_channels": int(ctx.attr("N"))}
    if ctx.has_input(5):
        weights["bias"] = ctx.weight(5)
    else:
        kwargs["has_bias"] = False
    return Cell("nn.Dense", kwargs=kwargs, args=[Input(0)], weights=weights, role="fc")


def _block_values(ctx: NodeContext, index: int, bits: int, count: int) -> np.ndarray:
    """A GatherBlockQuantized data/zero-point tensor as integers (uint8 packed along the last
    axis when bits < 8)."""
    value = np.asarray(ctx.require_const(index, "the quantized table"))
    if value.dtype == np.uint8 and bits < 8:
        return unpack_bits(value, bits, count)
    if value.dtype.kind not in "iu":
        raise Unsupported(f"a {value.dtype} quantized table")
    return value.astype(np.int32)


@mapper("GatherBlockQuantized", domain=MS_DOMAIN)
def gather_block_quantized(ctx: NodeContext):
    """GatherBlockQuantized -> a gather from the dequantized float table (an nn.Embedding when
    rows are gathered from a 2-D table)."""
    bits, block = int(ctx.attr("bits", 4)), int(ctx.attr("block_size", 128))
    raw = np.asarray(ctx.require_const(0, "the quantized table"))
    packed = raw.dtype == np.uint8 and bits < 8
    quantize_axis = int(ctx.attr("quantize_axis", 1)) % raw.ndim
    gather_axis = int(ctx.attr("gather_axis", 0)) % raw.ndim
    count = raw.shape[-1] * (8 // bits) if packed else raw.shape[-1]
    values = _block_values(ctx, 0, bits, count)
    length = values.shape[quantize_axis]
    scales = np.asarray(ctx.require_const(2, "the scales"))
    if block <= 0:
        raise Unsupported("GatherBlockQuantized with one block per row")
    blocks = np.arange(length) // block  # the block of each element along quantize_axis
    if blocks[-1] >= scales.shape[quantize_axis]:
        raise Unsupported(f"{scales.shape[quantize_axis]} scales for {length} values in blocks of {block}")  # fmt: skip
    spread = np.take(scales.astype(np.float32), blocks, axis=quantize_axis)
    if ctx.has_input(3):
        zero = _block_values(ctx, 3, bits, scales.shape[-1])
        zero = np.take(zero, blocks, axis=quantize_axis)
    else:
        zero = 2 ** (bits - 1) if raw.dtype == np.uint8 else 0
    table = ((values - zero) * spread).astype(scales.dtype)
    note = f"dequantized from {bits}-bit blocks of {block}: (q - zero_point) * scale"
    weight = ctx.weight(0, table, note)
    if gather_axis == 0 and table.ndim == 2:
        kwargs = {"vocab_size": int(table.shape[0]), "embedding_size": int(table.shape[1])}
        return Cell(
            "nn.Embedding",
            kwargs=kwargs,
            args=[Input(1)],
            weights={"embedding_table": weight},
            role="embedding",
        )
    return ops.gather(Param(weight), Input(1), Lit(gather_axis))


def _scalar_or_input(ctx: NodeContext, index: int, default: float = 0.0):
    """A scale or zero point: a float literal when constant and single, else the tensor in
    float32."""
    if not ctx.has_input(index):
        return Lit(default)
    value = ctx.const(index)
    if value is not None and np.asarray(value).size == 1:
        return Lit(float(np.asarray(value).reshape(())))
    if value is not None:
        return Const(np.asarray(value).astype(np.float32))
    return cast_to(Input(index), np.float32)


def dequantized_input(ctx: NodeContext, x: int, scale: int, zero: int):
    """(float(x) - zero_point) * scale of a run-time integer input."""
    centered = cast_to(Input(x), np.float32)
    zero_point = _scalar_or_input(ctx, zero)
    if not (isinstance(zero_point, Lit) and zero_point.value == 0.0):
        centered = BinOp("-", centered, zero_point)
    return BinOp("*", centered, _scalar_or_input(ctx, scale, 1.0))


def dequantized_weight(ctx: NodeContext, weight: int, scale: int, zero: int) -> np.ndarray:
    """A constant integer weight (K, N) as float32: (q - zero_point) * scale, a 1-D scale or zero
    point running along the columns."""
    values = np.asarray(ctx.require_const(weight, "the quantized weight")).astype(np.float32)
    scales = np.asarray(ctx.require_const(scale, "the weight scale")).astype(np.float32)
    zero_point = (
        np.asarray(ctx.require_const(zero, "the weight zero point")).astype(np.float32)
        if ctx.has_input(zero)
        else np.zeros((), np.float32)
    )
    return (values - zero_point) * scales


def _dense(ctx: NodeContext, x, weight: np.ndarray, source: int, bias: int | None) -> Cell:
    """nn.Dense over a dequantized (K, N) weight, with the float bias input when given."""
    note = "dequantized: (q - zero_point) * scale; transpose(1, 0)"
    weights = {"weight": ctx.weight(source, weight.T, note)}
    kwargs = {"in_channels": int(weight.shape[0]), "out_channels": int(weight.shape[1])}
    if bias is not None and ctx.has_input(bias):
        weights["bias"] = ctx.weight(bias, np.asarray(ctx.require_const(bias, "the bias")))
    else:
        kwargs["has_bias"] = False
    return Cell("nn.Dense", kwargs=kwargs, args=[x], weights=weights, role="fc")


def dynamically_quantized(x):
    """``x`` through onnxruntime's dynamic uint8 quantization (the range of x and 0 over 255
    steps, the zero point rounded), with a straight-through gradient."""
    low = Temp(ops.clamp(ops.amin(x), max=Lit(0.0)), "low")
    high = ops.clamp(ops.amax(x), min=Lit(0.0))
    scale = Temp((high - low) / Lit(255.0), "scale")
    zero = Temp(
        ops.round(ops.clamp((Lit(0.0) - low) / scale, Lit(0.0), Lit(255.0))),  # fmt: skip
        "zero_point",
    )
    steps = ops.round(x / scale)
    levels = ops.clamp(steps + zero, Lit(0.0), Lit(255.0))
    fake = (levels - zero) * scale
    return x + ops.stop_gradient(fake - x)


@mapper("DynamicQuantizeMatMul", domain=MS_DOMAIN)
def dynamic_quantize_matmul(ctx: NodeContext):
    """DynamicQuantizeMatMul -> nn.Dense over the dequantized weight (QuantizedDense with
    --keep_quantized), applied to A quantized to uint8 and back as onnxruntime does at run
    time."""
    x = Temp(Input(0), "x")
    if ctx.keep_quantized:
        quantized = _columns_quantized(ctx, 1, 2, 3)
        return quantized_dense(ctx, dynamically_quantized(x), quantized, 4)
    weight = dequantized_weight(ctx, 1, 2, 3)
    return _dense(ctx, dynamically_quantized(x), weight, 1, 4)


@mapper("MatMulIntegerToFloat", domain=MS_DOMAIN)
def matmul_integer_to_float(ctx: NodeContext):
    """MatMulIntegerToFloat -> nn.Dense over the dequantized weight (QuantizedDense with
    --keep_quantized) on the dequantized input."""
    if ctx.const(1) is None:
        raise Unsupported("MatMulIntegerToFloat with a weight computed at run time")
    if ctx.keep_quantized:
        quantized = _columns_quantized(ctx, 1, 3, 5)
        return quantized_dense(ctx, dequantized_input(ctx, 0, 2, 4), quantized, 6)
    weight = dequantized_weight(ctx, 1, 3, 5)
    return _dense(ctx, dequantized_input(ctx, 0, 2, 4), weight, 1, 6)


@mapper("QAttention", domain=MS_DOMAIN)
def q_attention(ctx: NodeContext):
    """QAttention -> the Attention of the dequantized input with the dequantized packed weight
    (self.query/key/value nn.Dense cells)."""
    weight = dequantized_weight(ctx, 1, 4, 7)
    packed = PackedProjection(
        dequantized_input(ctx, 0, 3, 6), weight, 1, "dequantized: (q - zero_point) * scale; "
    )
    return finish_attention(ctx, packed_self_attention(ctx, packed, 5, 8))


def _quantized_type(ctx: NodeContext, zero: int) -> str:
    dtype = np.dtype(ctx.input_dtype(zero) or np.uint8).name if ctx.has_input(zero) else "uint8"
    if dtype not in _RANGES:
        raise Unsupported(f"a {dtype} quantized output")
    return dtype


def saturated(ctx: NodeContext, steps, zero: int, zero_first: bool = False):
    """saturate(round(steps) + zero_point) in the zero point's integer type; ``zero_first``
    rounds steps + zero_point instead (onnxruntime's QLinearAdd/QLinearMul kernels)."""
    dtype = _quantized_type(ctx, zero)
    low, high = _RANGES[dtype]
    zero_point = _scalar_or_input(ctx, zero)
    if isinstance(zero_point, Lit) and zero_point.value == 0.0:
        rounded = ops.round(steps)
    elif zero_first:
        rounded = ops.round(BinOp("+", steps, zero_point))
    else:
        rounded = ops.round(steps) + zero_point
    return cast_to(ops.clamp(rounded, Lit(float(low)), Lit(float(high))), dtype)


def quantized_output(ctx: NodeContext, value, scale: int, zero: int):
    """saturate(round(value / scale) + zero_point) in the zero point's integer type."""
    return saturated(ctx, BinOp("/", value, _scalar_or_input(ctx, scale, 1.0)), zero)


def _centered(ctx: NodeContext, x: int, zero: int):
    centered = cast_to(Input(x), np.float32)
    zero_point = _scalar_or_input(ctx, zero)
    if isinstance(zero_point, Lit) and zero_point.value == 0.0:
        return centered
    return BinOp("-", centered, zero_point)


def _ratio(ctx: NodeContext, numerators: tuple[int, ...], denominator: int) -> float | None:
    """The float32 product of constant scales over another, or None when one is not constant."""
    values = [ctx.const(i) for i in (*numerators, denominator)]
    if any(v is None or np.asarray(v).size != 1 for v in values):
        return None
    product = np.float32(1.0)
    for value in values[:-1]:
        product = np.float32(product * np.float32(np.asarray(value).reshape(())))
    return float(np.float32(product / np.float32(np.asarray(values[-1]).reshape(()))))


@mapper(["QLinearAdd", "QLinearMul"], domain=MS_DOMAIN)
def qlinear_binary(ctx: NodeContext):
    """QLinearAdd / QLinearMul -> the sum/product of the dequantized inputs, quantized; with
    constant scales written in output steps (each input times its scale over y_scale) as
    onnxruntime computes it."""
    add = ctx.node.op_type == "QLinearAdd"
    a, b = _centered(ctx, 0, 2), _centered(ctx, 3, 5)
    if add and (ratios := (_ratio(ctx, (1,), 6), _ratio(ctx, (4,), 6)))[0] is not None:
        if ratios[1] is not None:
            steps = a * Lit(ratios[0]) + b * Lit(ratios[1])
            return saturated(ctx, steps, 7, zero_first=True)
    if not add and (ratio := _ratio(ctx, (1, 4), 6)) is not None:
        return saturated(ctx, BinOp("*", a, b) * Lit(ratio), 7, zero_first=True)
    op = "+" if add else "*"
    value = BinOp(op, dequantized_input(ctx, 0, 1, 2), dequantized_input(ctx, 3, 4, 5))
    return quantized_output(ctx, value, 6, 7)


@mapper(["QLinearSigmoid", "QLinearLeakyRelu"], domain=MS_DOMAIN)
def qlinear_activation(ctx: NodeContext):
    """QLinearSigmoid / QLinearLeakyRelu -> the activation of the dequantized input, quantized."""
    x = dequantized_input(ctx, 0, 1, 2)
    if ctx.node.op_type == "QLinearSigmoid":
        value = ops.sigmoid(x)
    else:
        value = ops.leaky_relu(x, Lit(float(ctx.attr("alpha", 0.01))))
    return quantized_output(ctx, value, 3, 4)


@mapper("QLinearGlobalAveragePool", domain=MS_DOMAIN)
def qlinear_global_average_pool(ctx: NodeContext):
    """QLinearGlobalAveragePool -> the mean over the spatial axes (kept), quantized."""
    rank = ctx.input_rank(0)
    axes = tuple(range(1, rank - 1)) if int(ctx.attr("channels_last", 0)) else tuple(range(2, rank))
    x = dequantized_input(ctx, 0, 1, 2)
    value = ops.mean(x, axis=Lit(axes), keep_dims=Lit(True))
    return quantized_output(ctx, value, 3, 4)


@mapper("QLinearConcat", domain=MS_DOMAIN)
def qlinear_concat(ctx: NodeContext):
    """QLinearConcat -> the dequantized inputs concatenated, quantized to Y's scale."""
    if (ctx.num_inputs - 2) % 3:
        raise Unsupported("QLinearConcat inputs that are not (X, scale, zero point) triples")
    parts = [dequantized_input(ctx, i, i + 1, i + 2) for i in range(2, ctx.num_inputs, 3)]
    value = ops.concat(parts, axis=Lit(int(ctx.attr("axis"))))
    return quantized_output(ctx, value, 0, 1)


@mapper("QLinearSoftmax", domain=MS_DOMAIN)
def qlinear_softmax(ctx: NodeContext):
    """QLinearSoftmax (opset 13+ semantics: one axis) -> softmax of the dequantized input,
    quantized."""
    if int(ctx.attr("opset", 13)) < 13:
        raise Unsupported("QLinearSoftmax with the opset-12 (flattening) semantics")
    x = dequantized_input(ctx, 0, 1, 2)
    value = ops.softmax(x, Lit(int(ctx.attr("axis", -1))))
    return quantized_output(ctx, value, 3, 4)


@mapper("QGemm", domain=MS_DOMAIN)
def q_gemm(ctx: NodeContext):
    """QGemm -> nn.Dense over the dequantized B on the dequantized A (+ C, an int32 bias in
    a_scale * b_scale units), float or quantized to y_scale."""
    if int(ctx.attr("transA", 0)) or ctx.const(3) is None:
        raise Unsupported("QGemm with transA or a B computed at run time")
    weight = dequantized_weight(ctx, 3, 4, 5)
    if int(ctx.attr("transB", 0)):
        weight = weight.T
    alpha = float(ctx.attr("alpha", 1.0))
    cell = _dense(ctx, dequantized_input(ctx, 0, 1, 2), weight * alpha, 3, None)
    value = cell
    if ctx.has_input(6):
        a_scale = np.asarray(ctx.require_const(1, "a_scale")).astype(np.float32)
        b_scale = np.asarray(ctx.require_const(4, "b_scale")).astype(np.float32).reshape(-1)
        bias = np.asarray(ctx.require_const(6, "C")).astype(np.float32) * a_scale * b_scale
        cell.kwargs.pop("has_bias", None)
        cell.weights["bias"] = Weight(bias, ctx.node.inputs[6], "C * a_scale * b_scale")
    if ctx.has_input(7):
        return quantized_output(ctx, value, 7, 8)
    return value


def _dequantized_table(ctx: NodeContext, index: int) -> np.ndarray:
    """A QEmbedLayerNormalization table or gamma/beta (inputs 2-6) as float32; its scale is
    input ``index + 6``, its zero point ``index + 11``."""
    values = np.asarray(ctx.require_const(index, "the quantized table")).astype(np.float32)
    scale = np.asarray(ctx.require_const(index + 6, "the table's scale")).astype(np.float32)
    zero = np.zeros((), np.float32)
    if ctx.has_input(index + 11):
        zero = np.asarray(ctx.require_const(index + 11, "the zero point")).astype(np.float32)
    return (values - zero) * scale


@mapper("QEmbedLayerNormalization", domain=MS_DOMAIN)
def q_embed_layer_norm(ctx: NodeContext):
    """QEmbedLayerNormalization -> the EmbedLayerNormalization of the dequantized tables
    (nn.Embedding cells and an nn.LayerNorm with float weights)."""
    spec = EmbeddingInputs(
        _dequantized_table, "dequantized: (q - zero_point) * scale", position_ids=None
    )
    return embedding_layer_norm(ctx, spec)


class _DequantizedLstmContext(NodeContext):
    """A DynamicQuantizeLSTM seen as an ONNX LSTM: W and R (inputs 1 and 2, stored as
    [directions, in, 4*hidden] int8) read as float [directions, 4*hidden, in]."""

    def __init__(self, ctx: NodeContext):
        super().__init__(ctx.graph, ctx.node, 14, ctx.convert_body)
        self.float_weights = {index: self._dequantized(index) for index in (1, 2)}

    def _dequantized(self, index: int) -> np.ndarray:
        scale, zero = (8, 9) if index == 1 else (10, 11)
        values = np.asarray(super().require_const(index, "the quantized weight"))
        directions = values.shape[0]
        scales = np.asarray(super().require_const(scale, "the scale")).astype(np.float32)
        scales = scales.reshape(directions, 1, -1)
        zeros = np.zeros((), np.float32)
        if self.has_input(zero):
            zeros = np.asarray(super().require_const(zero, "the zero point")).astype(np.float32)
            zeros = zeros.reshape(directions, 1, -1)
        return np.ascontiguousarray(
            ((values.astype(np.float32) - zeros) * scales).transpose(0, 2, 1)
        )

    def const(self, index: int):
        if index in getattr(self, "float_weights", {}):
            return self.float_weights[index]
        return super().const(index)

    def weight(self, index: int, array=None, transform=""):
        if index in self.float_weights:
            # dequantizing computes new values: the record is prose (not replayable steps)
            if not isinstance(transform, str):
                transform = "; ".join(step.describe() for step in transform)
            note = "dequantized: (q - zero_point) * scale; transpose(0, 2, 1)"
            transform = "; ".join(filter(None, [note, transform]))
        return super().weight(index, array, transform)


@mapper("DynamicQuantizeLSTM", domain=MS_DOMAIN)
def dynamic_quantize_lstm(ctx: NodeContext):
    """DynamicQuantizeLSTM -> the LSTM of its dequantized weights (nn.LSTM with float weights);
    onnxruntime also quantizes the activations at each step, so outputs differ from its by that
    quantization noise."""
    return lstm(_DequantizedLstmContext(ctx))


@mapper(["QuantizeLinear", "DequantizeLinear"], domain=MS_DOMAIN)
def ms_quantize_linear(ctx: NodeContext):
    """com.microsoft QuantizeLinear / DequantizeLinear (the quantizers' QDQ form for 16-bit and
    4-bit types) -> the ONNX operator's conversion (per tensor or per axis, no blocks)."""
    onnx_form = NodeContext(ctx.graph, ctx.node, 21, ctx.convert_body)
    if ctx.node.op_type == "QuantizeLinear":
        return quantize_linear(onnx_form)
    return dequantize_linear(onnx_form)


def with_input(expr, index: int, replacement):
    """``expr`` with every ``Input(index)`` replaced (shared sub-expressions stay shared)."""
    memo: dict[int, object] = {}

    def walk(value):
        if isinstance(value, Input):
            return replacement if value.index == index else value
        if isinstance(value, (list, tuple)):
            return type(value)(walk(v) for v in value)
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if not dataclasses.is_dataclass(value) or isinstance(value, type):
            return value
        if id(value) not in memo:
            changes = {f.name: walk(getattr(value, f.name)) for f in dataclasses.fields(value)}
            memo[id(value)] = dataclasses.replace(value, **changes)
        return memo[id(value)]

    return walk(expr)


@mapper("QLinearAveragePool", domain=MS_DOMAIN)
def qlinear_average_pool(ctx: NodeContext):
    """QLinearAveragePool -> the AveragePool of the dequantized input, quantized."""
    if int(ctx.attr("channels_last", 0)):
        raise Unsupported("QLinearAveragePool with channels_last")
    ratio = _ratio(ctx, (1,), 3)
    if ratio is None:
        pooled = with_input(average_pool(ctx), 0, dequantized_input(ctx, 0, 1, 2))
        return quantized_output(ctx, pooled, 3, 4)
    # onnxruntime averages the integer offsets and scales them by x_scale / y_scale
    pooled = with_input(average_pool(ctx), 0, _centered(ctx, 0, 2))
    return saturated(ctx, pooled * Lit(ratio), 4, zero_first=False)


# The 4-bit codes of bitsandbytes' FP4 and NF4 data types (QLoRA), as onnxruntime decodes them.
_BNB4_CODES = {
    0: np.array(
        [0.0, 1 / 192, 2 / 3, 1.0, 1 / 3, 0.5, 1 / 6, 0.25]
        + [-0.0, -1 / 192, -2 / 3, -1.0, -1 / 3, -0.5, -1 / 6, -0.25],
        np.float32,
    ),
    1: np.array(
        [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
         -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
         0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
         0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0],
        np.float32,
    ),
}  # fmt: skip


@mapper("MatMulBnb4", domain=MS_DOMAIN)
def matmul_bnb4(ctx: NodeContext):
    """MatMulBnb4 -> nn.Dense holding the dequantized FP4/NF4 [N, K] weight (code * absmax of
    its block)."""
    k, n, block = int(ctx.attr("K")), int(ctx.attr("N")), int(ctx.attr("block_size"))
    quant_type = int(ctx.attr("quant_type"))
    if not int(ctx.attr("transB", 1)):  # the training form; onnxruntime's CPU kernel differs
        raise Unsupported("MatMulBnb4 with transB=0")
    if quant_type not in _BNB4_CODES or block <= 0:
        raise Unsupported(f"MatMulBnb4 quant_type {quant_type}, block_size {block}")
    packed = np.asarray(ctx.require_const(1, "the quantized weight")).reshape(-1)
    absmax = np.asarray(ctx.require_const(2, "absmax")).astype(np.float32).reshape(-1)
    if packed.size != (n * k + 1) // 2 or absmax.size != -(-n * k // block):
        raise Unsupported(f"MatMulBnb4 data of {packed.size} bytes for K={k}, N={n}")
    codes = np.stack([packed >> 4, packed & 15], axis=-1).reshape(-1)[: n * k]
    values = _BNB4_CODES[quant_type][codes] * absmax[np.arange(n * k) // block]
    weight = values.reshape(n, k)
    kind = "NF4" if quant_type else "FP4"
    note = f"dequantized from {kind} blocks of {block}: code * absmax"
    weights = {"weight": ctx.weight(1, weight, note)}
    kwargs = {"in_channels": int(weight.shape[1]), "out_channels": int(weight.shape[0])}
    kwargs["has_bias"] = False
    return Cell("nn.Dense", kwargs=kwargs, args=[Input(0)], weights=weights, role="fc")
