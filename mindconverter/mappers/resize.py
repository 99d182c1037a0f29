"""Resize (opsets 10-19) and Upsample (opsets 7-9), exact to the ONNX definition, and spatial
sampling: GridSample, AffineGrid and CenterCropPad.

MindSpore's ``ops.interpolate`` does not cover every ONNX coordinate mode, rounding rule and cubic
variant, so the interpolation is computed here, per resized axis, from the static shapes:
nearest becomes ``ops.gather`` with a constant index table; linear and cubic (with antialias,
exclude_outside, tf_crop_and_resize extrapolation) become a matmul with a constant
interpolation matrix, which is exactly the separable weighted sum ONNX defines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .base import (
    BinOp,
    Cell,
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
from .common import dim_expr, is_static, shape_value
from .grid_sample_cubic import grid_sample_cubic
from .registry import mapper
from .resize_run_time import resize_by_run_time_scales
from .slicing import gather_padded
from .syntax import ms, ops


@dataclass
class _Axis:
    """How one axis is resized: sizes, the coordinate scale and the ROI (tf_crop_and_resize)."""

    size_in: int
    size_out: int
    scale: float
    roi: tuple[float, float] = (0.0, 1.0)


def _source_coordinates(mode: str, axis: _Axis) -> tuple[np.ndarray, np.ndarray | None]:
    """Input coordinate of every output position, and (tf_crop_and_resize) which lie outside.

    Computed in float32 like onnxruntime, so rounding decisions at exact halves agree with it.
    ``length_resized`` is the integer output length, as the ONNX text and onnxruntime have it (the
    ONNX reference implementation uses the fractional ``scale * length`` for align_corners and
    tf_crop_and_resize, and -0.5 for a one-pixel pytorch_half_pixel output).
    """
    f32 = np.float32
    out = np.arange(axis.size_out, dtype=f32)
    length_in, length_out, scale = f32(axis.size_in), f32(axis.size_out), f32(axis.scale)
    half = f32(0.5)
    outside = None
    if mode == "align_corners":
        x = np.zeros_like(out) if axis.size_out == 1 else out * (length_in - 1) / (length_out - 1)
    elif mode == "asymmetric":
        x = out / scale
    elif mode == "pytorch_half_pixel":
        x = np.zeros_like(out) if axis.size_out == 1 else (out + half) / scale - half
    elif mode == "half_pixel":
        x = (out + half) / scale - half
    elif mode == "half_pixel_symmetric":
        adjustment = length_out / (scale * length_in)
        offset = length_in / 2 * (1 - adjustment)
        x = offset + (out + half) / scale - half
    elif mode == "tf_crop_and_resize":
        start, end = f32(axis.roi[0]), f32(axis.roi[1])
        if axis.size_out == 1:
            x = np.full_like(out, (end - start) * (length_in - 1) / 2)
        else:
            x = out * (end - start) * (length_in - 1) / (length_out - 1)
        x = x + start * (length_in - 1)
        outside = (x < 0) | (x > length_in - 1)
    else:
        raise Unsupported(f"coordinate_transformation_mode '{mode}'")
    return np.asarray(x, np.float32).astype(np.float64), outside


def _cubic(distance: np.ndarray, a: float) -> np.ndarray:
    d = np.abs(distance)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _taps(
    mode: str, ratio: np.ndarray, scale: float, antialias: bool, cubic_a: float, nearest_mode: str
) -> tuple[int, np.ndarray]:
    """First tap offset (relative to the base pixel) and the weights of every tap per position."""
    if mode == "nearest":
        upper = {
            "round_prefer_floor": ratio > 0.5,
            "round_prefer_ceil": ratio >= 0.5,
            "floor": np.zeros_like(ratio, dtype=bool),
            "ceil": np.ones_like(ratio, dtype=bool),
        }.get(nearest_mode)
        if upper is None:
            raise Unsupported(f"nearest_mode '{nearest_mode}'")
        upper = upper | (ratio == 1)
        return 0, np.stack([~upper, upper], axis=1).astype(np.float64)
    shrink = min(scale, 1.0) if antialias else 1.0
    if mode == "linear":
        start = int(math.floor(-1 / shrink) + 1)
        offsets = np.arange(start, 2 - start)
        weights = np.clip(1 - np.abs((offsets[None, :] - ratio[:, None]) * shrink), 0, 1)
    elif mode == "cubic":
        start = int(math.floor(-2 / shrink) + 1)
        offsets = np.arange(start, 2 - start)
        weights = _cubic((offsets[None, :] - ratio[:, None]) * shrink, cubic_a)
    else:
        raise Unsupported(f"Resize mode '{mode}'")
    if antialias:
        weights = weights / weights.sum(axis=1, keepdims=True)
    return start, weights


def _interpolation_matrix(axis: _Axis, attrs: dict) -> tuple[np.ndarray, np.ndarray | None]:
    """The (size_out, size_in) matrix of one axis, and the rows to fill with extrapolation_value."""
    x, outside = _source_coordinates(attrs["coordinate_transformation_mode"], axis)
    if (
        attrs["mode"] == "nearest" and attrs["nearest_mode"] == "simple"
    ):  # opset 10 / Upsample: floor, or ceil when shrinking
        index = np.ceil(x) if axis.scale < 1 else np.floor(x)
        index = np.clip(index, 0, axis.size_in - 1).astype(np.int64)
        matrix = np.zeros((axis.size_out, axis.size_in))
        matrix[np.arange(axis.size_out), index] = 1.0
        return matrix, outside
    # the base pixel is the one left of x (x itself counts as right of its left neighbour)
    base = np.ceil(x).astype(np.int64) - 1
    ratio = x - base
    start, weights = _taps(
        attrs["mode"],
        ratio,
        axis.scale,
        attrs["antialias"],
        attrs["cubic_coeff_a"],
        attrs["nearest_mode"],
    )
    taps = base[:, None] + start + np.arange(weights.shape[1])[None, :]
    if attrs["exclude_outside"]:
        weights = np.where((taps < 0) | (taps >= axis.size_in), 0.0, weights)
        total = weights.sum(axis=1, keepdims=True)
        weights = weights / np.where(total == 0, 1.0, total)
    matrix = np.zeros((axis.size_out, axis.size_in))
    rows = np.repeat(np.arange(axis.size_out), weights.shape[1])
    np.add.at(matrix, (rows, np.clip(taps, 0, axis.size_in - 1).reshape(-1)), weights.reshape(-1))
    if outside is not None:
        matrix[outside] = 0.0
    return matrix, outside


def _resize_axis(
    value, axis: int, rank: int, matrix: np.ndarray, outside, dtype: np.dtype, extrapolation: float
):
    """Apply one axis' interpolation matrix (a gather when it only selects)."""
    selects = np.all(np.sort(matrix, axis=1)[:, :-1] == 0, axis=1) & (matrix.max(axis=1) == 1)
    if outside is None and selects.all():
        index = matrix.argmax(axis=1).astype(np.int64)
        size_in = matrix.shape[1]
        factor = len(index) // size_in
        if (
            factor > 1
            and len(index) == factor * size_in
            and np.array_equal(index, np.repeat(np.arange(size_in), factor))
        ):
            return ops.repeat_interleave(value, Lit(factor), Lit(axis))
        if np.array_equal(index, np.arange(size_in)):
            return value
        return ops.gather(value, Const(index), Lit(axis))
    if dtype.kind != "f":
        raise Unsupported(f"interpolating {dtype.name} values (only nearest works on integers)")
    weights = matrix.astype(dtype)
    if axis == rank - 1:
        result = ops.matmul(value, Const(np.ascontiguousarray(weights.T)))
    elif axis == rank - 2:
        result = ops.matmul(Const(weights), value)
    else:
        perm = list(range(rank))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        moved = ops.transpose(value, Lit(tuple(perm)))
        result = ops.transpose(
            ops.matmul(moved, Const(np.ascontiguousarray(weights.T))), Lit(tuple(perm))
        )
    if outside is not None and outside.any() and extrapolation != 0.0:
        bias = (outside * extrapolation).astype(dtype).reshape((-1,) + (1,) * (rank - 1 - axis))
        result = result + Const(bias)
    return result


