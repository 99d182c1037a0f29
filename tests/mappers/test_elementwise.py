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


def _same_as_onnxruntime(model, tmp_path, feeds):
    from tests.helpers import convert_and_run

    result, got, want = convert_and_run(model, tmp_path, feeds=feeds)
    assert result.unconverted == []
    for actual, expected in zip(got, want):
        assert (actual.shape, actual.dtype) == (expected.shape, expected.dtype)
        np.testing.assert_allclose(actual, expected, rtol=1e-6)


@pytest.mark.parametrize(
    "op, x_shape, weight",
    [
        ("Add", (), np.full((1, 1, 1), 0.5, np.float32)),  # its axes make the result 3-D
        ("Greater", (), np.array([0.5], np.float32)),
        ("Mul", (1,), np.full((1, 1), 2.0, np.float32)),
        ("Mul", (2, 3), np.array([[2.0]], np.float32)),  # no axis added: written as a number
    ],
)
def test_a_size_one_weight_keeps_its_axes(tmp_path, op, x_shape, weight):
    out_dtype = np.bool_ if op == "Greater" else np.float32
    model = make_model(
        [helper.make_node(op, ["x", "w"], ["y"])],
        [("x", np.float32, x_shape)],
        [("y", out_dtype, None)],
        {"w": weight},
    )
    _same_as_onnxruntime(model, tmp_path, {"x": randn(*x_shape)})


def test_an_output_of_scalar_weights_alone_is_a_float32_tensor(tmp_path):
    """Two numbers multiplied in the script gave a Python float (float64), not a tensor."""
    model = make_model(
        [helper.make_node("Mul", ["w", "w"], ["y"]), helper.make_node("Relu", ["x"], ["z"])],
        [("x", np.float32, (2,))],
        [("y", np.float32, None), ("z", np.float32, None)],
        {"w": np.array(0.75, np.float32)},
    )
    _same_as_onnxruntime(model, tmp_path, {"x": randn(2)})
