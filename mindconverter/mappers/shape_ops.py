"""Shape manipulation: Shape, Size, Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Expand,
Tile, DepthToSpace and SpaceToDepth."""

from __future__ import annotations

import numpy as np

from ..graph.internal_domain import DOMAIN
from .base import (
    BinOp,
    Call,
    Const,
    DType,
    Input,
    Item,
    Lit,
    NodeContext,
    Noted,
    Temp,
    Unsupported,
    normalize_axis,
)
from .common import axes_input_or_attr, dim_expr, is_static, shape_value
from .registry import mapper
from .syntax import ops


@mapper("Shape")
def shape(ctx: NodeContext):
    """Shape -> a constant int64 vector when the input shape is static (``start``/``end`` honoured);
    the whole shape read at run time (``ops.TensorShape``) when sizes are dynamic or data-dependent."""
    shape = ctx.input_shape(0)
    if shape is None:
        raise Unsupported(
            "the input's shape is not known at conversion time; give --shape for every input"
        )
    rank = len(shape)
    start = int(ctx.attr("start", 0)) if ctx.opset >= 15 else 0
    end = ctx.attr("end", None) if ctx.opset >= 15 else None
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = rank if end is None else int(end)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    if all(isinstance(d, (int, np.integer)) and d >= 0 for d in shape[start:end]):
        return Const(np.array(shape[start:end], dtype=np.int64))
    whole = Call("ops.TensorShape()", [Input(0)])
    return whole if (start, end) == (0, rank) else Item(whole, slice(start or None, end))


@mapper("Flatten")
def flatten(ctx: NodeContext):
    """Flatten -> ops.flatten (axis 1) or ops.reshape to 2-D."""
    rank = ctx.input_rank(0)
    axis = int(ctx.attr("axis", 1))
    axis = normalize_axis(
        axis + rank if axis < 0 else axis, rank + 1
    )  # valid range is [-rank, rank]
    if axis == 1 and rank >= 2:  # ops.flatten leaves a 1-D input as it is; ONNX gives (n, 1)
        return ops.flatten(Input(0))
    shape = ctx.require_shape(0)
    if not is_static(shape[:axis]) and is_static(shape[axis:]):
        return ops.reshape(Input(0), Lit((-1, int(np.prod(shape[axis:], dtype=np.int64)))))
    if is_static(shape[:axis]):
        return ops.reshape(Input(0), Lit((int(np.prod(shape[:axis], dtype=np.int64)), -1)))
    # both sides sized at run time: the leading sizes multiplied in construct()
    lead = None
    for i, dim in enumerate(shape[:axis]):
        size = dim_expr(dim, 0, i)
        size = Lit(size) if isinstance(size, int) else size
        lead = size if lead is None else BinOp("*", lead, size)
    return ops.reshape(Input(0), (lead, Lit(-1)))


RESHAPE_TO_TENSOR_WHY = (
    "sizes passed one by one: MindSpore can crash reshaping to a shape held in a tensor"
)


def _sizes_tuple(ctx: NodeContext, index: int) -> bool:
    """Whether input ``index`` is written as a tuple of Python sizes (a ``Dims`` node read only as
    a shape), not as a tensor."""
    producer = ctx.graph.producers.get(ctx.node.inputs[index])
    if producer is None or producer.domain != DOMAIN or producer.op_type != "Dims":
        return False
    return not any(attr.name == "as_tensor" and attr.i for attr in producer.attribute)


