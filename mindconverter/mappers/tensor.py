"""Shape and tensor manipulation: Flatten, Reshape, Transpose, Concat, Split, Slice, Squeeze,
Unsqueeze, Identity, Constant, Cast, Shape, Pad, Dropout."""

from __future__ import annotations

import numpy as np
from onnx import helper

from ._common import axes_input_or_attr
from .base import (
    Call,
    Cell,
    Const,
    DType,
    Input,
    Item,
    Lit,
    NodeContext,
    Unpack,
    Unsupported,
    normalize_axis,
)
from .registry import mapper

INT64_MAX = 2**63 - 1


@mapper("Identity")
def identity(ctx: NodeContext):
    """Identity -> the input itself (no statement)."""
    return Input(0)


@mapper("Constant")
def constant(ctx: NodeContext):
    """Constant (only reached when it could not be folded away) -> its value."""
    for key in ("value", "value_float", "value_int", "value_floats", "value_ints"):
        if ctx.has_attr(key):
            value = np.asarray(ctx.attr(key))
            if key in ("value_float", "value_floats"):
                value = value.astype(np.float32)
            elif key in ("value_int", "value_ints"):
                value = value.astype(np.int64)
            return Const(value)
    raise Unsupported("Constant without a numeric value")


@mapper("Cast")
def cast(ctx: NodeContext):
    """Cast -> ops.cast to the MindSpore dtype."""
    target = np.dtype(helper.tensor_dtype_to_np_dtype(int(ctx.attr("to"))))
    if target.kind not in "biuf":
        raise Unsupported(f"cast to {target.name}")
    return Call("ops.cast", [Input(0), DType(target.name)])


@mapper("Shape")
def shape(ctx: NodeContext):
    """Shape -> a constant int64 vector when the input shape is static (``start``/``end`` honoured);
    a run-time shape is not supported."""
    shape = ctx.input_shape(0)
    if shape is None or any(not isinstance(d, (int, np.integer)) or d < 0 for d in shape):
        raise Unsupported(
            "the input's shape is not known at conversion time; give --shape for every input"
        )
    rank = len(shape)
    start = int(ctx.attr("start", 0)) if ctx.opset >= 15 else 0
    end = ctx.attr("end", None) if ctx.opset >= 15 else None
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = rank if end is None else int(end)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    return Const(np.array(shape[start:end], dtype=np.int64))


@mapper("Flatten")
def flatten(ctx: NodeContext):
    """Flatten -> ops.flatten (axis 1) or ops.reshape to 2-D."""
    rank = ctx.input_rank(0)
    axis = int(ctx.attr("axis", 1))
    axis = normalize_axis(
        axis + rank if axis < 0 else axis, rank + 1
    )  # valid range is [-rank, rank]
    if axis == 1:
        return Call("ops.flatten", [Input(0)])
    shape = ctx.require_shape(0)
    return Call("ops.reshape", [Input(0), Lit((int(np.prod(shape[:axis], dtype=np.int64)), -1))])


@mapper("Reshape")
def reshape(ctx: NodeContext):
    """Reshape -> ops.reshape with ONNX's 0 (copy) resolved and -1 kept."""
    if ctx.opset < 5:
        target = list(ctx.attr("shape"))
    else:
        target = ctx.const_ints(1, "the target shape")
    allow_zero = int(ctx.attr("allowzero", 0))
    in_shape = ctx.input_shape(0)
    resolved = []
    for axis, size in enumerate(target):
        if size == 0 and not allow_zero:
            if in_shape is None:
                raise Unsupported("Reshape copies a dimension of an input whose shape is unknown")
            size = in_shape[axis]
        resolved.append(int(size))
    return Call("ops.reshape", [Input(0), Lit(tuple(resolved))])