def _emit(ctx: NodeContext, axes: dict[int, _Axis], attrs: dict):
    rank = ctx.input_rank(0)
    dtype = np.dtype(ctx.input_dtype(0) or np.float32)
    value = Input(0)
    for axis in sorted(axes):
        spec = axes[axis]
        identity = (
            spec.size_in == spec.size_out
            and math.isclose(spec.scale, 1.0)
            and (
                attrs["coordinate_transformation_mode"] != "tf_crop_and_resize"
                or spec.roi == (0.0, 1.0)
            )
        )
        if identity:
            continue
        matrix, outside = _interpolation_matrix(spec, attrs)
        value = _resize_axis(
            value, axis, rank, matrix, outside, dtype, attrs["extrapolation_value"]
        )
    return value


def _text(value, default: str) -> str:
    if value is None:
        return default
    return value.decode() if isinstance(value, bytes) else str(value)


def _computed_sizes(ctx: NodeContext) -> list | None:
    """Resize sizes computed from dynamic dimensions, per axis: the size when it is a number,
    None where it is the input's own size (that axis is not resized); None when the sizes are
    not such a value."""
    value = shape_value(ctx, 3)
    dims = ctx.graph.symbolic_shapes.get(ctx.node.inputs[0])
    if value is None or dims is None or len(value) != len(dims):
        return None
    sizes = []
    for size, dim in zip(value, dims):
        if isinstance(size, (int, np.integer)):
            sizes.append(int(size))
        elif str(size) == str(dim):
            sizes.append(None)
        else:
            return None  # a size computed from the data
    return sizes


