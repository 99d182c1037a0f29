"""The script's ``power_of_two`` helper, inlined by source where a converted network uses it."""

import mindspore as ms
from mindspore import nn, ops


class PowerOfTwo(nn.Cell):
    """ONNX's cast to float8_e8m0fnu: the float32 exponent field kept, the sign dropped and the
    mantissa rounded ``round_mode`` ("up", "down" or "nearest", half up); inf and NaN give NaN,
    an overflow past 2**127 saturates or gives NaN. Returned as float32 powers of two."""

    def __init__(self, round_mode="up", saturate=True):
        super().__init__()
        self.round_mode = round_mode
        self.saturate = saturate

    def construct(self, x):
        bits = ops.cast(x, ms.float32).view(ms.int32)
        field = ops.bitwise_and(ops.bitwise_right_shift(bits, 23), 255)
        mantissa = ops.bitwise_and(bits, 8388607)
        if self.round_mode == "up":
            field = field + ops.cast(mantissa != 0, ms.int32)
        elif self.round_mode == "nearest":
            # half up, except a tie at the subnormal 2**-127 (held exactly) stays
            half = ops.bitwise_and(mantissa, 4194304) != 0
            rest = ops.logical_or(ops.bitwise_and(mantissa, 4194303) != 0, field > 0)
            field = field + ops.cast(ops.logical_and(half, rest), ms.int32)
        special = field >= 255
        if self.saturate:
            special = ops.logical_or(ops.isnan(x), ops.isinf(x))
            field = ops.minimum(field, 254)
        value = ops.pow(2.0, ops.cast(field - 127, ms.float32))
        return ops.where(special, float("nan"), value)
