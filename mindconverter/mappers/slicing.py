"""Joining, splitting and padding: Concat, Split, Slice, Pad and ReverseSequence."""

from __future__ import annotations

import numpy as np

from .base import (
    BinOp,
    Const,
    Input,
    Item,
    Lit,
    Neg,
    NodeContext,
    Outputs,
    Temp,
    Unpack,
    Unsupported,
    normalize_axis,
)
from .common import dim_expr, is_static, shape_value
from .registry import mapper
from .syntax import ms, ops

INT64_MAX = 2**63 - 1


@mapper("Concat")
def concat(ctx: NodeContext):
    """Concat -> ops.concat over the given axis."""
    parts = tuple(
        ctx.operand(i)
        for i in range(ctx.num_inputs)
        if ctx.has_input(i) and (ctx.input_shape(i) is None or 0 not in ctx.input_shape(i))
    )
    axis = int(ctx.attr("axis"))
    if len(parts) == 1:
        return parts[0]
    return ops.concat(parts, axis=Lit(axis))


@mapper("Split")
def split(ctx: NodeContext):
    """Split -> ops.split with equal or explicit section sizes (attribute, input or num_outputs)."""
    rank = ctx.input_rank(0)
    axis = normalize_axis(int(ctx.attr("axis", 0)), rank)
    count = ctx.num_outputs
    sizes = None
    if ctx.opset >= 13 and ctx.has_input(1):
        sizes = ctx.const_ints(1, "the split sizes")
    elif ctx.opset < 13 and ctx.has_attr("split"):
        sizes = [int(s) for s in ctx.attr("split")]
    if sizes is None:
        out_shapes = [ctx.output_shape(i) for i in range(count)]
        total = ctx.require_shape(0)[axis]
        if all(s is not None and is_static(s[axis : axis + 1]) for s in out_shapes):
            sizes = [int(s[axis]) for s in out_shapes]
        elif not is_static([total]):
            return _split_at_run_time(ctx, axis, count)
        else:
            chunk = -(-total // count)
            sizes = [chunk] * (count - 1) + [total - chunk * (count - 1)]
    if 0 in sizes:  # ops.split refuses empty sections: slice each part
        bounds = np.cumsum([0, *sizes])
        lead = (slice(None),) * axis
        return Outputs(
            [Item(Input(0), lead + (slice(int(a), int(b)),)) for a, b in zip(bounds, bounds[1:])]
        )
    section = sizes[0] if len(set(sizes)) == 1 else list(sizes)
    return Unpack(ops.split(Input(0), Lit(section), axis=Lit(axis)), count)


def _split_at_run_time(ctx: NodeContext, axis: int, count: int):
    """Equal parts of an axis whose size is only known at run time: ``ceil(size / count)`` each,
    the last one what remains (ONNX's rule), as slices (Python slicing clamps the tail)."""
    size = dim_expr(ctx.require_shape(0)[axis], 0, axis)
    chunk = Temp((size + Lit(count - 1)) // Lit(count), "chunk")
    lead = (slice(None),) * axis

    def bound(k: int):
        return None if k == 0 else chunk if k == 1 else Lit(k) * chunk

    parts = []
    for k in range(count):
        end = bound(k + 1) if k < count - 1 else None
        parts.append(Item(Input(0), lead + (slice(bound(k), end),)))
    return Outputs(parts)


def _slice_bounds(start: int, end: int, step: int, dim: int) -> slice:
    """ONNX Slice bounds for one axis, clamped the ONNX way, as a Python slice."""
    if step == 0:
        raise Unsupported("Slice with step 0")
    if start < 0:
        start += dim
    if end < 0 and end > -INT64_MAX:
        end += dim
    if step > 0:
        start = min(max(start, 0), dim)
        end = min(max(end, 0), dim)
        return slice(start or None, end if end < dim else None, step if step != 1 else None)
    start = min(max(start, 0), dim - 1)  # ONNX clamps a start before the first element to it
    end = min(max(end, -1), dim - 1)
    return slice(start if start != dim - 1 else None, end if end >= 0 else None, step)


def _python_slice(start: int, end: int, step: int) -> slice:
    """Constant bounds on an axis whose size stays dynamic: Python slicing clamps exactly like
    ONNX Slice (negative bounds count from the end), so only the "to the end" sentinels go."""
    if step == 0:
        raise Unsupported("Slice with step 0")
    far = 2**31 - 1
    start_out = None if (start == 0 and step > 0) or (start >= far and step < 0) else start
    end_out = None if (end >= far and step > 0) or (end <= -far and step < 0) else end
    return slice(start_out, end_out, None if step == 1 else step)


def _has_dynamic_bounds(ctx: NodeContext) -> bool:
    """Starts or ends computed from dynamic dimensions (axes and steps constant)."""
    dynamic = [i for i in (1, 2) if ctx.const(i) is None]
    return bool(dynamic) and all(shape_value(ctx, i) is not None for i in dynamic)


def _slice_with_dynamic_bounds(ctx: NodeContext, rank: int):
    """Python slicing clamps like ONNX Slice for positive steps, so bounds computed at run time
    (``x[:, :seq]``) are written as they are."""
    bounds = []
    for index in (1, 2):
        value = ctx.const(index)
        if value is not None:
            bounds.append([int(v) for v in np.asarray(value).reshape(-1)])
        else:
            count = len(shape_value(ctx, index))
            bounds.append([Item(Input(index), k) for k in range(count)])
    starts, ends = bounds
    axes = ctx.const_ints(3, "Slice axes") if ctx.has_input(3) else list(range(len(starts)))
    steps = ctx.const_ints(4, "Slice steps") if ctx.has_input(4) else [1] * len(starts)
    if any(step <= 0 for step in steps):
        raise Unsupported("Slice with a computed bound and a negative step")
    index = [slice(None)] * rank
    for start, end, axis, step in zip(starts, ends, axes, steps):
        index[normalize_axis(int(axis), rank)] = slice(
            None if isinstance(start, int) and start == 0 else start,
            None if isinstance(end, int) and end >= INT64_MAX // 2 else end,
            None if step == 1 else step,
        )
    while len(index) > 1 and index[-1] == slice(None):
        index.pop()
    return Item(Input(0), tuple(index))


def _clamped(bound, size, low: int = 0, high=None):
    """A bound computed at run time, counted from the end when negative and clamped to
    [low, high] (default [0, size]) as ONNX does."""
    counted = ops.where(BinOp("<", bound, Lit(0)), BinOp("+", bound, size), bound)
    return ops.clamp(counted, Lit(low), size if high is None else high)


def _slice_with_computed_bounds(ctx: NodeContext, shape):
    """Starts or ends computed from data (a loop's step...): the kept positions gathered per
    axis (``ops.arange`` of the clamped bounds), which is exact in both modes and for empty
    results."""
    rank = len(shape)
    count = len(ctx.const(1).reshape(-1)) if ctx.const(1) is not None else None
    count = count or ctx.require_shape(1)[0]
    if not isinstance(count, int):
        raise Unsupported("Slice whose number of bounds is not known")
    axes = ctx.const_ints(3, "Slice axes") if ctx.has_input(3) else list(range(count))
    steps = ctx.const_ints(4, "Slice steps") if ctx.has_input(4) else [1] * count
    if 0 in steps:
        raise Unsupported("Slice with step 0")
    value = Input(0)
    for k, (axis, step) in enumerate(zip(axes, steps)):
        axis = normalize_axis(int(axis), rank)
        if is_static(shape[axis : axis + 1]) and shape[axis] == 0:
            continue  # nothing to take from an empty axis
        size = (
            Lit(int(shape[axis]))
            if is_static(shape[axis : axis + 1])
            else Item(ops.shape(Input(0)), axis)
        )
        positions = _kept_positions(_bound(ctx, 1, k), _bound(ctx, 2, k), size, step)
        value = ops.gather(value, positions, Lit(axis))
    return value


def _kept_positions(start, end, size, step: int):
    """``ops.arange`` of the positions a Slice keeps on one axis; a start past the end gives
    none. Backwards, ONNX clamps the start to [0, size - 1] and the end to [-1, size - 1]."""
    if step > 0:
        start = Temp(_clamped(start, size), "start")
        end = ops.maximum(_clamped(end, size), start)
        return ops.arange(start, end, *([Lit(step)] if step != 1 else []))
    last = Lit(size.value - 1) if isinstance(size, Lit) else size - Lit(1)
    start = Temp(_clamped(start, size, high=last), "start")
    end = ops.minimum(_clamped(end, size, -1, last), start)
    return ops.arange(start, end, Lit(step))


def _bound(ctx: NodeContext, index: int, k: int):
    constant = ctx.const(index)
    if constant is None:
        return Item(Input(index), k)
    return ms.Tensor(Lit(int(np.asarray(constant).reshape(-1)[k])))


@mapper("Slice")
def slice_(ctx: NodeContext):
    """Slice -> Python indexing ``x[a:b:c, ...]`` with ONNX's clamping resolved."""
    shape = ctx.require_shape(0)
    rank = len(shape)
    if ctx.opset < 10:
        starts, ends = list(ctx.attr("starts")), list(ctx.attr("ends"))
        axes = list(ctx.attr("axes", range(len(starts))))
        steps = [1] * len(starts)
    elif _has_dynamic_bounds(ctx):
        return _slice_with_dynamic_bounds(ctx, rank)
    elif ctx.const(1) is None or ctx.const(2) is None:
        return _slice_with_computed_bounds(ctx, shape)
    else:
        starts = ctx.const_ints(1, "Slice starts")
        ends = ctx.const_ints(2, "Slice ends")
        axes = ctx.const_ints(3, "Slice axes") if ctx.has_input(3) else list(range(len(starts)))
        steps = ctx.const_ints(4, "Slice steps") if ctx.has_input(4) else [1] * len(starts)
    index = [slice(None)] * rank
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis = normalize_axis(int(axis), rank)
        if is_static(shape[axis : axis + 1]):
            index[axis] = _slice_bounds(int(start), int(end), int(step), int(shape[axis]))
        else:
            index[axis] = _python_slice(int(start), int(end), int(step))
    source = Input(0)
    reversed_axes = tuple(a for a, part in enumerate(index) if part == slice(None, None, -1))
    if reversed_axes and any(part not in (slice(None), slice(None, None, -1)) for part in index):
        # MindSpore's indexing drops a whole-axis reversal when another axis is sliced too
        # (x[::-1, :2] reads x[:, :2]): the reversal is an ops.flip
        source = ops.flip(source, Lit(reversed_axes))
        index = [slice(None) if a in reversed_axes else part for a, part in enumerate(index)]
    while len(index) > 1 and index[-1] == slice(None):
        index.pop()
    return Item(source, tuple(index))


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate", "wrap": "circular"}


@mapper("Pad")
def pad(ctx: NodeContext):
    """Pad -> ops.pad (constant/reflect/edge/wrap) with ONNX's begin/end pads reordered."""
    rank = ctx.input_rank(0)
    mode = ctx.attr("mode", "constant")
    if mode not in _PAD_MODES:
        raise Unsupported(f"pad mode '{mode}'")
    given = ctx.const_ints(3, "the pad axes") if ctx.has_input(3) else range(rank)
    axes = [normalize_axis(a, rank) for a in given]
    if ctx.opset < 11:
        pads = [int(p) for p in ctx.attr("pads", ctx.attr("paddings", []))]
        value = float(ctx.attr("value", 0.0))
    elif ctx.const(1) is None or (ctx.has_input(2) and ctx.const(2) is None):
        known = _known_pads(ctx)
        if known is None or None in known or (ctx.has_input(2) and ctx.const(2) is None):
            return _pad_computed(ctx, mode, axes, known)
        pads = [int(p) for p in known]  # computed from static sizes
        value = _pad_value(ctx)
    else:
        pads = ctx.const_ints(1, "the pads")
        value = _pad_value(ctx)
    begin = dict(zip(axes, pads[: len(axes)]))
    end = dict(zip(axes, pads[len(axes) :]))
    source = Input(0)
    if min(pads, default=0) < 0:  # negative pads crop first (as onnxruntime does); ops.pad gives
        # wrong values, varying from call to call, for negative widths
        index = [
            slice(-min(begin.get(a, 0), 0) or None, min(end.get(a, 0), 0) or None)
            for a in range(rank)
        ]
        while index[-1] == slice(None):
            index.pop()
        source = Item(Input(0), tuple(index))
        cropped = {a: min(begin.get(a, 0), 0) + min(end.get(a, 0), 0) for a in axes}
        begin = {a: max(b, 0) for a, b in begin.items()}
        end = {a: max(e, 0) for a, e in end.items()}
    else:
        cropped = {}
    padded = [a for a in axes if begin.get(a) or end.get(a)]
    if not padded:
        return source
    widths = []
    for axis in range(rank - 1, min(padded) - 1, -1):
        widths += [begin.get(axis, 0), end.get(axis, 0)]
    kwargs = {}
    if _PAD_MODES[mode] != "constant":
        shape = ctx.require_shape(0)
        wide = any(  # ops.pad's circular mode reads garbage past one turn
            is_static([shape[a]])
            and max(begin.get(a, 0), end.get(a, 0)) >= shape[a] + cropped.get(a, 0)
            for a in padded
        )
        if wide or (rank, len(widths) // 2) not in _PAD_RUNS[mode]:
            return _pad_by_gather(ctx, source, cropped, mode, begin, end)
        kwargs["mode"] = Lit(_PAD_MODES[mode])
    elif value != 0:
        kwargs["value"] = Lit(value)
    return ops.pad(source, Lit(tuple(widths)), **kwargs)


def _pad_value(ctx: NodeContext) -> float:
    """The constant a Pad fills with (0 when it names none)."""
    if not ctx.has_input(2):
        return 0.0
    constant_value = ctx.require_const(2, "the pad value")
    return np.asarray(constant_value).reshape(-1)[0].item() if constant_value.size else 0.0


def _known_pads(ctx: NodeContext) -> list[int | None] | None:
    """The pads computed from sizes: each a number where it does not depend on a dynamic size
    (SEW pads only the end of its time axis, by a run-time amount), else None."""
    value = shape_value(ctx, 1)
    if value is None:
        return None
    return [int(v) if isinstance(v, (int, np.integer)) or v.is_Integer else None for v in value]


def _pad_computed(ctx: NodeContext, mode: str, axes: list[int], known: list | None = None):
    """Pads (or the pad value) computed at run time: per axis, gather the source position each
    output position reads (clamped, wrapped or reflected by ``mode``; negative pads crop) and,
    in constant mode, put the value where the position falls outside. Exact in both modes.
    Axes whose pads are ``known`` zeros are left alone; a side known not to pad needs no test
    of positions past it."""
    rank = ctx.input_rank(0)
    shape = ctx.require_shape(0)
    dtype = np.dtype(ctx.input_dtype(0) or np.float32)
    value = Input(2) if ctx.has_input(2) and ctx.const(2) is None else None
    if value is None:
        fill = ctx.const(2) if ctx.has_input(2) else None
        number = np.asarray(fill).reshape(-1)[0].item() if fill is not None and fill.size else 0
        value = Lit(
            bool(number)
            if dtype.kind == "b"
            else int(number)
            if dtype.kind in "iu"
            else float(number)
        )
    result = Input(0)
    for k, axis in enumerate(axes):
        first, last = (known[k], known[k + len(axes)]) if known else (None, None)
        if first == 0 and last == 0:
            continue
        size = (
            Lit(int(shape[axis]))
            if is_static(shape[axis : axis + 1])
            else Item(ops.shape(Input(0)), axis)
        )
        before = Item(Input(1), k) if first is None else Lit(first)
        after = Item(Input(1), k + len(axes)) if last is None else Lit(last)
        end = BinOp("+", size, after) if last != 0 else size
        positions = ops.arange(Neg(before), end) if first != 0 else ops.arange(end)
        sides = (first is None or first > 0, last is None or last > 0)
        positions = Temp(positions, "positions")
        result = gather_padded(result, positions, size, mode, axis, rank, value, sides)
    return result


def gather_padded(
    source, positions, size, mode: str, axis: int, rank: int, value, sides=(True, True)
):
    """``source`` read at ``positions`` on ``axis`` (of ``size`` entries): positions outside are
    clamped, wrapped or reflected by ``mode``, or get ``value`` in constant mode. ``sides``:
    whether positions may fall before the start, past the end."""
    last = Lit(size.value - 1) if isinstance(size, Lit) else size - Lit(1)
    if mode == "wrap":
        index = BinOp("%", positions, size)
    elif mode == "reflect":
        period = Lit(2) * last
        folded = Temp(positions % period, "folded")
        index = ops.where(BinOp("<", folded, size), folded, period - folded)
    else:  # constant and edge read the nearest position inside
        index = ops.clamp(positions, Lit(0), last)
    gathered = ops.gather(source, index, Lit(axis))
    if mode != "constant" or not any(sides):
        return gathered
    tests = [BinOp(">=", positions, Lit(0))] if sides[0] else []
    tests += [BinOp("<", positions, size)] if sides[1] else []
    inside = tests[0] & tests[1] if len(tests) == 2 else tests[0]
    inside = ops.reshape(inside, Lit((-1,) + (1,) * (rank - 1 - axis)))
    return ops.where(inside, gathered, value)


# (rank, number of trailing axes padded) that MindSpore's ops.pad runs in each mode other than
# "constant" (its PadV3 kernel refuses the rest: 1-D, 5-D reflect, a batch or channel axis...).
_PAD_RUNS = {
    "reflect": {(2, 1), (3, 1), (3, 2), (4, 2)},
    "edge": {(2, 1), (3, 1), (3, 2), (4, 2), (4, 3), (5, 3)},
    "wrap": {(2, 1), (3, 1), (3, 2), (4, 2), (4, 3), (5, 3)},
}


def _pad_by_gather(ctx: NodeContext, source, cropped: dict, mode: str, begin: dict, end: dict):
    """Edge/reflect/wrap padding as one ops.gather per axis of the source positions each output
    position reads, for what ops.pad cannot run (``cropped``: how much each axis lost first)."""
    shape = ctx.require_shape(0)
    for axis in sorted(set(begin) | set(end)):
        before, after = int(begin.get(axis, 0)), int(end.get(axis, 0))
        if not before and not after:
            continue
        if not is_static([shape[axis]]):
            raise Unsupported(f"{mode} padding of a dynamic dimension that ops.pad cannot pad")
        size = int(shape[axis]) + cropped.get(axis, 0)
        positions = np.arange(-before, size + after)
        if mode == "edge":
            index = np.clip(positions, 0, size - 1)
        elif mode == "wrap":
            index = positions % size
        else:  # reflect, without repeating the border
            period = max(2 * (size - 1), 1)
            index = positions % period
            index = np.where(index < size, index, period - index)
        source = ops.gather(source, Const(index.astype(np.int64)), Lit(axis))
    return source


@mapper("ReverseSequence", since=10)
def reverse_sequence(ctx: NodeContext):
    """ReverseSequence -> ops.reverse_sequence."""
    lengths = ctx.operand(1)
    return ops.reverse_sequence(
        Input(0),
        lengths,
        seq_dim=Lit(int(ctx.attr("time_axis", 0))),
        batch_dim=Lit(int(ctx.attr("batch_axis", 1))),
    )
