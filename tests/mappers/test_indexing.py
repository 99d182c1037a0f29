"""Gather/Scatter family, TopK, NonZero, Compress and Unique against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model
from tests.mappers.builders import I64, F, model_of, randn, rng


def test_compress_constant_condition(tmp_path):
    model = model_of(
        "Compress",
        [("x", F, (3, 4))],
        [("y", F, None)],
        {"c": np.array([False, True, True, True])},
        opset=11,
        axis=1,
    )
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_compress_runtime_condition(tmp_path, axis):
    attrs = {} if axis is None else {"axis": axis}
    model = model_of(
        "Compress", [("x", F, (3, 4)), ("c", np.bool_, (3,))], [("y", F, None)], opset=11, **attrs
    )
    assert_matches(model, tmp_path, feeds={"x": randn(3, 4), "c": np.array([True, False, True])})


def test_gather_constant_negative_indices(tmp_path):
    model = model_of(
        "Gather", [("x", F, (4, 3))], [("y", F, None)], {"i": np.array([-1, 0], I64)}, axis=0
    )
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements(tmp_path, axis):
    idx = rng.integers(-3, 3, (3, 3)).astype(I64)
    model = model_of(
        "GatherElements", [("x", F, (3, 3)), ("i", I64, (3, 3))], [("y", F, None)], axis=axis
    )
    assert_matches(model, tmp_path, feeds={"x": randn(3, 3), "i": idx})


@pytest.mark.parametrize("value, call", [(0, "ops.zeros_like"), (3, "ops.full_like")])
def test_gather_elements_from_a_constant_of_one_value(tmp_path, value, call):
    """BERT's token types: a buffer of zeros gathered at the positions is zeros shaped like the
    positions (no gather, no wrapped indices)."""
    node = helper.make_node("GatherElements", ["buffer", "i"], ["y"], axis=1)
    buffer = np.full((2, 8), value, I64)
    model = make_model([node], [("i", I64, (2, 5))], [("y", I64, None)], {"buffer": buffer})
    result = assert_matches(model, tmp_path, feeds={"i": rng.integers(-8, 8, (2, 5)).astype(I64)})
    body = result.script_path.read_text().split("def construct")[-1]
    assert call in body and "gather_elements" not in body


def test_gather_embedding_table(tmp_path):
    """A weight table gathered by run-time ids (an embedding), int32 ids."""
    node = helper.make_node("Gather", ["table", "ids"], ["y"])
    model = make_model(
        [node], [("ids", np.int32, (2, 3))], [("y", F, None)], {"table": randn(6, 4)}
    )
    assert_matches(model, tmp_path, feeds={"ids": np.array([[0, 5, -1], [2, 2, 3]], np.int32)})


@pytest.mark.parametrize(
    "batch_dims, data_shape, idx",
    [
        (0, (2, 3, 4), np.array([[0, 1], [1, -1]], I64)),
        (0, (2, 3), np.array([[[1], [0]]], I64)),
        (1, (2, 3, 4), np.array([[1], [2]], I64)),
        (1, (2, 3, 4), np.array([[[0, 1], [2, 3]], [[1, 0], [0, 2]]], I64)),
        (2, (2, 3, 4), np.array([[[1], [2], [3]], [[0], [0], [-1]]], I64)),
    ],
)
def test_gather_nd(tmp_path, batch_dims, data_shape, idx):
    model = model_of(
        "GatherND",
        [("x", F, data_shape), ("i", I64, idx.shape)],
        [("y", F, None)],
        batch_dims=batch_dims,
    )
    assert_matches(model, tmp_path, feeds={"x": randn(*data_shape), "i": idx})


@pytest.mark.parametrize(
    "axis, idx",
    [
        (0, np.array([2, -1, 0], I64)),
        (1, np.array([[0, -2], [3, 1]], I64)),
        (-1, np.array(-3, I64)),
        (2, np.array(1, I64)),
    ],
)
def test_gather_runtime_indices(tmp_path, axis, idx):
    model = model_of(
        "Gather", [("x", F, (3, 4, 5)), ("i", I64, idx.shape)], [("y", F, None)], axis=axis
    )
    assert_matches(model, tmp_path, feeds={"x": randn(3, 4, 5), "i": idx})


def test_nonzero(tmp_path):
    model = model_of("NonZero", [("x", F, (3, 4))], [("y", I64, None)], opset=13)
    data = np.array([[0, 1, 0, 2], [3, 0, 0, 0], [0, 0, 5, 6]], F)
    assert_matches(model, tmp_path, feeds={"x": data})


@pytest.mark.parametrize(
    "reduction, axis", [("none", 0), ("none", 1), ("add", 1), ("mul", 0), ("max", 1), ("min", -1)]
)
def test_scatter_elements(tmp_path, reduction, axis):
    opset = 16 if reduction in ("none", "add", "mul") else 18
    attrs = {"axis": axis} if reduction == "none" else {"axis": axis, "reduction": reduction}
    idx = (
        np.array([[1, 0, 2], [0, -1, 1]], I64)
        if reduction != "none"
        else np.array([[1, 0, 2], [0, 2, -2]], I64)
    )
    if reduction == "none" and axis == 0:
        idx = np.array([[1, 0, 2], [2, 1, 0]], I64)
    model = model_of(
        "ScatterElements",
        [("x", F, (3, 3)), ("i", I64, (2, 3)), ("u", F, (2, 3))],
        [("y", F, None)],
        opset=opset,
        **attrs,
    )
    assert_matches(model, tmp_path, feeds={"x": randn(3, 3), "i": idx, "u": randn(2, 3)})


@pytest.mark.parametrize(
    "reduction, idx, upd_shape",
    [
        ("none", np.array([[0], [2]], I64), (2, 4)),
        ("none", np.array([[0, 1], [2, -1]], I64), (2,)),
        ("add", np.array([[1], [1]], I64), (2, 4)),
        ("mul", np.array([[0, 0], [0, 0]], I64), (2,)),
        ("max", np.array([[1, 2], [1, 2]], I64), (2,)),
        ("min", np.array([[2], [2]], I64), (2, 4)),
    ],
)
def test_scatter_nd(tmp_path, reduction, idx, upd_shape):
    attrs = {} if reduction == "none" else {"reduction": reduction}
    model = model_of(
        "ScatterND",
        [("x", F, (3, 4)), ("i", I64, idx.shape), ("u", F, upd_shape)],
        [("y", F, None)],
        opset=18,
        **attrs,
    )
    assert_matches(model, tmp_path, feeds={"x": randn(3, 4), "i": idx, "u": randn(*upd_shape)})


def test_scatter_opset9(tmp_path):
    model = model_of(
        "Scatter",
        [("x", F, (3, 3)), ("i", I64, (1, 3)), ("u", F, (1, 3))],
        [("y", F, None)],
        opset=9,
        axis=0,
    )
    assert_matches(
        model, tmp_path, feeds={"x": randn(3, 3), "i": np.array([[2, 0, 1]], I64), "u": randn(1, 3)}
    )


@pytest.mark.parametrize(
    "opset, attrs",
    [
        (9, {"k": 2}),
        (11, {"axis": 0}),
        (11, {"largest": 0}),
        (11, {"axis": 1, "largest": 0}),
    ],
)
def test_topk(tmp_path, opset, attrs):
    inits = {} if opset < 10 else {"k": np.array([2], I64)}
    model = model_of(
        "TopK", [("x", F, (3, 4))], [("v", F, None), ("i", I64, None)], inits, opset=opset, **attrs
    )
    assert_matches(model, tmp_path)


def test_topk_indices_only(tmp_path):
    node = helper.make_node("TopK", ["x", "k"], ["unused_values", "i"], axis=1)
    model = make_model(
        [node], [("x", F, (2, 5))], [("i", I64, None)], {"k": np.array([3], I64)}, opset=13
    )
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("sorted_", [1, 0])
def test_unique(tmp_path, sorted_):
    node = helper.make_node("Unique", ["x"], ["y", "idx", "inv", "cnt"], sorted=sorted_)
    model = make_model(
        [node],
        [("x", F, (2, 4))],
        [("y", F, None), ("idx", I64, None), ("inv", I64, None), ("cnt", I64, None)],
        opset=11,
    )
    data = np.array([[3, 1, 2, 1], [3, 0, 2, 5]], F)
    assert_matches(model, tmp_path, feeds={"x": data})


def test_data_dependent_shapes_in_graph_mode(tmp_path):
    """NonZero, Compress and Unique have data-dependent output shapes; GRAPH mode must run them too."""
    nodes = [
        helper.make_node("NonZero", ["x"], ["nz"]),
        helper.make_node("Compress", ["x", "c"], ["cx"], axis=1),
        helper.make_node("Unique", ["x"], ["u", "ui", "uv", "uc"]),
    ]
    model = make_model(
        nodes,
        [("x", F, (2, 3)), ("c", np.bool_, (3,))],
        [
            ("nz", I64, None),
            ("cx", F, None),
            ("u", F, None),
            ("ui", I64, None),
            ("uv", I64, None),
            ("uc", I64, None),
        ],
        opset=13,
    )
    feeds = {"x": np.array([[0, 2, 2], [1, 0, 3]], F), "c": np.array([True, False, True])}
    assert_matches(model, tmp_path, feeds=feeds, graph_mode=True)


@pytest.mark.parametrize("graph_mode", [False, True])
def test_consumers_of_data_dependent_sizes_convert(tmp_path, graph_mode):
    """NonZero's output has rank 2 and a length only the data decide (torchvision detection
    post-processing): Transpose, GatherND, Shape and a reduction after it convert."""
    nodes = [
        helper.make_node("Greater", ["x", "zero"], ["mask"]),
        helper.make_node("NonZero", ["mask"], ["nz"]),
        helper.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]),
        helper.make_node("GatherND", ["x", "idx"], ["vals"]),
        helper.make_node("Shape", ["vals"], ["count"]),
        helper.make_node("ReduceSum", ["vals"], ["total"], keepdims=0),
    ]
    model = make_model(
        nodes,
        [("x", F, (3, 4))],
        [("vals", F, None), ("count", I64, None), ("total", F, None)],
        {"zero": np.array(0.0, F)},
        opset=17,
    )
    assert_matches(model, tmp_path, graph_mode=graph_mode)
