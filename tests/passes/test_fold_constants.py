"""Folding what is known at conversion time, and recording where folded weights came from."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from mindconverter.passes import fold_constants, infer_shapes
from tests.helpers import assert_matches, make_model
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


def test_torch_pad_order_reversal_folds_exactly_beside_dynamic_sizes(tmp_path):
    """TorchScript writes F.pad(x, (1, 0, 1, 0)) as a reshape to rows, a reversed slice over the
    rows and a transpose. onnxruntime's symbolic inference keeps that 2-D data flat and
    reverses it element by element; folding evaluates the chain itself (pads [1, 1, 0, 0])."""
    nodes = [
        helper.make_node(
            "ConstantOfShape",
            ["zero_len"],
            ["nothing"],
            value=helper.make_tensor("v", TensorProto.INT64, [1], [0]),
        ),
        helper.make_node("Concat", ["torch_pads", "nothing"], ["all_pads"], axis=0),
        helper.make_node("Reshape", ["all_pads", "rows"], ["pairs"]),
        helper.make_node("Slice", ["pairs", "minus_one", "far", "axis0", "minus_one"], ["flipped"]),
        helper.make_node("Transpose", ["flipped"], ["columns"], perm=[1, 0]),
        helper.make_node("Reshape", ["columns", "minus_one"], ["pads"]),
        helper.make_node("Pad", ["x", "pads"], ["y"], mode="constant"),
    ]
    constants = {
        "zero_len": np.array([0], np.int64),
        "torch_pads": np.array([1, 0, 1, 0], np.int64),
        "rows": np.array([-1, 2], np.int64),
        "minus_one": np.array([-1], np.int64),
        "far": np.array([-(2**63) + 1], np.int64),
        "axis0": np.array([0], np.int64),
    }
    model = make_model(nodes, [("x", np.float32, ["n", "m"])], [("y", np.float32, None)], constants)
    feeds = {"x": np.ones((3, 4), np.float32)}
    result = assert_matches(model, tmp_path, feeds, shape=["3,4"])
    assert "(1, 0, 1, 0)" in result.script_path.read_text()
