"""The script's ``quantized_dense`` helper, inlined by source where a converted network uses it."""

import mindspore as ms
from mindspore import Parameter, nn, ops


class QuantizedDense(nn.Cell):
    """A dense layer whose weight the checkpoint keeps quantized (--keep_quantized):
    ``weight`` holds the integers as [out_channels, blocks, block], one value a byte, and
    ``scale`` and ``zero_point`` one value a block; the float weight
    (weight - zero_point) * scale is rebuilt each call. The integers and their scales do not
    train; the bias does."""

    def __init__(self, in_channels, out_channels, blocks, block, dtype=ms.int8, has_bias=True):
        super().__init__()
        self.in_channels = in_channels
        shape = (out_channels, blocks, 1)
        self.weight = Parameter(
            ops.zeros((out_channels, blocks, block), dtype), requires_grad=False
        )
        self.scale = Parameter(ops.ones(shape, ms.float32), requires_grad=False)
        self.zero_point = Parameter(ops.zeros(shape, ms.float32), requires_grad=False)
        self.bias = Parameter(ops.zeros((out_channels,), ms.float32)) if has_bias else None

    def construct(self, x):
        weight = (ops.cast(self.weight, ms.float32) - self.zero_point) * self.scale
        weight = weight.reshape(weight.shape[0], -1)[:, : self.in_channels]
        y = ops.matmul(x, weight.T)
        if self.bias is not None:
            y = y + self.bias
        return y
