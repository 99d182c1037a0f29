"""Resize and Upsample whose scales or sizes are computed (or fed) at run time: the output sizes
are only known then, so the script's ResizeByScales cell computes, per resized axis, the output
length (floor of length x scale in float32, as onnxruntime; or the size given), every output position's source
coordinate (the ONNX coordinate transformation) and gathers the neighbouring values with their
nearest / linear / cubic weights (antialiased: taps widened by 1 / scale when shrinking), all
with ops. tf_crop_and_resize needs the constant-scale path."""

from __future__ import annotations

from .base import Cell, Input, NodeContext, Unsupported

COORDINATE_MODES = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
)

NEAREST_MODES = ("simple", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil")

_DEFINITION = '''class ResizeByScales(nn.Cell):
    """ONNX Resize by scales known only at run time: axes lists the resized axes (scales holds
    one factor per axis listed); mode 'nearest', 'linear' or 'cubic'; coordinates is ONNX's
    coordinate_transformation_mode; nearest_mode 'simple' is Upsample's (and Resize-10's)
    rounding; by_sizes: the second input holds the output size of every axis instead (the
    scale is size / length). Computed in float32."""

    def __init__(
        self,
        axes,
        mode="nearest",
        coordinates="half_pixel",
        nearest_mode="round_prefer_floor",
        cubic_coeff_a=-0.75,
        exclude_outside=False,
        antialias=False,
        by_sizes=False,
    ):
        super().__init__()
        self.by_sizes = by_sizes
        self.axes = axes
        self.mode = mode
        self.coordinates = coordinates
        self.nearest_mode = nearest_mode
        self.cubic_coeff_a = cubic_coeff_a
        self.exclude_outside = exclude_outside
        self.antialias = antialias  # widen the taps by 1 / scale when shrinking

    def source(self, scale, length, size):
        """The input coordinate of every output position along one axis."""
        out = ops.arange(size).astype(ms.float32)
        if self.coordinates == "asymmetric":
            return out / scale
        if self.coordinates == "align_corners":
            if size == 1:
                return ops.zeros_like(out)
            return out * (length - 1) / (size - 1)
        if self.coordinates == "pytorch_half_pixel" and size == 1:
            return ops.zeros_like(out)
        x = (out + 0.5) / scale - 0.5
        if self.coordinates == "half_pixel_symmetric":
            adjustment = size / (scale * length)
            x = x + length / 2 * (1 - adjustment)
        return x

    def nearest(self, x, scale):
        if self.nearest_mode == "simple":
            return ops.where(scale < 1, ops.ceil(x), ops.floor(x))
        if self.nearest_mode == "round_prefer_ceil":
            return ops.floor(x + 0.5)
        if self.nearest_mode == "floor":
            return ops.floor(x)
        if self.nearest_mode == "ceil":
            return ops.ceil(x)
        return ops.ceil(x - 0.5)  # round_prefer_floor

    def cubic(self, d):
        a = self.cubic_coeff_a
        d = ops.abs(d)
        near = ((a + 2) * d - (a + 3)) * d * d + 1
        far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
        return ops.where(d <= 1, near, ops.where(d < 2, far, ops.zeros_like(d)))

    def normalized(self, weights):
        total = weights[0]
        for weight in weights[1:]:
            total = total + weight
        total = ops.where(total == 0, ops.ones_like(total), total)
        return [weight / total for weight in weights]

    def resize_axis(self, x, axis, scale, size=None):
        length = x.shape[axis]
        size = int(ops.floor(scale * length)) if size is None else int(size)
        coordinates = self.source(scale, length, size)
        if self.mode == "nearest":
            index = ops.clamp(self.nearest(coordinates, scale), 0, length - 1)
            return ops.gather(x, index.astype(ms.int64), axis)
        base = ops.ceil(coordinates) - 1  # the pixel left of x (x itself counts as right)
        ratio = coordinates - base
        shrink = min(float(scale), 1.0) if self.antialias else 1.0
        reach = 1.0 if self.mode == "linear" else 2.0
        first = math.floor(-reach / shrink) + 1
        taps, weights = [], []
        for offset in range(first, 2 - first):
            if self.mode == "linear":
                weight = ops.clamp(1 - ops.abs((offset - ratio) * shrink), 0.0, 1.0)
            else:
                weight = self.cubic((offset - ratio) * shrink)
            taps.append(base + offset)
            weights.append(weight)
        if self.antialias:
            weights = self.normalized(weights)
        if self.exclude_outside:
            inside = [((tap >= 0) & (tap <= length - 1)).astype(ms.float32) for tap in taps]
            weights = self.normalized([w * keep for w, keep in zip(weights, inside)])
        taps = [ops.clamp(tap, 0, length - 1).astype(ms.int64) for tap in taps]
        shape = [1] * x.ndim
        shape[axis] = size
        result = None
        for tap, weight in zip(taps, weights):
            term = ops.gather(x, tap, axis) * weight.reshape(shape)
            result = term if result is None else result + term
        return result

    def construct(self, x, scales):
        y = x.astype(ms.float32) if self.mode != "nearest" else x
        if self.by_sizes:
            for axis in self.axes:
                size = int(scales[axis])
                scale = size / y.shape[axis]
                y = self.resize_axis(y, axis, scale, size)
            return y.astype(x.dtype)
        scales = scales.astype(ms.float32)
        for i, axis in enumerate(self.axes):
            if float(scales[i]) != 1.0:
                y = self.resize_axis(y, axis, scales[i])
        return y.astype(x.dtype)'''


def resize_by_run_time_scales(
    ctx: NodeContext, attrs: dict, axes: list[int], scales_index: int, by_sizes: bool = False
) -> Cell:
    """Resize / Upsample with run-time scales (or, ``by_sizes``, run-time sizes of every axis)
    -> the script's ResizeByScales cell."""
    mode, coordinates = attrs["mode"], attrs["coordinate_transformation_mode"]
    if mode not in ("nearest", "linear", "cubic"):
        raise Unsupported(f"Resize mode '{mode}' with scales given at run time")
    if attrs["nearest_mode"] not in NEAREST_MODES:
        raise Unsupported(f"nearest_mode '{attrs['nearest_mode']}'")
    if coordinates not in COORDINATE_MODES:
        raise Unsupported(f"Resize '{coordinates}' with scales given at run time")
    kwargs: dict = {"axes": tuple(axes)}
    if mode != "nearest":
        kwargs["mode"] = mode
    if coordinates != "half_pixel":
        kwargs["coordinates"] = coordinates
    if mode == "nearest" and attrs["nearest_mode"] != "round_prefer_floor":
        kwargs["nearest_mode"] = attrs["nearest_mode"]
    if mode == "cubic" and attrs["cubic_coeff_a"] != -0.75:
        kwargs["cubic_coeff_a"] = float(attrs["cubic_coeff_a"])
    if attrs["exclude_outside"]:
        kwargs["exclude_outside"] = True
    if attrs["antialias"]:
        kwargs["antialias"] = True
    if by_sizes:
        kwargs["by_sizes"] = True
    return Cell(
        "ResizeByScales",
        kwargs=kwargs,
        args=[Input(0), Input(scales_index)],
        role="resize",
        definition=_DEFINITION,
        uses=frozenset({"math", "ms", "ops"}),
    )