@mapper("Reshape")
def reshape(ctx: NodeContext):
    """Reshape -> ops.reshape with ONNX's 0 (copy) resolved and -1 kept; a target computed from
    dynamic dimensions is used as the tuple it is."""
    if ctx.opset < 5:
        target = list(ctx.attr("shape"))
    elif ctx.const(1) is None and shape_value(ctx, 1) is not None:
        target = list(shape_value(ctx, 1))
        if not any(isinstance(size, int) and size == 0 for size in target):
            if _sizes_tuple(ctx, 1):
                return ops.reshape(Input(0), Input(1))
            # a reshape to a shape *tensor* can crash MindSpore (SIGSEGV): pass its entries
            return Noted(
                ops.reshape(Input(0), tuple(Item(Input(1), i) for i in range(len(target)))),
                RESHAPE_TO_TENSOR_WHY,
            )
        target = [
            size if isinstance(size, int) else Item(Input(1), i) for i, size in enumerate(target)
        ]
    elif ctx.const(1) is None:
        return _reshape_computed(ctx)
    else:
        target = ctx.const_ints(1, "the target shape")
    allow_zero = int(ctx.attr("allowzero", 0))
    in_shape = ctx.input_shape(0)
    resolved = []
    for axis, size in enumerate(target):
        if isinstance(size, int) and size == 0 and not allow_zero:
            if in_shape is None:
                raise Unsupported("Reshape copies a dimension of an input whose shape is unknown")
            size = dim_expr(in_shape[axis], 0, axis)
        resolved.append(size if not isinstance(size, (int, np.integer)) else int(size))
    if all(isinstance(size, int) for size in resolved):
        return ops.reshape(Input(0), Lit(tuple(resolved)))
    return ops.reshape(Input(0), tuple(resolved))


def _input_dims(ctx: NodeContext, length: int):
    """The input's sizes as an int64 tensor of ``length`` entries (cut, or padded with ones on
    the right: a Reshape's 0 only copies sizes the input has)."""
    dims = Call("ops.TensorShape()", [Input(0)])
    rank = ctx.input_rank(0)
    if length == rank:
        return dims
    if length < rank:
        return Item(dims, slice(None, length))
    ones = ops.ones(Lit(length - rank), DType("int64"))
    return ops.concat((dims, ones))


def _reshape_computed(ctx: NodeContext):
    """Reshape to a shape computed from data: its 0 entries copy the input's sizes (unless
    allowzero) with ops.where; ops.reshape takes the sizes as a tuple (MindSpore's GRAPH mode
    can crash on a reshape to a shape tensor)."""
    length = ctx.require_shape(1)[0]
    if not isinstance(length, int):
        raise Unsupported("Reshape to a target whose length is not known")
    target = Input(1)
    if not int(ctx.attr("allowzero", 0)):
        copied = [BinOp("==", target, Lit(0)), _input_dims(ctx, length), target]
        target = Temp(ops.where(*copied), "target")
    return ops.reshape(Input(0), tuple(Item(target, i) for i in range(length)))


@mapper("Transpose")
def transpose(ctx: NodeContext):
    """Transpose -> ops.transpose (reversed axes by default)."""
    rank = ctx.input_rank(0)
    perm = ctx.attr("perm")
    perm = tuple(int(p) for p in perm) if perm is not None else tuple(reversed(range(rank)))
    return ops.transpose(Input(0), Lit(perm))


@mapper("Squeeze")
def squeeze(ctx: NodeContext):
    """Squeeze -> ops.squeeze (axes from the attribute before opset 13, the input after)."""
    axes = axes_input_or_attr(ctx, 1, since=13)
    if axes is None:
        return ops.squeeze(Input(0))
    rank = ctx.input_rank(0)
    axes = tuple(sorted(normalize_axis(a, rank) for a in axes))
    return ops.squeeze(Input(0), axis=Lit(axes[0] if len(axes) == 1 else axes))


@mapper("Unsqueeze")
def unsqueeze(ctx: NodeContext):
    """Unsqueeze -> ops.unsqueeze for one axis; several: ``x[:, None, None, :]``, or
    ops.reshape to a static shape."""
    axes = axes_input_or_attr(ctx, 1, since=13)
    if axes is None:
        raise Unsupported("Unsqueeze without axes")
    out_rank = ctx.input_rank(0) + len(axes)
    axes = sorted(normalize_axis(a, out_rank) for a in axes)
    if len(axes) == 1:
        return ops.unsqueeze(Input(0), dim=Lit(axes[0]))
    out_shape = ctx.output_shape(0)
    if out_shape is None or not is_static(out_shape):
        # x[:, None, None, :]: new axes where None stands, every size kept as it is
        return Item(
            Input(0), tuple(None if axis in axes else slice(None) for axis in range(out_rank))
        )
    return ops.reshape(Input(0), Lit(tuple(int(d) for d in out_shape)))


