"""Indexing operators: Gather, GatherElements, GatherND, ScatterElements/Scatter, ScatterND, TopK,
NonZero, Compress, Unique, TensorScatter.

ONNX allows negative indices (counting from the end); MindSpore kernels do not, so run-time
indices are wrapped with ``% dim`` (a floor modulo: exact for -dim..dim-1) and constant indices
are wrapped at conversion time.
"""

from __future__ import annotations

import numpy as np

from .base import (
    BinOp,
    Call,
    Cell,
    Const,
    DType,
    Expr,
    Input,
    Item,
    Lit,
    NodeContext,
    Noted,
    Outputs,
    Temp,
    Unsupported,
    normalize_axis,
)
from .common import dim_expr, is_static
from .registry import mapper
from .syntax import ops


def _wrapped_indices(ctx: NodeContext, index: int, dims, int64: bool = False):
    """Indices input ``index`` with negative values wrapped by ``dims`` (an int or per-column
    sizes), or by a size known only at run time (an expression such as ``ops.shape(x)[0]``)."""
    value = ctx.const(index)
    if value is not None and not isinstance(dims, Expr):
        array = np.asarray(value).astype(np.int64)
        array = np.where(array < 0, array + np.asarray(dims, np.int64), array)
        return Const(array)
    if value is not None:  # constant indices into a size known at run time
        return Const(np.asarray(value).astype(np.int64)) % dims
    expr = Input(index)
    if int64 and ctx.input_dtype(index) != np.int64:
        expr = ops.cast(expr, DType("int64"))
    if isinstance(dims, Expr):
        return expr % dims
    if isinstance(dims, (int, np.integer)):
        return expr % Lit(int(dims))
    return expr % Const(np.asarray(dims, np.int64))


def _indices_along_dynamic_axis(ctx: NodeContext, axis: int):
    """Gather indices into an axis whose size stays dynamic: they wrap with the axis' run-time
    size (``% x.shape[axis]``) unless they are constants that are never negative."""
    value = ctx.const(1)
    if value is not None:
        array = np.asarray(value).astype(np.int64)
        if (array >= 0).all():
            return Const(array)
        return Const(array) % dim_expr(None, 0, axis)
    return Input(1) % dim_expr(None, 0, axis)


@mapper("Gather")
def gather(ctx: NodeContext):
    """Gather -> nn.Embedding for row lookups in a constant float32 table, else ops.gather along
    any axis (scalar indices drop the axis)."""
    shape = ctx.require_shape(0)
    axis = normalize_axis(int(ctx.attr("axis", 0)), len(shape))
    if is_static(shape[axis : axis + 1]):
        indices = _wrapped_indices(ctx, 1, int(shape[axis]))
    else:
        indices = _indices_along_dynamic_axis(ctx, axis)
    table = ctx.const(0)
    if (
        table is not None
        and table.ndim == 2
        and axis == 0
        and table.dtype == np.float32
        and not ctx.is_const(1)
    ):
        # token ids index rows directly: negative ids are invalid for an embedding, as in PyTorch
        return Cell(
            "nn.Embedding",
            {"vocab_size": int(table.shape[0]), "embedding_size": int(table.shape[1])},
            [Input(1)],
            weights={"embedding_table": ctx.weight(0)},
            role="embedding",
        )
    return ops.gather(ctx.operand(0), indices, Lit(axis))


@mapper("GatherElements", since=11)
def gather_elements(ctx: NodeContext):
    """GatherElements -> ops.gather_elements; ``ops.zeros_like(indices)`` (``full_like``) when
    the data is a constant of one value in the indices' dtype (BERT's buffer of token types)."""
    data = ctx.const(0)
    if (
        data is not None
        and data.size
        and data.dtype == ctx.input_dtype(1)
        and np.all(data == data.reshape(-1)[0])
    ):
        value = data.reshape(-1)[0].item()
        if value == 0:
            return ops.zeros_like(Input(1))
        return ops.full_like(Input(1), Lit(value))
    shape = ctx.require_shape(0)
    axis = normalize_axis(int(ctx.attr("axis", 0)), len(shape))
    indices = _wrapped_indices(ctx, 1, dim_expr(shape[axis], 0, axis))
    return ops.gather_elements(ctx.operand(0), Lit(axis), indices)