@mapper("Transpose")
def transpose(ctx: NodeContext):
    """Transpose -> ops.transpose (reversed axes by default)."""
    rank = ctx.input_rank(0)
    perm = ctx.attr("perm")
    perm = tuple(int(p) for p in perm) if perm is not None else tuple(reversed(range(rank)))
    return Call("ops.transpose", [Input(0), Lit(perm)])


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
    return Call("ops.concat", [parts], {"axis": Lit(axis)})


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
        if all(s is not None for s in out_shapes):
            sizes = [int(s[axis]) for s in out_shapes]
        else:
            total = ctx.require_shape(0)[axis]
            chunk = -(-total // count)
            sizes = [chunk] * (count - 1) + [total - chunk * (count - 1)]
    section = sizes[0] if len(set(sizes)) == 1 else list(sizes)
    return Unpack(Call("ops.split", [Input(0), Lit(section)], {"axis": Lit(axis)}), count)


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
    start = min(max(start, -1), dim - 1)
    end = min(max(end, -1), dim - 1)
    return slice(start if start != dim - 1 else None, end if end >= 0 else None, step)


@mapper("Slice")
def slice_(ctx: NodeContext):
    """Slice -> Python indexing ``x[a:b:c, ...]`` with ONNX's clamping resolved."""
    shape = ctx.require_shape(0)
    rank = len(shape)
    if ctx.opset < 10:
        starts, ends = list(ctx.attr("starts")), list(ctx.attr("ends"))
        axes = list(ctx.attr("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = ctx.const_ints(1, "Slice starts")
        ends = ctx.const_ints(2, "Slice ends")
        axes = ctx.const_ints(3, "Slice axes") if ctx.has_input(3) else list(range(len(starts)))
        steps = ctx.const_ints(4, "Slice steps") if ctx.has_input(4) else [1] * len(starts)
    index = [slice(None)] * rank
    for start, end, axis, step in zip(starts, ends, axes, steps):
        axis = normalize_axis(int(axis), rank)
        index[axis] = _slice_bounds(int(start), int(end), int(step), int(shape[axis]))
    while len(index) > 1 and index[-1] == slice(None):
        index.pop()
    return Item(Input(0), tuple(index))


@mapper("Squeeze")
def squeeze(ctx: NodeContext):
    """Squeeze -> ops.squeeze (axes from the attribute before opset 13, the input after)."""
    axes = axes_input_or_attr(ctx, 1, since=13)
    if axes is None:
        return Call("ops.squeeze", [Input(0)])
    rank = ctx.input_rank(0)
    axes = tuple(sorted(normalize_axis(a, rank) for a in axes))
    return Call("ops.squeeze", [Input(0)], {"axis": Lit(axes[0] if len(axes) == 1 else axes)})


@mapper("Unsqueeze")
def unsqueeze(ctx: NodeContext):
    """Unsqueeze -> ops.unsqueeze for one axis, ops.reshape for several."""
    axes = axes_input_or_attr(ctx, 1, since=13)
    if axes is None:
        raise Unsupported("Unsqueeze without axes")
    out_rank = ctx.input_rank(0) + len(axes)
    axes = sorted(normalize_axis(a, out_rank) for a in axes)
    if len(axes) == 1:
        return Call("ops.unsqueeze", [Input(0)], {"dim": Lit(axes[0])})
    out_shape = ctx.output_shape(0)
    if out_shape is None:
        expr = Input(0)
        for axis in axes:
            expr = Call("ops.unsqueeze", [expr], {"dim": Lit(axis)})
        return expr
    return Call("ops.reshape", [Input(0), Lit(tuple(int(d) for d in out_shape))])


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate", "wrap": "circular"}


@mapper("Pad")
def pad(ctx: NodeContext):
    """Pad -> ops.pad (constant/reflect/edge/wrap) with ONNX's begin/end pads reordered."""
    rank = ctx.input_rank(0)
    mode = ctx.attr("mode", "constant")
    if mode not in _PAD_MODES:
        raise Unsupported(f"pad mode '{mode}'")
    if ctx.opset < 11:
        pads = [int(p) for p in ctx.attr("pads", ctx.attr("paddings", []))]
        value = float(ctx.attr("value", 0.0))
        axes = list(range(rank))
    else:
        pads = ctx.const_ints(1, "the pads")
        value = 0.0
        if ctx.has_input(2):
            constant_value = ctx.require_const(2, "the pad value")
            value = np.asarray(constant_value).reshape(-1)[0].item() if constant_value.size else 0.0
        axes = ctx.const_ints(3, "the pad axes") if ctx.has_input(3) else list(range(rank))
    axes = [normalize_axis(a, rank) for a in axes]
    begin = dict(zip(axes, pads[: len(axes)]))
    end = dict(zip(axes, pads[len(axes) :]))
    last = max((a for a in axes if begin.get(a) or end.get(a)), default=None)
    if last is None:
        return Input(0)
    widths = []
    for axis in range(rank - 1, min(a for a in axes if begin.get(a) or end.get(a)) - 1, -1):
        widths += [begin.get(axis, 0), end.get(axis, 0)]
    kwargs = {}
    if _PAD_MODES[mode] != "constant":
        kwargs["mode"] = Lit(_PAD_MODES[mode])
    elif value != 0:
        kwargs["value"] = Lit(value)
    return Call("ops.pad", [Input(0), Lit(tuple(widths))], kwargs)


@mapper("Dropout")
def dropout(ctx: NodeContext):
    """Dropout -> nn.Dropout(p=ratio), an identity at inference that keeps the model trainable."""
    if ctx.output_used(1):
        raise Unsupported("the mask output of Dropout is not supported")
    ratio = 0.5
    if ctx.opset < 12:
        ratio = float(ctx.attr("ratio", 0.5))
    elif ctx.has_input(1):
        ratio = float(np.asarray(ctx.require_const(1, "the dropout ratio")).reshape(()))
    if ctx.has_input(2) and ctx.const(2) is not None and bool(np.asarray(ctx.const(2)).reshape(())):
        raise Unsupported("Dropout in training mode")
    return Cell("nn.Dropout", {"p": ratio}, [Input(0)], role="dropout")
