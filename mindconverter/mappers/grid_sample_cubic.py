"""Bicubic GridSample written with ops (MindSpore's grid_sample has no bicubic mode).

Follows the ONNX definition (PyTorch's grid_sampler): each grid point is mapped to pixel
coordinates (``align_corners`` chooses the pixel centres or edges as -1 and 1); a point outside
the image is first clamped ('border') or reflected ('reflection') into it; then the 4 x 4 pixels
around it are weighted with Keys' cubic convolution coefficients (A = -0.75), each pixel read
with the padding rule (0 outside for 'zeros', the nearest edge pixel for 'border', the mirrored
pixel for 'reflection'). Sixteen gathers over the flattened image, no weights.
"""

from __future__ import annotations

from .base import Cell, Input, NodeContext, Unsupported

_DEFINITION = '''class GridSampleCubic(nn.Cell):
    """ONNX GridSample mode 'cubic' on x [N, C, H, W] with grid [N, Ho, Wo, 2] (x, y in -1..1);
    returns [N, C, Ho, Wo]. padding_mode is 'zeros', 'border' or 'reflection'."""

    def __init__(self, align_corners=False, padding_mode="zeros"):
        super().__init__()
        self.align_corners = align_corners
        self.padding_mode = padding_mode

    def reflect(self, v, low, high):
        """v mirrored at low and high until it lies between them."""
        span = max(high - low, 1e-12)
        below = low - v
        above = v - high
        d = ops.where(v < low, below, above)
        turns = ops.floor(d / span)
        rest = d - turns * span
        even = (turns - 2 * ops.floor(turns / 2)) == 0
        from_low = ops.where(even, low + rest, high - rest)
        from_high = ops.where(even, high - rest, low + rest)
        mirrored = ops.where(v < low, from_low, from_high)
        return ops.where((v < low) | (v > high), mirrored, v)

    def coordinate(self, g, size):
        """Pixel coordinate of normalized g along an axis of length size, padded."""
        if self.align_corners:
            v, low, high = (g + 1) / 2 * (size - 1), 0.0, size - 1.0
        else:
            v, low, high = ((g + 1) * size - 1) / 2, -0.5, size - 0.5
        if self.padding_mode == "border":
            v = ops.where((v < low) | (v > high), ops.clamp(v, 0.0, size - 1.0), v)
        elif self.padding_mode == "reflection":
            v = self.reflect(v, low, high)
        return v, low, high

    def taps(self, v, size, low, high):
        """The four pixel indices around v, their coefficients, and whether each is inside."""
        base = ops.floor(v)
        t = v - base
        a = -0.75
        coefficients = [
            ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
            ((a + 2) * t - (a + 3)) * t * t + 1,
            ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
            ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a,
        ]
        result = []
        for k in range(4):
            index = base + (k - 1)
            inside = ((index >= 0) & (index <= size - 1)).astype(v.dtype)
            if self.padding_mode == "border":
                index = ops.clamp(index, 0.0, size - 1.0)
            elif self.padding_mode == "reflection":
                index = ops.trunc(self.reflect(index, low, high))
            else:  # zeros: an index outside reads pixel 0 with coefficient 0
                coefficients[k] = coefficients[k] * inside
                index = ops.clamp(index, 0.0, size - 1.0)
            result.append((index.astype(ms.int64), coefficients[k]))
        return result

    def construct(self, x, grid):
        n, c, height, width = x.shape
        grid = grid.astype(ms.float32)
        u, x_low, x_high = self.coordinate(grid[..., 0], width)
        v, y_low, y_high = self.coordinate(grid[..., 1], height)
        columns = self.taps(u, width, x_low, x_high)
        rows = self.taps(v, height, y_low, y_high)
        planes = x.astype(ms.float32).reshape(n, c, height * width)
        out_shape = grid.shape[1:3]
        total = None
        for row, row_weight in rows:
            for column, column_weight in columns:
                index = (row * width + column).reshape(n, 1, -1)
                index = ops.broadcast_to(index, (n, c, index.shape[2]))
                values = ops.gather_elements(planes, 2, index)
                term = values * (row_weight * column_weight).reshape(n, 1, -1)
                total = term if total is None else total + term
        return total.reshape(n, c, out_shape[0], out_shape[1]).astype(x.dtype)'''


def grid_sample_cubic(ctx: NodeContext, align_corners: bool, padding: str) -> Cell:
    """GridSample mode 'cubic' on a 4-D input -> the script's GridSampleCubic cell."""
    if padding not in ("zeros", "border", "reflection"):
        raise Unsupported(f"GridSample padding_mode '{padding}'")
    kwargs = {}
    if align_corners:
        kwargs["align_corners"] = True
    if padding != "zeros":
        kwargs["padding_mode"] = padding
    return Cell(
        "GridSampleCubic",
        kwargs=kwargs,
        args=[Input(0), Input(1)],
        role="grid_sample",
        definition=_DEFINITION,
        uses=frozenset({"ms", "ops"}),
    )