def _batch_coordinates(index_shape, batch_dims: int) -> np.ndarray:
    """For each index tuple, the coordinates of its batch position (shape index_shape[:-1] + (b,))."""
    grids = np.indices(tuple(index_shape[:-1]), dtype=np.int64)[:batch_dims]
    return np.ascontiguousarray(np.moveaxis(grids, 0, -1))


@mapper("GatherND", since=11)
def gather_nd(ctx: NodeContext):
    """GatherND -> ops.gather_nd; batch_dims become explicit leading coordinates."""
    shape = ctx.require_shape(0)
    index_shape = ctx.require_shape(1)
    batch_dims = int(ctx.attr("batch_dims", 0)) if ctx.opset >= 12 else 0
    depth = int(index_shape[-1])
    sizes = list(shape[batch_dims : batch_dims + depth])
    if is_static(sizes):
        indices = _wrapped_indices(ctx, 1, sizes, int64=True)
    elif ctx.const(1) is None and not batch_dims:
        # per-column sizes known only at run time
        dims = tuple(dim_expr(size, 0, batch_dims + k) for k, size in enumerate(sizes))
        indices = Input(1) % ops.tuple_to_array(dims)
    else:
        raise Unsupported("GatherND with constant or batched indices into dynamic dimensions")
    if batch_dims:
        coords = Const(_batch_coordinates(index_shape, batch_dims))
        indices = ops.concat((coords, indices), axis=Lit(-1))
    return ops.gather_nd(ctx.operand(0), indices)


_SCATTER_ND_FUNCS = {
    "none": "ops.tensor_scatter_update",
    "add": "ops.tensor_scatter_add",
    "mul": "ops.tensor_scatter_mul",
    "max": "ops.tensor_scatter_max",
    "min": "ops.tensor_scatter_min",
}


def _reduction(ctx: NodeContext) -> str:
    reduction = ctx.attr("reduction", "none") if ctx.opset >= 16 else "none"
    if isinstance(reduction, bytes):
        reduction = reduction.decode()
    if reduction not in _SCATTER_ND_FUNCS:
        raise Unsupported(f"scatter reduction '{reduction}'")
    return reduction


@mapper("ScatterND", since=11)
def scatter_nd(ctx: NodeContext):
    """ScatterND -> ops.tensor_scatter_update/add/mul/max/min."""
    shape = ctx.require_shape(0)
    depth = int(ctx.require_shape(1)[-1])
    indices = _wrapped_indices(ctx, 1, list(shape[:depth]))
    func = _SCATTER_ND_FUNCS[_reduction(ctx)]
    return Call(func, [ctx.operand(0), indices, ctx.operand(2)])


def _scatter_elements(ctx: NodeContext, reduction: str):
    shape = ctx.require_shape(0)
    index_shape = ctx.require_shape(1)
    axis = normalize_axis(int(ctx.attr("axis", 0)), len(shape))
    indices = _wrapped_indices(ctx, 1, dim_expr(shape[axis], 0, axis), int64=True)
    if reduction in ("none", "add"):
        return ops.tensor_scatter_elements(
            ctx.operand(0), indices, ctx.operand(2), axis=Lit(axis), reduction=Lit(reduction)
        )
    # mul/max/min: spell every element's full coordinate out and use the N-D scatter kernels
    grids = np.indices(tuple(index_shape), dtype=np.int64)
    parts = []
    for dim in range(len(shape)):
        if dim == axis:
            parts.append(ops.unsqueeze(indices, dim=Lit(-1)))
        else:
            parts.append(Const(np.ascontiguousarray(grids[dim][..., None])))
    coords = ops.concat(tuple(parts), axis=Lit(-1))
    return Call(_SCATTER_ND_FUNCS[reduction], [ctx.operand(0), coords, ctx.operand(2)])