@mapper("Expand", since=8)
def expand(ctx: NodeContext):
    """Expand -> ops.broadcast_to the (bidirectionally) broadcast shape."""
    in_shape = ctx.require_shape(0)
    if ctx.const(1) is None and shape_value(ctx, 1) is not None:
        filled = _full_of_scalar(ctx, len(in_shape), shape_value(ctx, 1))
        if filled is not None:
            return filled
        return _expand_to_dynamic(ctx, len(in_shape), shape_value(ctx, 1))
    if ctx.const(1) is None:
        return _expand_computed(ctx, len(in_shape))
    target = ctx.const_ints(1, "the Expand shape")
    if not is_static(in_shape):  # a constant target over dynamic sizes: -1 keeps an input size
        return _expand_over_dynamic(ctx, in_shape, target)
    out = tuple(int(d) for d in np.broadcast_shapes(tuple(in_shape), tuple(target)))
    if out == tuple(in_shape):
        return Input(0)
    return ops.broadcast_to(ctx.operand(0), Lit(out))


def _expand_over_dynamic(ctx: NodeContext, in_shape: tuple, target: list[int]):
    """Expand a value with dynamic sizes to a constant target: where the target says 1 the
    input's size stays (-1), elsewhere the target's size; None of it needs the input's sizes."""
    out_rank = max(len(in_shape), len(target))
    dims = []
    for axis in range(out_rank):
        in_axis, t_axis = axis - (out_rank - len(in_shape)), axis - (out_rank - len(target))
        size = target[t_axis] if t_axis >= 0 else 1
        dims.append(-1 if size == 1 and in_axis >= 0 else size)
    if all(size == -1 for size in dims):
        return Input(0)
    return ops.broadcast_to(ctx.operand(0), Lit(tuple(dims)))


def _full_of_scalar(ctx: NodeContext, in_rank: int, target: tuple):
    """A one-number constant expanded to a computed shape: ``ops.full(shape, 15, dtype=...)``;
    None when the expanded value is not a constant of one element."""
    value = ctx.const(0)
    if value is None or value.size != 1 or value.dtype.kind not in "biuf":
        return None
    dims = [1] * (in_rank - len(target)) + [
        size if isinstance(size, int) else Item(Input(1), axis) for axis, size in enumerate(target)
    ]
    number = value.reshape(-1)[0].item()
    return ops.full(tuple(dims), Lit(number), dtype=DType(value.dtype.name))


def _expand_to_dynamic(ctx: NodeContext, in_rank: int, target: tuple):
    """Expand to a shape computed from dynamic dimensions: -1 keeps an input axis where the
    target says 1, the target's own entries elsewhere."""
    out_rank = max(in_rank, len(target))
    dims = []
    for axis in range(out_rank):
        in_axis, t_axis = axis - (out_rank - in_rank), axis - (out_rank - len(target))
        size = target[t_axis] if t_axis >= 0 else 1
        if isinstance(size, int) and size == 1 and in_axis >= 0:
            dims.append(-1)
        elif isinstance(size, int):
            dims.append(size)
        else:
            dims.append(Item(Input(1), t_axis))
    if len(target) == out_rank and -1 not in dims:
        return ops.broadcast_to(ctx.operand(0), Input(1))  # the sizes as they are
    return ops.broadcast_to(ctx.operand(0), tuple(dims))


