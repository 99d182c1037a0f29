"""The script's ``deform_conv`` helper, inlined by source where a converted network uses it."""

import mindspore as ms
from mindspore import nn, ops


class DeformConv(nn.Cell):
    """ONNX's DeformConv (2-D): each kernel tap reads the input at its place in the window
    moved by ``offset`` (bilinear, zero outside the input), scaled by ``mask`` when given; the
    samples are then contracted with the weights per group, and ``bias`` added."""

    def __init__(self, strides=(1, 1), pads=(0, 0), dilations=(1, 1), group=1, offset_group=1):
        super().__init__()
        self.strides = strides
        self.pads = pads
        self.dilations = dilations
        self.group = group
        self.offset_group = offset_group

    def sample(self, x, rows, cols, height, width):
        """Bilinear samples of x [n, groups, channels, height * width] at rows/cols
        [n, groups, points]."""
        top, left = ops.floor(rows), ops.floor(cols)
        result = 0
        for dy, dx in ((0, 0), (0, 1), (1, 0), (1, 1)):
            row, col = top + dy, left + dx
            weight = (1 - ops.abs(rows - row)) * (1 - ops.abs(cols - col))
            inside = (row >= 0) & (row < height) & (col >= 0) & (col < width)
            index = ops.clamp(row, 0, height - 1) * width + ops.clamp(col, 0, width - 1)
            index = ops.expand_dims(ops.cast(index, ms.int64), 2)
            index = ops.broadcast_to(index, x.shape[:3] + index.shape[-1:])
            taken = ops.gather_elements(x, 3, index)
            result = result + taken * ops.expand_dims(ops.where(inside, weight, 0.0), 2)
        return result

    def construct(self, x, weight, offset, bias=None, mask=None):
        batch, channels, height, width = x.shape
        out_channels, _, kernel_h, kernel_w = weight.shape
        out_h, out_w = offset.shape[2], offset.shape[3]
        groups = self.offset_group
        moved = ops.reshape(offset, (batch, groups, kernel_h, kernel_w, 2, out_h, out_w))
        rows = ops.cast(ops.arange(out_h) * self.strides[0] - self.pads[0], x.dtype)
        cols = ops.cast(ops.arange(out_w) * self.strides[1] - self.pads[1], x.dtype)
        tap_rows = ops.cast(ops.arange(kernel_h) * self.dilations[0], x.dtype)
        tap_cols = ops.cast(ops.arange(kernel_w) * self.dilations[1], x.dtype)
        rows = (
            tap_rows.reshape(1, 1, -1, 1, 1, 1)
            + rows.reshape(1, 1, 1, 1, -1, 1)
            + moved[:, :, :, :, 0]
        )
        cols = (
            tap_cols.reshape(1, 1, 1, -1, 1, 1)
            + cols.reshape(1, 1, 1, 1, 1, -1)
            + moved[:, :, :, :, 1]
        )
        points = (batch, groups, -1)
        grouped = ops.reshape(x, (batch, groups, channels // groups, -1))
        rows, cols = ops.reshape(rows, points), ops.reshape(cols, points)
        samples = self.sample(grouped, rows, cols, height, width)
        samples = ops.reshape(
            samples, (batch, groups, channels // groups, kernel_h, kernel_w, out_h, out_w)
        )
        if mask is not None:
            samples = samples * ops.reshape(
                mask, (batch, groups, 1, kernel_h, kernel_w, out_h, out_w)
            )
        columns = ops.reshape(samples, (batch, self.group, -1, out_h * out_w))
        kernels = ops.reshape(weight, (1, self.group, out_channels // self.group, -1))
        out = ops.reshape(ops.matmul(kernels, columns), (batch, out_channels, out_h, out_w))
        if bias is not None:
            out = out + ops.reshape(bias, (1, -1, 1, 1))
        return out
