"""The script's ``grid_sample_nearest`` helper, inlined by source where a converted network uses it."""

import mindspore as ms
from mindspore import nn, ops


class GridSampleNearest(nn.Cell):
    """ONNX's GridSample in nearest mode over 2 or 3 spatial axes: each grid point (x, y[, z]
    in [-1, 1]) is mapped to pixel coordinates, rounded half to even, brought inside by the
    ``padding_mode`` ("zeros": outside reads 0; "border": clamped; "reflection": mirrored at
    the borders) and read. MindSpore's grid_sample rounds halfway points the other way."""

    def __init__(self, align_corners=False, padding_mode="zeros"):
        super().__init__()
        self.align_corners = align_corners
        self.padding_mode = padding_mode

    def reflect(self, x, low, high):
        span = high - low
        below = ops.floor((low - x) / span)
        above = ops.floor((x - high) / span)
        from_low = low - x - below * span
        from_high = x - high - above * span
        x = ops.where(x < low, ops.where(below % 2 == 0, low + from_low, high - from_low), x)
        return ops.where(x > high, ops.where(above % 2 == 0, high - from_high, low + from_high), x)

    def construct(self, x, grid):
        sizes = x.shape[2:]
        flat_index = ops.zeros(grid.shape[:-1], ms.int64)
        inside = ops.ones(grid.shape[:-1], ms.bool_)
        for axis in range(len(sizes)):
            size = sizes[axis]
            coordinate = ops.cast(grid[..., len(sizes) - 1 - axis], ms.float32)
            if self.align_corners:
                position, low, high = (coordinate + 1) / 2 * (size - 1), 0.0, size - 1.0
            else:
                position, low, high = ((coordinate + 1) * size - 1) / 2, -0.5, size - 0.5
            position = ops.round(position)
            if self.padding_mode == "border":
                position = ops.clamp(position, 0.0, size - 1.0)
            elif self.padding_mode == "reflection":
                position = self.reflect(position, low, high)
            index = ops.cast(ops.trunc(position), ms.int64)
            if self.padding_mode == "zeros":
                inside = ops.logical_and(inside, ops.logical_and(index >= 0, index < size))
            index = ops.clamp(index, 0, size - 1)
            flat_index = flat_index * size + index
        batch, channels = x.shape[0], x.shape[1]
        points = ops.reshape(flat_index, (batch, 1, -1))
        points = ops.broadcast_to(points, (batch, channels, points.shape[-1]))
        values = ops.gather_elements(ops.reshape(x, (batch, channels, -1)), 2, points)
        values = ops.reshape(values, (batch, channels) + grid.shape[1:-1])
        keep = ops.expand_dims(inside, 1)
        return ops.where(keep, values, ops.zeros_like(values))