def _expand_computed(ctx: NodeContext, in_rank: int):
    """Expand to a shape computed from data: where the input has size 1 the target's size,
    else the input's (bidirectional broadcasting), as a tuple for ops.broadcast_to."""
    length = ctx.require_shape(1)[0]
    if not isinstance(length, int):
        raise Unsupported("Expand to a shape whose length is not known")
    out_rank = max(in_rank, length)
    dims = Call("ops.TensorShape()", [Input(0)])
    if out_rank > in_rank:
        ones = ops.ones(Lit(out_rank - in_rank), DType("int64"))
        dims = ops.concat((ones, dims))
    wanted = Input(1)
    if out_rank > length:
        ones = ops.ones(Lit(out_rank - length), DType("int64"))
        wanted = ops.concat((ones, wanted))
    dims = Temp(dims, "dims")
    target = Temp(ops.where(BinOp("==", dims, Lit(1)), wanted, dims), "target")
    return ops.broadcast_to(ctx.operand(0), tuple(Item(target, i) for i in range(out_rank)))


@mapper("Tile", since=6)
def tile(ctx: NodeContext):
    """Tile -> ops.tile; repeats computed at run time are passed as the tuple of their entries
    (sizes known to be numbers written as numbers)."""
    sizes = shape_value(ctx, 1)
    if ctx.const(1) is None and sizes is not None:
        repeats = tuple(
            int(size) if isinstance(size, int) or size.is_Integer else Item(Input(1), axis)
            for axis, size in enumerate(sizes)
        )
        return ops.tile(ctx.operand(0), repeats)
    if ctx.const(1) is None:
        count = ctx.require_shape(1)[0]
        if not isinstance(count, int):
            raise Unsupported("Tile with repeats whose length is not known")
        return ops.tile(ctx.operand(0), tuple(Item(Input(1), i) for i in range(count)))
    repeats = tuple(ctx.const_ints(1, "the Tile repeats"))
    if all(r == 1 for r in repeats):
        return Input(0)
    return ops.tile(ctx.operand(0), Lit(repeats))


@mapper("Size")
def size(ctx: NodeContext):
    """Size of a statically shaped value -> an int64 constant."""
    shape = ctx.require_shape(0)
    return Const(np.array(int(np.prod(shape, dtype=np.int64)), np.int64))


def _reorder(value, first: tuple[int, ...], perm: tuple[int, ...], final: tuple[int, ...]):
    return ops.reshape(ops.transpose(ops.reshape(value, Lit(first)), Lit(perm)), Lit(final))


@mapper("DepthToSpace")
def depth_to_space(ctx: NodeContext):
    """DepthToSpace -> ops.pixel_shuffle (CRD) or reshape/transpose/reshape (DCR)."""
    n, c, h, w = ctx.require_shape(0)
    n = n if is_static([n]) else -1  # a dynamic batch stays dynamic
    bs = int(ctx.attr("blocksize"))
    mode = ctx.attr("mode", "DCR") if ctx.opset >= 11 else "DCR"
    if isinstance(mode, bytes):
        mode = mode.decode()
    out_c = c // (bs * bs)
    if mode == "CRD":
        return ops.pixel_shuffle(Input(0), Lit(bs))
    return _reorder(
        Input(0), (n, bs, bs, out_c, h, w), (0, 3, 4, 1, 5, 2), (n, out_c, h * bs, w * bs)
    )


@mapper("SpaceToDepth")
def space_to_depth(ctx: NodeContext):
    """SpaceToDepth -> reshape/transpose/reshape (blocks become the leading channel factor in DCR
    mode, the trailing one in CRD mode, opset 28)."""
    n, c, h, w = ctx.require_shape(0)
    n = n if is_static([n]) else -1  # a dynamic batch stays dynamic
    bs = int(ctx.attr("blocksize"))
    mode = ctx.attr("mode", "DCR")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    perm = (0, 1, 3, 5, 2, 4) if mode == "CRD" else (0, 3, 5, 1, 2, 4)
    return _reorder(
        Input(0), (n, c, h // bs, bs, w // bs, bs), perm, (n, c * bs * bs, h // bs, w // bs)
    )
