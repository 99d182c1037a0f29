"""RoiAlign written with ops, for what MindSpore's ROIAlign cell cannot do: mode 'max' and the
'half_pixel' coordinates (no one-pixel clamp of the ROI size). Follows the ONNX definition: a
fixed grid of sampling_ratio x sampling_ratio points per output bin, each bilinearly
interpolated (a point more than one pixel outside the map counts as 0; the edges clamp), then
averaged or, in 'max' mode, the largest of the weighted corner values taken (as onnxruntime and
the ONNX reference do)."""

from __future__ import annotations

from .base import Cell, Input, NodeContext

_DEFINITION = '''class RoiAlignByOps(nn.Cell):
    """ONNX RoiAlign with a fixed sampling_ratio: x [N, C, H, W], rois [R, 4] (x1, y1, x2, y2),
    batch_indices [R]; returns [R, C, output_height, output_width]. half_pixel shifts the ROI
    by half a pixel and keeps its size as is (else it is at least one pixel); max_mode takes
    the largest weighted corner value over the samples of a bin instead of their mean."""

    def __init__(
        self,
        output_height,
        output_width,
        sampling_ratio,
        spatial_scale,
        half_pixel=True,
        max_mode=False,
    ):
        super().__init__()
        self.output_height = output_height
        self.output_width = output_width
        self.sampling_ratio = sampling_ratio
        self.spatial_scale = spatial_scale
        self.offset = 0.5 if half_pixel else 0.0
        self.half_pixel = half_pixel
        self.max_mode = max_mode

    def samples(self, start, end, bins, limit):
        """Per ROI and sample point along one axis: the two pixels, their weights, validity."""
        size = end - start
        if not self.half_pixel:
            size = ops.maximum(size, 1.0)
        grid = self.sampling_ratio
        step = ops.arange(bins * grid).astype(start.dtype)
        where = ops.floor(step / grid) + (step - ops.floor(step / grid) * grid + 0.5) / grid
        p = ops.expand_dims(start, 1) + ops.expand_dims(size / bins, 1) * where
        valid = (p >= -1.0) & (p <= limit)
        p = ops.maximum(p, 0.0)
        low = ops.floor(p)
        at_end = low >= limit - 1
        low = ops.where(at_end, ops.full_like(low, limit - 1), low)
        high = ops.where(at_end, low, low + 1)
        p = ops.where(at_end, low, p)
        weight = (p - low) * valid.astype(p.dtype)
        rest = (1.0 - (p - low)) * valid.astype(p.dtype)
        return low.astype(ms.int64), high.astype(ms.int64), rest, weight

    def construct(self, x, rois, batch_indices):
        _, c, height, width = x.shape
        rois = rois.astype(ms.float32) * self.spatial_scale - self.offset
        y0, y1, ylo, yhi = self.samples(rois[:, 1], rois[:, 3], self.output_height, height)
        x0, x1, xlo, xhi = self.samples(rois[:, 0], rois[:, 2], self.output_width, width)
        planes = ops.gather(x, batch_indices.astype(ms.int64), 0).astype(ms.float32)
        planes = planes.reshape(planes.shape[0], c, height * width)
        corners = []
        for ys, yw in ((y0, ylo), (y1, yhi)):
            for xs, xw in ((x0, xlo), (x1, xhi)):
                index = (ops.expand_dims(ys, 2) * width + ops.expand_dims(xs, 1)).reshape(
                    ys.shape[0], 1, -1
                )
                index = ops.broadcast_to(index, (ys.shape[0], c, index.shape[2]))
                values = ops.gather_elements(planes, 2, index)
                weight = (ops.expand_dims(yw, 2) * ops.expand_dims(xw, 1)).reshape(
                    ys.shape[0], 1, -1
                )
                corners.append(values * weight)
        if self.max_mode:
            upper = ops.maximum(corners[0], corners[1])
            sampled = ops.maximum(upper, ops.maximum(corners[2], corners[3]))
        else:
            sampled = corners[0] + corners[1] + corners[2] + corners[3]
        grid = self.sampling_ratio
        shape = (sampled.shape[0], c, self.output_height, grid, self.output_width, grid)
        sampled = sampled.reshape(shape)
        if self.max_mode:
            pooled = ops.amax(sampled, axis=(3, 5))
        else:
            pooled = ops.mean(sampled, axis=(3, 5))
        return pooled.astype(x.dtype)'''


def roi_align_by_ops(ctx: NodeContext, sampling: int, half_pixel: bool, max_mode: bool):
    """RoiAlign -> the script's RoiAlignByOps cell (no weights)."""
    kwargs = {
        "output_height": int(ctx.attr("output_height", 1)),
        "output_width": int(ctx.attr("output_width", 1)),
        "sampling_ratio": sampling,
        "spatial_scale": float(ctx.attr("spatial_scale", 1.0)),
    }
    if not half_pixel:
        kwargs["half_pixel"] = False
    if max_mode:
        kwargs["max_mode"] = True
    return Cell(
        "RoiAlignByOps",
        kwargs=kwargs,
        args=[Input(0), Input(1), Input(2)],
        role="roi_align",
        definition=_DEFINITION,
        uses=frozenset({"ms", "ops"}),
    )
