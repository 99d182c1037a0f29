"""ConstantOfShape, Range, OneHot, EyeLike and Trilu against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

from tests.helpers import assert_matches, make_model
from tests.mappers.builders import I64, F, model_of


@pytest.mark.parametrize("value", [None, np.array([2.5], F), np.array([7], I64)])
def test_constant_of_shape_runtime(tmp_path, value):
    attrs = {} if value is None else {"value": numpy_helper.from_array(value, "v")}
    out_dtype = F if value is None else value.dtype
    node = helper.make_node("ConstantOfShape", ["s"], ["y"], **attrs)
    model = make_model([node], [("s", I64, (2,))], [("y", out_dtype, None)], opset=11)
    assert_matches(model, tmp_path, feeds={"s": np.array([2, 3], I64)})


@pytest.mark.parametrize("attrs", [{}, {"k": 1}, {"k": -2, "dtype": 7}])
def test_eye_like(tmp_path, attrs):
    out_dtype = I64 if attrs.get("dtype") == 7 else F
    model = model_of("EyeLike", [("x", F, (3, 4))], [("y", out_dtype, None)], opset=9, **attrs)
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("axis, idx_dtype", [(-1, I64), (0, I64), (1, F)])
def test_one_hot(tmp_path, axis, idx_dtype):
    depth = np.array(4, I64 if idx_dtype == I64 else F)  # the type pairs onnxruntime implements
    inits = {"d": depth, "v": np.array([-1.0, 2.5], F)}
    model = model_of(
        "OneHot", [("i", idx_dtype, (2, 3))], [("y", F, None)], inits, opset=11, axis=axis
    )
    feeds = {"i": np.array([[0, 3, -1], [-4, 2, 7]], idx_dtype)}
    assert_matches(model, tmp_path, feeds=feeds)


@pytest.mark.parametrize("dtype, written", [(I64, ", 4, 1, 0, axis"), (F, ", 4, 1.0, 0.0, axis")])
def test_one_hot_values_are_python_numbers_where_they_keep_the_dtype(tmp_path, dtype, written):
    """Switch Transformers' router: ``ops.one_hot(x, 4, 1, 0)`` (int64 and float32 are what
    ops.one_hot gives for Python numbers)."""
    inits = {"d": np.array(4, I64), "v": np.array([0, 1], dtype)}
    model = model_of("OneHot", [("i", I64, (2, 3))], [("y", dtype, None)], inits, opset=11)
    feeds = {"i": np.array([[0, 3, -1], [1, 2, 3]], I64)}
    result = assert_matches(model, tmp_path, feeds=feeds)
    assert written in result.script_path.read_text()


def test_range_int_runtime_limit(tmp_path):
    node = helper.make_node("Range", ["s", "l", "d"], ["y"])
    model = make_model(
        [node],
        [("l", I64, ())],
        [("y", I64, None)],
        {"s": np.array(2, I64), "d": np.array(3, I64)},
        opset=11,
    )
    assert_matches(model, tmp_path, feeds={"l": np.array(14, I64)})


def test_range_runtime(tmp_path):
    node = helper.make_node("Range", ["s", "l", "d"], ["y"])
    model = make_model(
        [node], [("s", F, ()), ("l", F, ()), ("d", F, ())], [("y", F, None)], opset=11
    )
    feeds = {"s": np.array(1.0, F), "l": np.array(6.5, F), "d": np.array(1.5, F)}
    assert_matches(model, tmp_path, feeds=feeds)


@pytest.mark.parametrize("upper, k", [(1, None), (0, None), (1, 1), (0, -1), (1, -2)])
def test_trilu(tmp_path, upper, k):
    inits = {} if k is None else {"k": np.array(k, I64)}
    model = model_of("Trilu", [("x", F, (2, 4, 5))], [("y", F, None)], inits, opset=14, upper=upper)
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("spelling", ["ConstantOfShape", "Expand"])
def test_a_fill_shaped_like_a_dynamic_tensor_is_full_like(tmp_path, spelling):
    """``torch.full_like(x, 7)``: TorchScript writes ConstantOfShape(Shape(x)), dynamo
    Expand(7, Shape(x)). MindSpore cannot fill a shape held in a tensor, so the script says
    ``ops.full_like(x, 7, ...)`` and runs at any size."""
    seven = numpy_helper.from_array(np.array([7], I64), "v")
    nodes = [helper.make_node("Shape", ["x"], ["s"])]
    if spelling == "ConstantOfShape":
        nodes.append(helper.make_node("ConstantOfShape", ["s"], ["f"], value=seven))
    else:
        nodes += [
            helper.make_node("Constant", [], ["seven"], value=seven),
            helper.make_node("Expand", ["seven", "s"], ["f"]),
        ]
    nodes.append(helper.make_node("Min", ["f", "x"], ["y"]))
    model = make_model(nodes, [("x", I64, ("n", "m"))], [("y", I64, None)], opset=17)
    values = np.random.default_rng(0).integers(0, 14, (3, 5)).astype(I64)
    result = assert_matches(model, tmp_path, feeds={"x": values}, shape=["3,5"])
    assert "ops.full_like(x, 7, dtype=ms.int64)" in result.script_path.read_text()
    other = np.random.default_rng(1).integers(0, 14, (2, 9)).astype(I64)
    assert_matches(model, tmp_path / "other", feeds={"x": other}, shape=["2,9"])