def _resized_at_run_time(ctx: NodeContext) -> list[int] | None:
    """The axes a Resize by computed sizes changes, when some size is only known at run time
    (a position-embedding grid interpolated to the image's patch grid); None otherwise."""
    if not ctx.has_input(3) or ctx.const(3) is not None:
        return None
    value = shape_value(ctx, 3)
    dims = ctx.graph.symbolic_shapes.get(ctx.node.inputs[0])
    if value is None or dims is None or len(value) != len(dims) or _computed_sizes(ctx):
        return None
    return [axis for axis, (size, dim) in enumerate(zip(value, dims)) if str(size) != str(dim)]


def _optional_const(ctx: NodeContext, index: int, what: str) -> np.ndarray | None:
    if not ctx.has_input(index):
        return None
    value = np.asarray(ctx.require_const(index, what))
    return value if value.size else None


def _run_time(ctx: NodeContext, index: int) -> bool:
    """Whether input ``index`` is given, not a constant, and not empty."""
    return ctx.has_input(index) and not ctx.is_const(index) and _shape_size(ctx, index) != 0


def _shape_size(ctx: NodeContext, index: int) -> int | None:
    """The number of elements of input ``index`` when its shape is known."""
    shape = ctx.input_shape(index)
    if shape is None or not is_static(list(shape)):
        return None
    return int(np.prod(shape, dtype=np.int64))


