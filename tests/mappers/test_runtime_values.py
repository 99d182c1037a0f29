"""Sizes, repeats and bounds read from tensors at run time convert for Tile, Split, ConstantOfShape,
Slice (negative steps), CenterCropPad and AffineGrid; each is compared with onnxruntime in PyNative
and GRAPH mode, at several values of the run-time input."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from tests.helpers import assert_runs_like_onnxruntime, convert_fully, make_model


def _convert(tmp_path, model, shape=None):
    return convert_fully(model, tmp_path, shape=shape)


def _check(model, result, feeds, graph_mode):
    assert_runs_like_onnxruntime(
        model, result, feeds, graph_mode, rtol=1e-5, atol=1e-6, same_dtype=True
    )


@pytest.mark.parametrize("graph_mode", [False, True])
def test_tile_with_repeats_from_an_input(tmp_path, graph_mode):
    model = make_model(
        [helper.make_node("Tile", ["x", "repeats"], ["y"])],
        [("x", np.float32, [2, 3]), ("repeats", np.int64, [2])],
        [("y", np.float32, None)],
        opset=13,
    )
    result = _convert(tmp_path, model)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for repeats in ([1, 1], [3, 2], [2, 1]):
        _check(model, result, {"x": x, "repeats": np.array(repeats, np.int64)}, graph_mode)


@pytest.mark.parametrize("graph_mode", [False, True])
def test_split_of_an_axis_sized_at_run_time(tmp_path, graph_mode):
    model = make_model(
        [helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)],
        [("x", np.float32, [2, "n"])],
        [("a", np.float32, None), ("b", np.float32, None), ("c", np.float32, None)],
        opset=18,
    )
    result = _convert(tmp_path, model, shape=["2,9"])
    for n in (9, 7, 4):
        x = np.arange(2 * n, dtype=np.float32).reshape(2, n)
        _check(model, result, {"x": x}, graph_mode)


@pytest.mark.parametrize("graph_mode", [False, True])
def test_constant_of_shape_keeps_fill_values_wider_than_32_bits(tmp_path, graph_mode):
    big = helper.make_tensor("value", onnx.TensorProto.INT64, [1], [2**40 + 3])
    fine = helper.make_tensor("value", onnx.TensorProto.DOUBLE, [1], [0.1])
    model = make_model(
        [
            helper.make_node("Shape", ["x"], ["shape"]),
            helper.make_node("ConstantOfShape", ["shape"], ["wide"], value=big),
            helper.make_node("ConstantOfShape", ["shape"], ["precise"], value=fine),
        ],
        [("x", np.float32, ["n", 3])],
        [("wide", np.int64, None), ("precise", np.float64, None)],
        opset=13,
    )
    result = _convert(tmp_path, model, shape=["2,3"])
    for n in (2, 5):
        _check(model, result, {"x": np.zeros((n, 3), np.float32)}, graph_mode)


@pytest.mark.parametrize("graph_mode", [False, True])
def test_slice_backwards_with_bounds_from_an_input(tmp_path, graph_mode):
    model = make_model(
        [helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"])],
        [("x", np.float32, [6, 5]), ("starts", np.int64, [1]), ("ends", np.int64, [1])],
        [("y", np.float32, None)],
        {"axes": np.array([0], np.int64), "steps": np.array([-2], np.int64)},
        opset=13,
    )
    result = _convert(tmp_path, model)
    x = np.arange(30, dtype=np.float32).reshape(6, 5)
    for start, end in ((5, 0), (-1, -100), (100, 2), (1, 4), (0, -7)):
        feeds = {"x": x, "starts": np.array([start], np.int64), "ends": np.array([end], np.int64)}
        _check(model, result, feeds, graph_mode)


@pytest.mark.parametrize("graph_mode", [False, True])
def test_center_crop_pad_to_a_target_from_an_input(tmp_path, graph_mode):
    model = make_model(
        [helper.make_node("CenterCropPad", ["x", "target"], ["y"], axes=[0, 1])],
        [("x", np.float32, [5, 4, 2]), ("target", np.int64, [2])],
        [("y", np.float32, None)],
        opset=18,
    )
    result = _convert(tmp_path, model)
    x = np.arange(40, dtype=np.float32).reshape(5, 4, 2) + 1
    for target in ([3, 4], [8, 7], [2, 1], [5, 6]):
        _check(model, result, {"x": x, "target": np.array(target, np.int64)}, graph_mode)


@pytest.mark.parametrize("align_corners", [0, 1])
def test_affine_grid_of_a_size_from_an_input(tmp_path, align_corners):
    model = make_model(
        [helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=align_corners)],
        [("theta", np.float32, [2, 2, 3]), ("size", np.int64, [4])],
        [("grid", np.float32, None)],
        opset=20,
    )
    result = _convert(tmp_path, model)
    theta = np.random.default_rng(0).standard_normal((2, 2, 3)).astype(np.float32)
    for size in ([2, 3, 4, 5], [2, 1, 2, 3], [2, 4, 6, 2]):
        _check(model, result, {"theta": theta, "size": np.array(size, np.int64)}, False)
