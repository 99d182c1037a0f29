"""More tensor operators: Expand, Tile, OneHot, Range, ConstantOfShape, Size, Trilu, DepthToSpace,
SpaceToDepth, Einsum, ReverseSequence, EyeLike."""

from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

from ._common import scalar_or_const
from .base import BinOp, Call, Const, DType, Input, Lit, NodeContext, Unsupported, normalize_axis
from .registry import mapper


@mapper("Expand", since=8)
def expand(ctx: NodeContext):
    """Expand -> ops.broadcast_to the (bidirectionally) broadcast shape."""
    in_shape = ctx.require_shape(0)
    target = ctx.const_ints(1, "the Expand shape")
    out = tuple(int(d) for d in np.broadcast_shapes(tuple(in_shape), tuple(target)))
    if out == tuple(in_shape):
        return Input(0)
    return Call("ops.broadcast_to", [ctx.operand(0), Lit(out)])


@mapper("Tile", since=6)
def tile(ctx: NodeContext):
    """Tile -> ops.tile with constant repeats."""
    repeats = tuple(ctx.const_ints(1, "the Tile repeats"))
    if all(r == 1 for r in repeats):
        return Input(0)
    return Call("ops.tile", [ctx.operand(0), Lit(repeats)])


@mapper("OneHot", since=9)
def one_hot(ctx: NodeContext):
    """OneHot -> ops.one_hot (negative indices count from the end, float indices are truncated)."""
    depth_value = np.asarray(ctx.require_const(1, "the OneHot depth")).reshape(-1)
    depth = int(depth_value[0])
    rank = ctx.input_rank(0)
    axis = normalize_axis(int(ctx.attr("axis", -1)), rank + 1)
    indices = Input(0)
    if ctx.input_dtype(0) != np.int64:
        indices = Call("ops.cast", [indices, DType("int64")])
    # ONNX: indices in [-depth, depth) select a class, anything else gives an all-off row
    indices = Call(
        "ops.where", [BinOp("<", indices, Lit(0)), BinOp("+", indices, Lit(depth)), indices]
    )
    values = ctx.const(2)
    if values is not None:
        values = np.asarray(values).reshape(-1)
        off, on = (Const(np.asarray(v, dtype=values.dtype)) for v in values[:2])
    else:
        off, on = (
            Call("ops.gather", [Input(2), Lit(0), Lit(0)]),
            Call("ops.gather", [Input(2), Lit(1), Lit(0)]),
        )
    kwargs = {"axis": Lit(axis if axis != rank else -1)}
    return Call("ops.one_hot", [indices, Lit(depth), on, off], kwargs)


@mapper("Range", since=11)
def range_(ctx: NodeContext):
    """Range -> ops.arange(start, limit, delta) (cast back to int32, which ops.arange may widen)."""
    args = []
    for index in range(3):
        value = ctx.const(index)
        args.append(scalar_or_const(value) if value is not None else Input(index))
    result = Call("ops.arange", args)
    if ctx.input_dtype(0) == np.int32:
        result = Call("ops.cast", [result, DType("int32")])
    return result


@mapper("ConstantOfShape", since=9)
def constant_of_shape(ctx: NodeContext):
    """ConstantOfShape (a run-time shape) -> ops.full(shape, value, dtype)."""
    value = ctx.attr("value")
    array = (
        numpy_helper.to_array(value)
        if value is not None and not isinstance(value, np.ndarray)
        else value
    )
    array = np.zeros(1, np.float32) if array is None else np.asarray(array).reshape(-1)
    item = array[0].item()
    if array.dtype.kind == "b":
        item = bool(item)
    out_shape = ctx.output_shape(0)
    if out_shape is not None and all(isinstance(d, (int, np.integer)) for d in out_shape):
        return Call(
            "ops.full",
            [Lit(tuple(int(d) for d in out_shape)), Lit(item)],
            {"dtype": DType(array.dtype.name)},
        )
    return Call("ops.fill", [DType(array.dtype.name), Input(0), Lit(item)])


@mapper("Size")
def size(ctx: NodeContext):
    """Size of a statically shaped value -> an int64 constant."""
    shape = ctx.require_shape(0)
    return Const(np.array(int(np.prod(shape, dtype=np.int64)), np.int64))


