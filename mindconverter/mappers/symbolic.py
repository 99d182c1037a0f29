"""Shape arithmetic on dynamic dimensions (``ai.mindconverter::Dims``, made by the
``lift_shape_arithmetic`` pass) -> Python integer expressions over ``ops.shape(x)[axis]``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph.internal_domain import DOMAIN
from .base import BinOp, Call, DType, Input, Item, Neg, NodeContext, Noted, Unsupported
from .registry import mapper
from .syntax import ops

# MindSpore 2.x's GRAPH_MODE folds min(a, b) of sizes known only at run time into -1 (the next
# layer then fails to compile); min((a, b)) over a tuple compiles right
_PICK_NOTE = "min over a tuple: GRAPH_MODE miscompiles min(a, b) of run-time sizes"


@mapper("Dims", domain=DOMAIN)
def dims(ctx: NodeContext):
    """Dims -> a tuple (or one integer) of expressions in the named dimensions of its inputs."""
    value = ctx.graph.symbolic_values.get(ctx.node.outputs[0])
    if value is None:
        raise Unsupported("the symbolic value of this shape computation is not known")
    lookup = {
        symbol: Item(ops.shape(Input(int(source))), int(axis))
        for symbol, source, axis in zip(ctx.attr("symbols"), ctx.attr("sources"), ctx.attr("axes"))
    }
    dtype = DType(np.dtype(ctx.output_dtype(0) or np.int64).name)
    if ctx.attr("scalar", 0):
        scalar = integer_expression(value[0] if isinstance(value, tuple) else value, lookup)
        return ops.scalar_to_tensor(scalar, dtype) if ctx.attr("as_tensor", 0) else scalar
    items = tuple(integer_expression(item, lookup) for item in value)
    if ctx.attr("as_tensor", 0):
        return ops.cast(ops.tuple_to_array(items), dtype)
    return items


def integer_expression(value: Any, lookup: dict[str, Any]) -> Any:
    """A sympy integer expression (sums, products, powers, floor division, min and max) as an
    expression."""
    import sympy

    if isinstance(value, int) or value.is_Integer:
        return int(value)
    if value.is_Symbol:
        return lookup[str(value)]
    if isinstance(value, sympy.floor):
        numerator, denominator = value.args[0].as_numer_denom()
        return BinOp(
            "//", integer_expression(numerator, lookup), integer_expression(denominator, lookup)
        )
    if isinstance(value, (sympy.Min, sympy.Max)):
        name = "min" if isinstance(value, sympy.Min) else "max"
        parts = tuple(integer_expression(arg, lookup) for arg in value.args)
        return Noted(Call(name, [parts]), _PICK_NOTE)
    if isinstance(value, sympy.Pow):
        base, exponent = value.args
        return BinOp("**", integer_expression(base, lookup), int(exponent))
    if isinstance(value, sympy.Add):
        return _sum_expression(value, lookup)
    if isinstance(value, sympy.Mul):
        coefficient, rest = value.as_coeff_Mul()
        if coefficient == -1:  # -x, not -1 * x
            return Neg(integer_expression(rest, lookup))
        terms = [integer_expression(arg, lookup) for arg in sympy.Mul.make_args(value)]
        result = terms[0]
        for term in terms[1:]:
            result = BinOp("*", result, term)
        return result
    raise Unsupported(f"the shape expression {value} has no Python integer form")


def _sum_expression(value: Any, lookup: dict[str, Any]) -> Any:
    """A sum as people write it: what is added first (sizes before the constant), then what
    is subtracted (``seq_len // 5 - 9``, ``512 - seq_len``)."""
    terms = sorted(value.args, key=lambda t: (_negative(t), bool(t.is_number)))
    result = None
    for term in terms:
        negative = _negative(term)
        if result is None:
            result = integer_expression(term, lookup)
        elif negative:
            result = BinOp("-", result, integer_expression(-term, lookup))
        else:
            result = BinOp("+", result, integer_expression(term, lookup))
    return result


def _negative(term: Any) -> bool:
    """Whether a term of a sum has a negative coefficient (``-2*s``, ``-9``)."""
    return bool(term.as_coeff_Mul()[0] < 0)