@mapper("Resize", since=10)
def resize(ctx: NodeContext):
    """Resize -> per-axis ops.gather (nearest) or matmul with constant interpolation weights;
    scales computed at run time -> the script's ResizeByScales cell."""
    shape = ctx.require_shape(0)
    rank = len(shape)
    mode = _text(ctx.attr("mode"), "nearest")
    if ctx.opset < 11:
        attrs = {
            "mode": mode,
            "coordinate_transformation_mode": "asymmetric",
            "nearest_mode": "simple",
            "cubic_coeff_a": -0.75,
            "exclude_outside": 0,
            "antialias": False,
            "extrapolation_value": 0.0,
        }
        if _run_time(ctx, 1):
            return resize_by_run_time_scales(ctx, attrs, list(range(rank)), 1)
        scales = _optional_const(ctx, 1, "the Resize scales")
        roi = sizes = None
    else:
        attrs = {
            "mode": mode,
            "coordinate_transformation_mode": _text(
                ctx.attr("coordinate_transformation_mode"), "half_pixel"
            ),
            "nearest_mode": _text(ctx.attr("nearest_mode"), "round_prefer_floor"),
            "cubic_coeff_a": float(ctx.attr("cubic_coeff_a", -0.75)),
            "exclude_outside": int(ctx.attr("exclude_outside", 0)),
            "antialias": bool(int(ctx.attr("antialias", 0))) and mode != "nearest",
            "extrapolation_value": float(ctx.attr("extrapolation_value", 0.0)),
        }
        if mode != "nearest":
            attrs["nearest_mode"] = "round_prefer_floor"
        cropping = attrs["coordinate_transformation_mode"] == "tf_crop_and_resize"
        roi = _optional_const(ctx, 1, "the Resize roi") if cropping else None
        if _run_time(ctx, 2) and not (ctx.has_input(3) and _shape_size(ctx, 3)):
            axes = ctx.attr("axes", range(rank)) if ctx.opset >= 18 else range(rank)
            axes = [normalize_axis(int(a), rank) for a in axes]
            return resize_by_run_time_scales(ctx, attrs, axes, 2)
        resized = _resized_at_run_time(ctx)
        stretched = _text(ctx.attr("keep_aspect_ratio_policy"), "stretch") == "stretch"
        if resized is not None and stretched and (ctx.opset < 18 or ctx.attr("axes") is None):
            return resize_by_run_time_scales(ctx, attrs, resized, 3, by_sizes=True)
        scales = _optional_const(ctx, 2, "the Resize scales")
        sizes = _computed_sizes(ctx) if ctx.has_input(3) and ctx.const(3) is None else None
        sizes = sizes if sizes is not None else _optional_const(ctx, 3, "the Resize sizes")
    if mode not in ("nearest", "linear", "cubic"):
        raise Unsupported(f"Resize mode '{mode}'")
    axes = (
        [normalize_axis(int(a), rank) for a in ctx.attr("axes", range(rank))]
        if ctx.opset >= 18
        else list(range(rank))
    )
    policy = (
        _text(ctx.attr("keep_aspect_ratio_policy"), "stretch") if ctx.opset >= 18 else "stretch"
    )
    if attrs["coordinate_transformation_mode"] == "tf_crop_and_resize":
        if roi is None:
            raise Unsupported("tf_crop_and_resize without a roi")
        roi = [float(r) for r in roi.reshape(-1)]
    specs: dict[int, _Axis] = {}
    if isinstance(sizes, list):  # sizes computed at run time: some axes only keep their size
        kept = {a for a, s in zip(axes, sizes) if s is None}
        if kept and policy != "stretch":
            raise Unsupported("Resize with a keep_aspect_ratio_policy and computed sizes")
        sizes = np.array([s for s in sizes if s is not None], np.int64)
        axes = [a for a in axes if a not in kept]
    if sizes is not None:
        sizes = [int(s) for s in sizes.reshape(-1)]
        scale_list = [sizes[i] / shape[a] for i, a in enumerate(axes)]
        if policy in ("not_larger", "not_smaller"):
            common = min(scale_list) if policy == "not_larger" else max(scale_list)
            scale_list = [common] * len(axes)
            sizes = [int(common * shape[a] + 0.5) for a in axes]
        targets = sizes
    elif scales is not None:
        scale_list = [float(s) for s in scales.reshape(-1)]
        if attrs["coordinate_transformation_mode"] != "tf_crop_and_resize":
            # a scale of 1 keeps an axis as it is (its size may be known at run time only)
            kept = {a for a, s in zip(axes, scale_list) if s == 1.0}
            scale_list = [s for a, s in zip(axes, scale_list) if a not in kept]
            axes = [a for a in axes if a not in kept]
        # float32 product as in onnxruntime (5 * 1.4 is 7 there, 6.99... in float64)
        targets = [
            int(np.floor(np.float32(shape[a]) * np.float32(s))) for a, s in zip(axes, scale_list)
        ]
    else:
        raise Unsupported("Resize without scales or sizes")
    for i, axis in enumerate(axes):
        size_out = targets[i]
        axis_roi = (0.0, 1.0)
        if roi is not None:
            axis_roi = (roi[i], roi[len(axes) + i])
        specs[axis] = _Axis(int(shape[axis]), size_out, scale_list[i], axis_roi)
    return _emit(ctx, specs, attrs)


