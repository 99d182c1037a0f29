"""The script's ``narrow_float`` helper, inlined by source where a converted network uses it."""

import mindspore as ms
from mindspore import nn, ops


class NarrowFloat(nn.Cell):
    """ONNX's cast to an 8- or 4-bit float type (float8 e4m3fn/e4m3fnuz/e5m2/e5m2fnuz, float4
    e2m1): rounds half to even to ``mantissa_bits``, with subnormals below
    2**``min_exponent``; beyond ``max_value`` saturates or becomes inf/NaN (``overflow``);
    ``unsigned_zero`` types have no -0. MindSpore has no such types: the exact values are
    returned in ``container`` (float16 holds every one of them)."""

    def __init__(
        self,
        mantissa_bits,
        min_exponent,
        max_value,
        saturate=True,
        overflow="nan",
        unsigned_zero=False,
        nan_value=float("nan"),
        container=ms.float16,
    ):
        super().__init__()
        self.mantissa_bits = mantissa_bits
        self.min_exponent = min_exponent
        self.max_value = max_value
        self.saturate = saturate
        self.overflow = overflow  # what an unsaturated overflow gives: "inf" or "nan"
        self.unsigned_zero = unsigned_zero
        self.nan_value = nan_value
        self.container = container

    def construct(self, x):
        x = ops.cast(x, ms.float32)  # float64 too: ONNX's reference rounds through float32
        magnitude = ops.abs(x)
        exponent = ops.floor(ops.log2(magnitude))  # log2 may be off by one ulp: corrected next
        power = ops.pow(2.0, exponent)
        exponent = exponent - ops.cast(power > magnitude, ms.float32)
        exponent = exponent + ops.cast(power * 2 <= magnitude, ms.float32)
        step = ops.pow(2.0, ops.maximum(exponent, self.min_exponent) - self.mantissa_bits)
        rounded = ops.round(magnitude / step) * step  # half to even
        too_large = ops.logical_or(rounded > self.max_value, ops.isinf(magnitude))
        if self.saturate:
            rounded = ops.where(too_large, self.max_value, rounded)
        else:
            rounded = ops.where(too_large, float(self.overflow), rounded)
        negative = ops.logical_or(x < 0, 1 / x < 0)  # -0.0 too
        if self.unsigned_zero:
            negative = ops.logical_and(x < 0, rounded > 0)
        value = ops.where(negative, -rounded, rounded)
        value = ops.where(ops.isnan(x), self.nan_value, value)
        return ops.cast(value, self.container)
