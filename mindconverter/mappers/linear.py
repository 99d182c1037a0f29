"""Linear algebra: Gemm and MatMul (as ``nn.Dense`` where the weight is constant), Einsum and Det."""

from __future__ import annotations

import numpy as np

from ..graph.weight_steps import Transpose
from .base import (
    BinOp,
    Cell,
    Input,
    Lit,
    NodeContext,
    Unsupported,
)
from .common import bias_removed, dim_expr, zero_bias
from .registry import mapper
from .syntax import ops


def _dense(ctx: NodeContext, x, weight_index: int, weight_out_in: np.ndarray, transform, bias=None):
    dtype = ctx.input_dtype(0)
    for array in [weight_out_in] + ([bias.array] if bias is not None else []):
        floating = array.dtype.kind == "f" or array.dtype.name == "bfloat16"
        if not floating or (dtype is not None and array.dtype != dtype):
            # ONNX gives them one type; the layer could not load such a weight
            raise Unsupported(f"a {array.dtype} weight for a {dtype} input")
    out_features, in_features = (int(d) for d in weight_out_in.shape)
    weights = {"weight": ctx.weight(weight_index, weight_out_in, transform)}
    kwargs = {"in_channels": in_features, "out_channels": out_features}
    if bias is None:
        kwargs["has_bias"] = False
    else:
        weights["bias"] = bias
    return Cell("nn.Dense", kwargs=kwargs, args=[x], weights=weights, role="fc")


@mapper("Gemm")
def gemm(ctx: NodeContext):
    """Gemm -> nn.Dense for a constant B (with C as bias when it fits), else ops.matmul. A source
    weight stored as [in, out] (GPT-2's Conv1D) is held transposed, the transform recorded."""
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    trans_a, trans_b = int(ctx.attr("transA", 0)), int(ctx.attr("transB", 0))
    a = ops.transpose(Input(0), Lit((1, 0))) if trans_a else Input(0)
    b_value = ctx.const(1)
    c_value = ctx.const(2) if ctx.has_input(2) else None
    bias = None
    if b_value is not None:
        weight = b_value if trans_b else b_value.T
        out_features = weight.shape[0]
        bias_fits = (
            c_value is not None
            and alpha == 1.0
            and beta == 1.0
            and c_value.size == out_features
            and c_value.shape[-1:] == (out_features,)
        )
        if bias_fits:
            bias = ctx.weight(
                2,
                c_value.reshape(out_features),
                "" if c_value.ndim == 1 else f"reshape {list(c_value.shape)} to [{out_features}]",
            )
        elif c_value is None and bias_removed(ctx):  # zero at export, not after new weights
            bias = zero_bias(ctx, out_features, weight.dtype)
        product = _dense(ctx, a, 1, weight, () if trans_b else (Transpose((1, 0)),), bias)
    else:
        b = ops.transpose(Input(1), Lit((1, 0))) if trans_b else Input(1)
        product = ops.matmul(a, b)
    if alpha != 1.0:
        product = product * Lit(alpha)
    if ctx.has_input(2) and bias is None:
        c = ctx.operand(2)
        product = BinOp("+", product, c if beta == 1.0 else c * Lit(beta))
    return product


@mapper("MatMul")
def matmul(ctx: NodeContext):
    """MatMul -> nn.Dense (no bias) for a constant 2-D right operand, else ops.matmul."""
    b_value = ctx.const(1)
    a_shape = ctx.input_shape(0)
    floats = b_value is not None and b_value.dtype.kind == "f"
    if (
        floats
        and b_value.ndim == 2
        and a_shape is not None
        and len(a_shape) >= 2
        and not ctx.is_const(0)
    ):
        return _dense(ctx, Input(0), 1, b_value.T, (Transpose((1, 0)),))
    return ops.matmul(ctx.operand(0), ctx.operand(1))


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
    expr = ops.sum(expr, dim=Lit(drop[0] if len(drop) == 1 else drop))
    return expr, "".join(ch for ch in term if ch in keep)


def _einsum_permute(expr, term: str, order: str):
    if term == order:
        return expr
    return ops.transpose(expr, Lit(tuple(term.index(ch) for ch in order)))


def _einsum_pair(a, ta: str, b, tb: str, keep: set[str], sizes: dict[str, int], order: str = ""):
    """Contract two operands with one batched matmul; returns (expr, term). ``order``: the
    letters as the result should come (the equation's output), when known."""
    batch = [ch for ch in ta if ch in tb and ch in keep]
    contract = [ch for ch in ta if ch in tb and ch not in keep]
    left = [ch for ch in ta if ch not in tb]
    right = [ch for ch in tb if ch not in ta]
    broadcast = _broadcast_layout(batch, contract, left, right, order)
    if broadcast is not None:  # one matmul broadcasting ``a``'s leading letters, no reshape
        lead, rows = broadcast
        a = _einsum_permute(a, ta, "".join(lead + batch + rows + contract))
        b = _einsum_permute(b, tb, "".join(batch + contract + right))
        a = a if rows else ops.unsqueeze(a, Lit(-2))
        b = b if right else ops.unsqueeze(b, Lit(-1))
        expr = ops.matmul(a, b)
        added = (() if rows else (-2,)) + (() if right else (-1,))
        if added:
            expr = ops.squeeze(expr, Lit(added[0] if len(added) == 1 else added))
        return expr, "".join(lead + batch + rows + right)

    def prod(chars):
        return _einsum_product([sizes[ch] for ch in chars])

    a = _einsum_permute(a, ta, "".join(batch + left + contract))
    b = _einsum_permute(b, tb, "".join(batch + contract + right))
    bsz = tuple(sizes[ch] for ch in batch)
    if len(left) != 1 or len(contract) != 1:
        a = ops.reshape(a, _einsum_shape(bsz + (prod(left), prod(contract))))
    if len(right) != 1 or len(contract) != 1:
        b = ops.reshape(b, _einsum_shape(bsz + (prod(contract), prod(right))))
    expr = ops.matmul(a, b)
    term = "".join(batch + left + right)
    if len(left) != 1 or len(right) != 1:
        expr = ops.reshape(expr, _einsum_shape(tuple(sizes[ch] for ch in term)))
    return expr, term