@mapper("Trilu", since=14)
def trilu(ctx: NodeContext):
    """Trilu -> ops.triu / ops.tril with the diagonal offset k."""
    k = ctx.const_ints(1, "the diagonal offset k")[0] if ctx.has_input(1) else 0
    func = "ops.triu" if int(ctx.attr("upper", 1)) else "ops.tril"
    kwargs = {"diagonal": Lit(k)} if k else {}
    return Call(func, [ctx.operand(0)], kwargs)


def _reorder(value, first: tuple[int, ...], perm: tuple[int, ...], final: tuple[int, ...]):
    return Call(
        "ops.reshape",
        [Call("ops.transpose", [Call("ops.reshape", [value, Lit(first)]), Lit(perm)]), Lit(final)],
    )


@mapper("DepthToSpace")
def depth_to_space(ctx: NodeContext):
    """DepthToSpace -> ops.pixel_shuffle (CRD) or reshape/transpose/reshape (DCR)."""
    n, c, h, w = ctx.require_shape(0)
    bs = int(ctx.attr("blocksize"))
    mode = ctx.attr("mode", "DCR") if ctx.opset >= 11 else "DCR"
    if isinstance(mode, bytes):
        mode = mode.decode()
    out_c = c // (bs * bs)
    if mode == "CRD":
        return Call("ops.pixel_shuffle", [Input(0), Lit(bs)])
    return _reorder(
        Input(0), (n, bs, bs, out_c, h, w), (0, 3, 4, 1, 5, 2), (n, out_c, h * bs, w * bs)
    )


