"""Add, Sub, Mul, Div and Sum against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model, single_op_model
from tests.mappers.builders import randn


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
def test_binary_broadcast(tmp_path, op):
    assert_matches(single_op_model(op, {"a": (2, 3, 4), "b": (3, 1)}), tmp_path / "t")
    model = single_op_model(op, {"a": (2, 3, 4)}, initializers={"c": np.array(1.5, np.float32)})
    assert_matches(model, tmp_path / "scalar")
    model = single_op_model(op, {"a": (2, 3, 4)}, initializers={"c": randn(4) + 3})
    assert_matches(model, tmp_path / "vector")


def test_integer_div_truncates(tmp_path):
    node = helper.make_node("Div", ["a", "b"], ["y"])
    model = make_model(
        [node], [("a", np.int64, (6,)), ("b", np.int64, (6,))], [("y", np.int64, None)]
    )
    feeds = {"a": np.array([7, -7, 7, -7, 0, 9]), "b": np.array([2, 2, -2, -2, 3, 4])}
    assert_matches(model, tmp_path, feeds=feeds)


def test_sum_variadic(tmp_path):
    assert_matches(single_op_model("Sum", {"a": (2, 3), "b": (2, 3), "c": (3,)}), tmp_path)
