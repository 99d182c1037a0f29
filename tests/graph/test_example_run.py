"""Ranks shape inference cannot find are observed in one bounded run on example inputs."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from mindconverter.graph.example_run import observed_ranks
from mindconverter.graph.weight_store import WeightStore
from tests.helpers import make_model


def test_ranks_and_types_of_intermediate_values_are_observed():
    nodes = [
        helper.make_node("Reshape", ["x", "target"], ["r"]),
        helper.make_node("ReduceSum", ["r"], ["total"], keepdims=0),
        helper.make_node("Cast", ["total"], ["y"], to=TensorProto.INT64),
    ]
    model = make_model(
        nodes,
        [("x", np.float32, [2, 6]), ("target", np.int64, [3])],
        [("y", np.int64, None)],
        opset=17,
    )
    # integer inputs are tried as all 1, then all 2: [2, 2, 2] does not fit 12 values either,
    # all 0 copies the input's sizes ([2, 6, 0] is invalid): nothing runs, nothing is claimed
    assert observed_ranks(model, WeightStore(), {"x": (2, 6), "target": (3,)}, ["r"]) == {}
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 4
    found = observed_ranks(model, WeightStore(), {"x": (2, 4), "target": (3,)}, ["r", "total"])
    assert found == {"r": (TensorProto.FLOAT, 3), "total": (TensorProto.FLOAT, 0)}


def test_graphs_with_a_loop_are_not_run():
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"])],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, [])],
    )
    nodes = [
        helper.make_node("Loop", ["", "go"], [], body=body),
        helper.make_node("Relu", ["x"], ["y"]),
    ]
    model = make_model(
        nodes, [("go", np.bool_, []), ("x", np.float32, [2])], [("y", np.float32, None)]
    )
    assert observed_ranks(model, WeightStore(), {"go": (), "x": (2,)}, ["y"]) == {}