@mapper("SpaceToDepth")
def space_to_depth(ctx: NodeContext):
    """SpaceToDepth -> reshape/transpose/reshape (blocks become the leading channel factor in DCR
    mode, the trailing one in CRD mode, opset 28)."""
    n, c, h, w = ctx.require_shape(0)
    bs = int(ctx.attr("blocksize"))
    mode = ctx.attr("mode", "DCR")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    perm = (0, 1, 3, 5, 2, 4) if mode == "CRD" else (0, 3, 5, 1, 2, 4)
    return _reorder(
        Input(0), (n, c, h // bs, bs, w // bs, bs), perm, (n, c * bs * bs, h // bs, w // bs)
    )


@mapper("ReverseSequence", since=10)
def reverse_sequence(ctx: NodeContext):
    """ReverseSequence -> ops.reverse_sequence."""
    lengths = ctx.operand(1)
    return Call(
        "ops.reverse_sequence",
        [Input(0), lengths],
        {
            "seq_dim": Lit(int(ctx.attr("time_axis", 0))),
            "batch_dim": Lit(int(ctx.attr("batch_axis", 1))),
        },
    )


@mapper("EyeLike", since=9)
def eye_like(ctx: NodeContext):
    """EyeLike -> ops.eye (k == 0) or the constant matrix with its diagonal shifted."""
    n, m = ctx.require_shape(0)
    k = int(ctx.attr("k", 0))
    dtype_attr = ctx.attr("dtype")
    dtype = (
        np.dtype(helper.tensor_dtype_to_np_dtype(int(dtype_attr)))
        if dtype_attr is not None
        else np.dtype(ctx.input_dtype(0) or np.float32)
    )
    if k == 0:
        return Call("ops.eye", [Lit(int(n)), Lit(int(m)), DType(dtype.name)])
    return Const(np.eye(int(n), int(m), k, dtype=dtype))


# --- Einsum -------------------------------------------------------------------------------


def _parse_einsum(equation: str, ranks: list[int]):
    """Terms per operand and the output term, with '...' replaced by capital letters."""
    equation = equation.replace(" ", "")
    if "->" in equation:
        lhs, out = equation.split("->")
    else:
        lhs, out = equation, None
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise Unsupported(f"Einsum equation '{equation}' does not match {len(ranks)} operands")
    ell_rank = 0
    for term, rank in zip(terms, ranks):
        if "..." in term:
            ell_rank = max(ell_rank, rank - (len(term) - 3))
    ell = "".join(chr(ord("A") + i) for i in range(ell_rank))
    expanded = []
    for term, rank in zip(terms, ranks):
        if "..." in term:
            own = rank - (len(term) - 3)
            term = term.replace("...", ell[ell_rank - own :])
        if len(term) != rank:
            raise Unsupported(f"Einsum term '{term}' does not match rank {rank}")
        expanded.append(term)
    if out is None:
        letters = "".join(expanded)
        out = ell + "".join(
            sorted(ch for ch in set(letters) if letters.count(ch) == 1 and ch.islower())
        )
    else:
        out = out.replace("...", ell)
    return expanded, out


def _einsum_sum_out(expr, term: str, sizes: dict[str, int], keep: set[str]):
    """Sum away the letters of ``term`` not in ``keep``."""
    drop = tuple(i for i, ch in enumerate(term) if ch not in keep)
    if not drop:
        return expr, term
    expr = Call("ops.sum", [expr], {"dim": Lit(drop[0] if len(drop) == 1 else drop)})
    return expr, "".join(ch for ch in term if ch in keep)


def _einsum_permute(expr, term: str, order: str):
    if term == order:
        return expr
    return Call("ops.transpose", [expr, Lit(tuple(term.index(ch) for ch in order))])


def _einsum_pair(a, ta: str, b, tb: str, keep: set[str], sizes: dict[str, int]):
    """Contract two operands with one batched matmul; returns (expr, term)."""
    batch = [ch for ch in ta if ch in tb and ch in keep]
    contract = [ch for ch in ta if ch in tb and ch not in keep]
    left = [ch for ch in ta if ch not in tb]
    right = [ch for ch in tb if ch not in ta]

    def prod(chars):
        return int(np.prod([sizes[ch] for ch in chars], dtype=np.int64))

    a = _einsum_permute(a, ta, "".join(batch + left + contract))
    b = _einsum_permute(b, tb, "".join(batch + contract + right))
    bsz = tuple(sizes[ch] for ch in batch)
    if len(left) != 1 or len(contract) != 1:
        a = Call("ops.reshape", [a, Lit(bsz + (prod(left), prod(contract)))])
    if len(right) != 1 or len(contract) != 1:
        b = Call("ops.reshape", [b, Lit(bsz + (prod(contract), prod(right)))])
    expr = Call("ops.matmul", [a, b])
    term = "".join(batch + left + right)
    if len(left) != 1 or len(right) != 1:
        expr = Call("ops.reshape", [expr, Lit(tuple(sizes[ch] for ch in term))])
    return expr, term


@mapper("Einsum", since=12)
def einsum(ctx: NodeContext):
    """Einsum -> transposes, reshapes, sums and batched ops.matmul (MindSpore's CPU has no Einsum)."""
    equation = ctx.attr("equation")
    if isinstance(equation, bytes):
        equation = equation.decode()
    shapes = [ctx.require_shape(i) for i in range(ctx.num_inputs)]
    terms, out = _parse_einsum(equation, [len(s) for s in shapes])
    sizes: dict[str, int] = {}
    for term, shape in zip(terms, shapes):
        if len(set(term)) != len(term):
            raise Unsupported(f"Einsum with a repeated index in one operand ('{term}', a diagonal)")
        for ch, dim in zip(term, shape):
            if sizes.setdefault(ch, int(dim)) != int(dim):
                raise Unsupported(f"Einsum index '{ch}' with broadcast sizes {sizes[ch]} and {dim}")
    exprs = [ctx.operand(i) for i in range(ctx.num_inputs)]
    # letters only one operand uses and the output does not need are summed first
    current, term = None, ""
    for index, (expr, t) in enumerate(zip(exprs, terms)):
        later = set(out).union(*terms[index + 1 :]) if index + 1 < len(terms) else set(out)
        needed = later | set(term)
        expr, t = _einsum_sum_out(expr, t, sizes, needed)
        if current is None:
            current, term = expr, t
            continue
        keep = set(out).union(*terms[index + 1 :]) if index + 1 < len(terms) else set(out)
        current, term = _einsum_sum_out(current, term, sizes, keep | set(t))
        current, term = _einsum_pair(current, term, expr, t, keep, sizes)
    current, term = _einsum_sum_out(current, term, sizes, set(out))
    return _einsum_permute(current, term, out)
