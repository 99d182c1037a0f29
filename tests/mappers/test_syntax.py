"""The call syntax mappers write in (mappers/syntax.py and the operators on ``Expr``)."""

import numpy as np
import pytest

from mindconverter.mappers import BinOp, Call, Input, Item, Lit, Neg, ms, ops
from mindconverter.mappers.base import Method


def test_namespace_calls_build_call_objects():
    x = Input(0)
    assert ops.softmax(x, Lit(-1)) == Call("ops.softmax", [x, Lit(-1)])
    assert ops.clamp(x, min=Lit(0.0), max=Lit(6.0)) == Call(
        "ops.clamp", [x], {"min": Lit(0.0), "max": Lit(6.0)}
    )
    assert ms.Tensor.view(x, 1) == Call("ms.Tensor.view", [x, 1])
    rank = 2
    assert ops[f"conv{rank}d"](x) == Call("ops.conv2d", [x])


def test_each_call_gets_its_own_argument_list():
    first, second = ops.relu(Input(0)), ops.relu(Input(0))
    first.args.append(Lit(1))
    assert second.args == [Input(0)]


def test_arithmetic_builds_binops_in_source_order():
    x, y = Input(0), Input(1)
    assert x * 0.5 + y == BinOp("+", BinOp("*", x, 0.5), y)
    assert 1.0 - x == BinOp("-", 1.0, x)
    assert 2**x == BinOp("**", 2, x)
    assert x @ y == BinOp("@", x, y)
    assert (x & y) | x == BinOp("|", BinOp("&", x, y), x)
    assert -x == Neg(x)


def test_numpy_numbers_on_the_left_defer_to_the_expression():
    x = Input(0)
    assert np.float32(2.0) * x == BinOp("*", np.float32(2.0), x)
    combined = np.arange(3) + x  # not an array of three BinOps
    assert isinstance(combined, BinOp) and combined.op == "+" and combined.right == x
    assert np.array_equal(combined.left, np.arange(3))


def test_subscripts_and_methods():
    x = Input(0)
    assert x[:, -1] == Item(x, (slice(None), -1))
    assert x.method("swapaxes", -1, -2) == Method(x, "swapaxes", (-1, -2))


def test_expressions_are_not_iterable():
    with pytest.raises(TypeError):
        list(Input(0))
    with pytest.raises(TypeError):
        iter(ops.relu(Input(0)))


def test_private_names_are_not_functions():
    with pytest.raises(AttributeError):
        ops.__wrapped__  # noqa: B018
    assert not hasattr(ops, "_private")
