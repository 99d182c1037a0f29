"""Symbolic shape values as Python integer expressions."""

from __future__ import annotations

import pytest
import sympy

from mindconverter.mappers.base import BinOp, Call, Neg, Noted, Unsupported
from mindconverter.mappers.symbolic import integer_expression

SEQ, BATCH = sympy.Symbol("seq", integer=True, positive=True), sympy.Symbol("batch")


def test_symbols_integers_and_arithmetic():
    lookup = {"seq": "T", "batch": "B"}
    assert integer_expression(sympy.Integer(4), lookup) == 4
    assert integer_expression(SEQ, lookup) == "T"
    product = integer_expression(2 * SEQ * BATCH, lookup)
    assert isinstance(product, BinOp) and product.op == "*"
    halved = integer_expression(sympy.floor(SEQ / 2), lookup)
    assert halved == BinOp("//", "T", 2)
    assert integer_expression(SEQ**2, lookup) == BinOp("**", "T", 2)


def test_min_and_max_are_python_calls_over_a_tuple():
    clamped = integer_expression(sympy.Min(SEQ + 512, 1023), {"seq": "T"})
    assert isinstance(clamped, Noted) and "GRAPH_MODE" in clamped.note
    assert isinstance(clamped.expr, Call) and clamped.expr.func == "min"
    (parts,) = clamped.expr.args
    assert sorted(map(str, parts)) == sorted(["1023", str(BinOp("+", "T", 512))])
    assert integer_expression(sympy.Max(SEQ, 3), {"seq": "T"}).expr.func == "max"


def test_expressions_without_a_python_form_are_unsupported():
    with pytest.raises(Unsupported):
        integer_expression(sympy.ceiling(SEQ / 3), {"seq": "T"})


def test_sums_read_as_written_by_hand():
    lookup = {"seq": "T"}
    assert integer_expression(512 - SEQ, lookup) == BinOp("-", 512, "T")
    assert integer_expression(sympy.floor(SEQ / 5) - 9, lookup) == BinOp(
        "-", BinOp("//", "T", 5), 9
    )
    assert integer_expression(-SEQ, lookup) == Neg("T")