@mapper("Upsample", since=7, until=9)
def upsample(ctx: NodeContext):
    """Upsample -> per-axis ops.gather / repeat_interleave (nearest) or matmul weights (linear);
    scales computed at run time -> the script's ResizeByScales cell."""
    shape = ctx.require_shape(0)
    mode = _text(ctx.attr("mode"), "nearest")
    if mode == "bilinear":
        mode = "linear"
    if ctx.opset >= 9 and _run_time(ctx, 1):
        attrs = {
            "mode": mode,
            "coordinate_transformation_mode": "asymmetric",
            "nearest_mode": "simple",
            "cubic_coeff_a": -0.75,
            "exclude_outside": 0,
            "antialias": False,
        }
        if mode not in ("nearest", "linear"):
            raise Unsupported(f"Upsample mode '{mode}'")
        return resize_by_run_time_scales(ctx, attrs, list(range(len(shape))), 1)
    if ctx.opset >= 9:
        scales = [
            float(s) for s in np.asarray(ctx.require_const(1, "the Upsample scales")).reshape(-1)
        ]
    else:
        scales = [float(s) for s in ctx.attr("scales")]
    attrs = {
        "mode": mode,
        "coordinate_transformation_mode": "asymmetric",
        "nearest_mode": "simple" if mode == "nearest" else "round_prefer_floor",
        "cubic_coeff_a": -0.75,
        "exclude_outside": 0,
        "antialias": False,
        "extrapolation_value": 0.0,
    }
    if mode not in ("nearest", "linear"):
        raise Unsupported(f"Upsample mode '{mode}'")
    specs = {
        axis: _Axis(int(n), int(np.floor(np.float32(n) * np.float32(s))), s)
        for axis, (n, s) in enumerate(zip(shape, scales))
    }
    return _emit(ctx, specs, attrs)


@mapper("GridSample", since=16)
def grid_sample(ctx: NodeContext):
    """GridSample -> ops.grid_sample (bilinear, zeros/border/reflection padding); nearest ->
    the script's GridSampleNearest cell (ONNX's rounding); bicubic (4-D) -> the script's
    GridSampleCubic cell, written with ops (Keys' cubic, A = -0.75, 4 x 4 pixels per point)."""
    mode = ctx.attr("mode", "bilinear" if ctx.opset < 20 else "linear")
    padding = ctx.attr("padding_mode", "zeros")
    mode, padding = (v.decode() if isinstance(v, bytes) else v for v in (mode, padding))
    mode = {"linear": "bilinear", "cubic": "bicubic"}.get(mode, mode)
    rank = ctx.input_rank(0)
    if mode == "nearest" and rank in (4, 5):
        # MindSpore's grid_sample picks the other neighbour than ONNX's round-half-to-even at
        # positions exactly halfway between pixels: the script's own cell rounds like ONNX
        align = bool(int(ctx.attr("align_corners", 0)))
        kwargs = {"align_corners": align, "padding_mode": padding}
        return Cell("GridSampleNearest", kwargs, [Input(0), Input(1)], role="grid_sample")
    if mode == "bicubic" and rank == 4:
        align = bool(int(ctx.attr("align_corners", 0)))
        return grid_sample_cubic(ctx, align, padding)
    if mode != "bilinear":
        raise Unsupported(f"GridSample mode {mode!r} on a rank-{rank} input")
    rank = ctx.input_rank(0)
    if rank not in (4, 5):
        raise Unsupported(f"GridSample on a rank-{rank} input")
    return ops.grid_sample(
        Input(0),
        Input(1),
        mode=Lit(mode),
        padding_mode=Lit(padding),
        align_corners=Lit(bool(int(ctx.attr("align_corners", 0)))),
    )


@mapper("CenterCropPad", since=18)
def center_crop_pad(ctx: NodeContext):
    """CenterCropPad -> a centred slice on axes that shrink, then ops.pad (zeros) on axes that grow
    (the extra element of an odd difference goes to the end)."""
    in_shape = ctx.require_shape(0)
    rank = len(in_shape)
    axes = [normalize_axis(int(a), rank) for a in ctx.attr("axes", list(range(rank)))]
    count = ctx.require_shape(1)[0]
    if not isinstance(count, int) or count != len(axes):
        raise Unsupported("CenterCropPad shape and axes differ in length")
    if ctx.const(1) is None or not is_static([in_shape[a] for a in axes]):
        return _center_crop_pad_at_run_time(ctx, axes)
    target = ctx.const_ints(1, "the target shape")
    crop = [slice(None)] * rank
    pads = [(0, 0)] * rank
    for axis, size in zip(axes, target):
        dim = in_shape[axis]
        if size < dim:
            start = (dim - size) // 2
            crop[axis] = slice(start, start + size)
        elif size > dim:
            before = (size - dim) // 2
            pads[axis] = (before, size - dim - before)
    value = Input(0)
    if any(s != slice(None) for s in crop):
        value = Item(value, tuple(crop))
    padded = [a for a in range(rank) if pads[a] != (0, 0)]
    if padded:
        flat = []
        for axis in range(rank - 1, min(padded) - 1, -1):  # ops.pad lists the last axis first
            flat.extend(pads[axis])
        value = ops.pad(value, Lit(tuple(flat)))
    return value