@mapper("ScatterElements", since=11)
def scatter_elements(ctx: NodeContext):
    """ScatterElements -> ops.tensor_scatter_elements (none/add) or an N-D scatter (mul/max/min)."""
    return _scatter_elements(ctx, _reduction(ctx))


@mapper("Scatter", since=9, until=10)
def scatter(ctx: NodeContext):
    """Scatter (deprecated form of ScatterElements) -> ops.tensor_scatter_elements."""
    return _scatter_elements(ctx, "none")


@mapper("TopK")
def top_k(ctx: NodeContext):
    """TopK -> the first k of a stable ops.sort (ties lower index first, as ONNX says);
    ops.topk when the output need not be sorted; a sort and a gather when k is computed at
    run time."""
    axis = normalize_axis(int(ctx.attr("axis", -1)), ctx.input_rank(0))
    if ctx.opset < 10:
        k = Lit(int(ctx.attr("k")))
    elif ctx.const(1) is not None:
        k = Lit(ctx.const_ints(1, "k")[0])
    else:
        return _top_k_computed(ctx, axis)
    largest = bool(int(ctx.attr("largest", 1))) if ctx.opset >= 11 else True
    sorted_ = bool(int(ctx.attr("sorted", 1))) if ctx.opset >= 11 else True
    dtype = ctx.input_dtype(0)
    if sorted_ and dtype is not None and np.dtype(dtype).name in _SORTABLE:
        return _top_k_sorted(ctx, axis, k.value, largest)
    kwargs = {"dim": Lit(axis)}
    if not largest:
        kwargs["largest"] = Lit(False)
    if not sorted_:
        kwargs["sorted"] = Lit(False)
    call = Temp(ops.topk(Input(0), k, **kwargs), "top")
    values = Item(call, 0) if ctx.has_output(0) else None
    indices = None
    if ctx.has_output(1):
        indices = ops.cast(Item(call, 1), DType("int64"))
    return Outputs([values, indices])