def _broadcast_layout(
    batch: list[str], contract: list[str], left: list[str], right: list[str], order: str
) -> tuple[list[str], list[str]] | None:
    """How one broadcasting matmul gives the result in ``order`` (relative position scores,
    ``"bhld,lrd->bhlr"``: ``a``'s ``b, h`` lead, ``l`` batches, a row axis of one):
    ``(lead, rows)``, ``a`` laid out as ``lead + batch + rows + contract`` and ``b`` as
    ``batch + contract + right``; None when the letters do not fall so (several contracted or
    right letters would need a reshape)."""
    if len(contract) != 1 or len(right) > 1 or len(left) < 2:
        return None
    target = [ch for ch in order if ch in {*batch, *left, *right}]
    if (
        len(target) != len(batch) + len(left) + len(right)
        or target[len(target) - len(right) :] != right
    ):
        return None
    target = target[: len(target) - len(right)]
    rows = target[-1:] if target and target[-1] in left else []
    target = target[: len(target) - len(rows)]
    lead = target[: len(target) - len(batch)]
    if sorted(target[len(lead) :]) != sorted(batch) or sorted(lead + rows) != sorted(left):
        return None
    return lead, rows


def _einsum_product(values: list):
    """The product of sizes: a number when all are known, else an expression (``b * 4``)."""
    known = int(np.prod([v for v in values if isinstance(v, int)], dtype=np.int64))
    dynamic = [v for v in values if not isinstance(v, int)]
    if not dynamic:
        return known
    expr = dynamic[0]
    for value in dynamic[1:]:
        expr = BinOp("*", expr, value)
    return expr if known == 1 else expr * Lit(known)


def _einsum_shape(values: tuple):
    """A reshape target: a literal when every size is known, else a tuple of expressions."""
    if all(isinstance(v, int) for v in values):
        return Lit(tuple(values))
    return tuple(Lit(v) if isinstance(v, int) else v for v in values)


def _einsum_diagonals(expr, term: str):
    """An operand whose term repeats a letter ('ii', 'bjj') -> its diagonal over each repeated
    pair (ops.diagonal puts the diagonal axis last)."""
    while len(set(term)) != len(term):
        letter = next(ch for ch in term if term.count(ch) > 1)
        first = term.index(letter)
        second = term.index(letter, first + 1)
        expr = ops.diagonal(expr, dim1=Lit(first), dim2=Lit(second))
        term = term[:first] + term[first + 1 : second] + term[second + 1 :] + letter
    return expr, term


@mapper("Einsum", since=12)
def einsum(ctx: NodeContext):
    """Einsum -> transposes, reshapes, sums and batched ops.matmul (MindSpore's CPU has no Einsum)."""
    equation = ctx.attr("equation")
    if isinstance(equation, bytes):
        equation = equation.decode()
    shapes = [ctx.require_shape(i) for i in range(ctx.num_inputs)]
    terms, out = _parse_einsum(equation, [len(s) for s in shapes])
    sizes: dict[str, object] = {}  # each letter's size: a number, or read at run time
    for index, (term, shape) in enumerate(zip(terms, shapes)):
        for axis, (ch, dim) in enumerate(zip(term, shape)):
            size = dim_expr(dim, index, axis)
            known = sizes.setdefault(ch, size)
            if isinstance(known, int) and isinstance(size, int) and known != size:
                raise Unsupported(f"Einsum index '{ch}' with broadcast sizes {known} and {dim}")
            if isinstance(known, int) != isinstance(size, int):
                if 1 in (known, size):  # a size-1 axis broadcast against a dynamic one
                    raise Unsupported(f"Einsum index '{ch}' broadcast against a dynamic size")
                if not isinstance(size, int):
                    continue
                sizes[ch] = size  # the known size of the two
    exprs = [ctx.operand(i) for i in range(ctx.num_inputs)]
    for index, term in enumerate(terms):
        exprs[index], terms[index] = _einsum_diagonals(exprs[index], term)
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
        last = index + 1 == len(terms)
        current, term = _einsum_pair(current, term, expr, t, keep, sizes, out if last else "")
    current, term = _einsum_sum_out(current, term, sizes, set(out))
    return _einsum_permute(current, term, out)


@mapper("Det", since=11)
def det(ctx: NodeContext):
    """Det -> ops.det over the last two axes."""
    return ops.det(Input(0))
