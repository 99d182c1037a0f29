"""Folding what is known at conversion time, and recording where folded weights came from."""

from __future__ import annotations

import numpy as np
from onnx import helper

from mindconverter.passes import fold_constants, infer_shapes
from tests.helpers import make_model
from tests.passes.passes_util import graph_and_context


def _fold(model):
    graph, context = graph_and_context(model)
    infer_shapes.run(graph, context)
    changed = fold_constants.run(graph, context)
    return graph, changed


def test_shape_arithmetic_of_static_values_folds():
    model = make_model(
        [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Reshape", ["x", "s"], ["y"]),
        ],
        [("x", np.float32, [2, 3])],
        [("y", np.float32, [2, 3])],
    )
    graph, changed = _fold(model)
    assert changed and [n.op_type for n in graph.model.graph.node] == ["Reshape"]
    np.testing.assert_array_equal(graph.constants["s"], [2, 3])


def test_weight_transforms_are_recorded():
    model = make_model(
        [
            helper.make_node("Transpose", ["fc.weight"], ["wt"], perm=[1, 0]),
            helper.make_node("MatMul", ["x", "wt"], ["y"]),
        ],
        [("x", np.float32, [1, 3])],
        [("y", np.float32, [1, 2])],
        {"fc.weight": np.ones((2, 3), np.float32)},
    )
    graph, _ = _fold(model)
    record = graph.fold_records["wt"]
    assert record.sources == ["fc.weight"] and record.steps == ["Transpose(perm=[1, 0])"]


def test_random_operators_and_huge_results_stay_in_the_network():
    model = make_model(
        [
            helper.make_node("RandomNormal", [], ["r"], shape=[2], dtype=1),
            helper.make_node("ConstantOfShape", ["big"], ["z"]),
            helper.make_node("Add", ["r", "x"], ["y"]),
        ],
        [("x", np.float32, [2])],
        [("y", np.float32, [2]), ("z", np.float32, None)],
        {"big": np.array([1 << 20, 1 << 20], np.int64)},
    )
    graph, _ = _fold(model)
    assert [n.op_type for n in graph.model.graph.node] == ["RandomNormal", "ConstantOfShape", "Add"]