# dtypes MindSpore's Sort takes (TopK of the others keeps ops.topk: ties in no set order)
_SORTABLE = {"bool", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8"}


def _top_k_sorted(ctx: NodeContext, axis: int, k: int, largest: bool):
    """The first k of a stable sort: ONNX puts tied values lower index first, which ops.topk
    does not promise and MindSpore's CPU sort keeps (in both directions)."""
    note = "ONNX puts tied values lower index first: a stable sort (ops.topk may not)"
    ordered = Temp(
        Noted(ops.sort(Input(0), axis=Lit(axis), descending=Lit(largest)), note),
        "ordered",
    )
    first_k = (*([slice(None)] * axis), slice(None, k))
    values = Item(Item(ordered, 0), first_k) if ctx.has_output(0) else None
    indices = None
    if ctx.has_output(1):
        indices = ops.cast(Item(Item(ordered, 1), first_k), DType("int64"))
    return Outputs([values, indices])


def _top_k_computed(ctx: NodeContext, axis: int):
    """TopK whose k is computed at run time (it may be 0, on an empty input): a sort, then
    the first k (ops.topk refuses k = 0)."""
    largest = bool(int(ctx.attr("largest", 1))) if ctx.opset >= 11 else True
    ordered = Temp(ops.sort(Input(0), axis=Lit(axis), descending=Lit(largest)), "ordered")
    first = Temp(ops.arange(Item(Input(1), 0)), "first")
    values = ops.gather(Item(ordered, 0), first, Lit(axis))
    indices = ops.cast(ops.gather(Item(ordered, 1), first, Lit(axis)), DType("int64"))
    return Outputs([values if ctx.has_output(0) else None, indices if ctx.has_output(1) else None])


@mapper("NonZero", since=9)
def non_zero(ctx: NodeContext):
    """NonZero -> ops.nonzero, transposed to ONNX's (rank, count) layout."""
    return ops.transpose(ops.nonzero(Input(0)), Lit((1, 0)))


@mapper("Compress", since=9)
def compress(ctx: NodeContext):
    """Compress -> ops.gather of the positions where the condition holds (flattened without axis)."""
    value = ctx.operand(0)
    axis = ctx.attr("axis")
    if axis is None:
        value = ops.reshape(value, Lit((-1,)))
        axis = 0
    else:
        axis = normalize_axis(int(axis), ctx.input_rank(0))
    condition = ctx.const(1)
    if condition is not None:
        positions = Const(np.flatnonzero(np.asarray(condition).reshape(-1)).astype(np.int64))
    else:
        positions = ops.reshape(ops.nonzero(Input(1)), Lit((-1,)))
    return ops.gather(value, positions, Lit(axis))


@mapper("Unique", since=11)
def unique(ctx: NodeContext):
    """Unique (flattened) -> ops.unique plus comparisons with the input for indices and counts."""
    if ctx.attr("axis") is not None:
        axis = normalize_axis(int(ctx.attr("axis")), ctx.input_rank(0))
        kwargs = {"axis": axis, "sort": bool(int(ctx.attr("sorted", 1)))}
        cell = Temp(Cell("UniqueSlices", kwargs, [Input(0)], role="unique"), "unique")
        return Outputs([Item(cell, i) if ctx.has_output(i) else None for i in range(4)])
    flat = Input(0) if ctx.input_rank(0) == 1 else ops.reshape(Input(0), Lit((-1,)))

    def values():
        if int(ctx.attr("sorted", 1)):
            # MindSpore keeps first-occurrence order; sorting the input first gives sorted values
            return Item(ops.unique(Item(ops.sort(flat), 0)), 0)
        return Item(ops.unique(flat), 0)

    def matches():  # [u, n] table: unique value u equals input element n
        return ops.cast(
            ops.equal(ops.unsqueeze(values(), dim=Lit(1)), ops.unsqueeze(flat, dim=Lit(0))),
            DType("int32"),
        )

    exprs = [
        values() if ctx.has_output(0) else None,
        ops.argmax(matches(), dim=Lit(1)) if ctx.has_output(1) else None,
        ops.argmax(matches(), dim=Lit(0)) if ctx.has_output(2) else None,
        ops.cast(ops.sum(matches(), dim=Lit(1)), DType("int64")) if ctx.has_output(3) else None,
    ]
    return Outputs(exprs)


@mapper("TensorScatter", since=24)
def tensor_scatter(ctx: NodeContext):
    """TensorScatter -> write ``update`` into the cache at per-batch ``write_indices`` along ``axis``:
    every cache position p reads update[p - write_index] where that lies in range (modulo the cache
    length in circular mode) and keeps the cache value elsewhere."""
    shape = ctx.require_shape(0)
    update_shape = ctx.require_shape(1)
    rank = len(shape)
    axis = normalize_axis(int(ctx.attr("axis", -2)), rank)
    if axis == 0:
        raise Unsupported("TensorScatter along the batch axis")
    mode = ctx.attr("mode", "linear")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in ("linear", "circular"):
        raise Unsupported(f"TensorScatter mode {mode!r}")
    length, count = shape[axis], update_shape[axis]
    positions = np.arange(length, dtype=np.int64).reshape(
        [length if a == axis else 1 for a in range(rank)]
    )
    source = Const(positions)
    if ctx.has_input(2):
        start = ops.reshape(Input(2), Lit((-1,) + (1,) * (rank - 1)))
        source = source - start
        if mode == "circular":
            source = (source + Lit(length)) % Lit(length)
    source = Temp(source, "source")
    inside = ops.logical_and(BinOp(">=", source, Lit(0)), BinOp("<", source, Lit(count)))
    index_shape = tuple(update_shape[a] if a != axis else length for a in range(rank))
    index = ops.broadcast_to(ops.clip(source, Lit(0), Lit(count - 1)), Lit(index_shape))
    written = ops.gather_elements(Input(1), Lit(axis), index)
    return ops.where(ops.broadcast_to(inside, Lit(tuple(shape))), written, Input(0))