def _center_crop_pad_at_run_time(ctx: NodeContext, axes: list[int]):
    """CenterCropPad with a target or sizes known only at run time (whether an axis is cropped
    or padded is decided then): per axis, the input read at ``arange(size) + offset``, zero
    outside it, the offset being (dim - size) / 2 rounded towards zero."""
    in_shape = ctx.input_shape(0)
    target = ctx.const(1)
    kind = np.dtype(ctx.input_dtype(0) or np.float32).kind
    zero = Lit(False if kind == "b" else 0 if kind in "iu" else 0.0)
    value = Input(0)
    for k, axis in enumerate(axes):
        dim = dim_expr(in_shape[axis], 0, axis)
        size = Item(Input(1), k) if target is None else int(np.asarray(target).reshape(-1)[k])
        if isinstance(size, int) and isinstance(dim, int):
            offset = Lit(int((dim - size) / 2))
        else:  # a tensor difference, which ops.div rounds towards zero
            wanted = size if target is None else ms.Tensor(Lit(size))
            difference = BinOp("-", dim, wanted)
            offset = ops.div(difference, Lit(2), rounding_mode=Lit("trunc"))
        positions = Temp(ops.arange(size) + offset, "positions")
        dim = Lit(dim) if isinstance(dim, int) else dim
        value = gather_padded(value, positions, dim, "constant", axis, len(in_shape), zero)
    return value


@mapper("AffineGrid", since=20)
def affine_grid(ctx: NodeContext):
    """AffineGrid -> ops.affine_grid(theta, size, align_corners); a size computed at run time
    builds the grid from ops.arange (ops.affine_grid needs Python integers for it)."""
    align_corners = bool(int(ctx.attr("align_corners", 0)))
    if ctx.const(1) is None:
        return _affine_grid_at_run_time(ctx, align_corners)
    size = ctx.const_ints(1, "the output size")
    if len(size) not in (4, 5):
        raise Unsupported(f"AffineGrid of a {len(size)}-element size")
    return ops.affine_grid(Input(0), Lit(tuple(size)), align_corners=Lit(align_corners))


def _affine_grid_at_run_time(ctx: NodeContext, align_corners: bool):
    """The homogeneous base grid (x, y[, z], 1) of the spatial sizes, times theta transposed:
    (N, D?, H, W, 2 or 3) for size (N, C, D?, H, W)."""
    length = ctx.require_shape(1)[0]
    if length not in (4, 5):
        raise Unsupported(f"AffineGrid of a size with {length} elements")
    dtype = DType(np.dtype(ctx.input_dtype(0) or np.float32).name)
    spatial = [Item(Input(1), i) for i in range(2, length)]
    coordinates = [_grid_coordinates(size, align_corners, dtype) for size in spatial]
    mesh = Temp(ops.meshgrid(*coordinates, indexing=Lit("ij")), "mesh")
    xyz = [Item(mesh, i) for i in reversed(range(len(spatial)))]  # x runs along the last axis
    base = ops.stack((*xyz, ops.ones_like(xyz[0])), Lit(-1))
    base = ops.reshape(base, Lit((-1, len(spatial) + 1)))
    points = ops.matmul(base, ops.transpose(Input(0), Lit((0, 2, 1))))
    theta_shape = ctx.input_shape(0)
    batch = dim_expr(theta_shape[0], 0, 0) if theta_shape is not None else -1
    return ops.reshape(points, (batch, *spatial, len(spatial)))


def _grid_coordinates(size, align_corners: bool, dtype):
    """The normalised coordinates of ``size`` points in [-1, 1]: the pixel corners' (-1 and 1
    included) with align_corners, else the pixel centres'."""
    doubled = ops.cast(ops.arange(size), dtype) * Lit(2.0)
    if align_corners:  # (2i - (size - 1)) / (size - 1); a single point sits at 0 as in
        # PyTorch (onnxruntime puts it at 1, onnx's reference at -1)
        gaps = Temp(size - Lit(1), "gaps")
        centred = doubled - ops.cast(gaps, dtype)
        return centred / ops.cast(ops.maximum(gaps, Lit(1)), dtype)
    count = ops.cast(size, dtype)
    return (doubled + Lit(1.0)) / count - Lit(1.0)
