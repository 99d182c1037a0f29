"""The one graph: lazy weights, derived indexes that follow edits, node views for mappers."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper, numpy_helper

from mindconverter.errors import MindConverterError
from mindconverter.graph import Graph
from mindconverter.graph.graph import claim_name
from mindconverter.passes.infer_shapes import infer_shapes
from tests.helpers import make_model


def _model():
    nodes = [
        helper.make_node("Add", ["x", "b"], ["s"], name="add"),
        helper.make_node("Relu", ["s"], ["y"], name="relu"),
    ]
    model = make_model(
        nodes,
        [("x", np.float32, [2, 3])],
        [("y", np.float32, [2, 3])],
        {"b": np.arange(3, dtype=np.float32)},
    )
    model.graph.input.append(helper.make_tensor_value_info("b", 1, [3]))  # old exporters did this
    return model


def test_weights_are_decoded_once_on_first_use():
    graph = Graph(_model())
    assert "b" in graph.constants and len(graph.constants) == 1
    first = graph.constants["b"]
    assert graph.constant("b") is first
    np.testing.assert_array_equal(first, [0, 1, 2])
    assert graph.constant("x") is None and graph.constant("") is None
    with pytest.raises(KeyError):
        graph.constants["x"]


def test_inputs_exclude_weights_and_keep_order():
    graph = Graph(_model())
    assert graph.inputs == ["x"] and graph.outputs == ["y"]
    assert graph.source_initializers == {"b"}
    assert graph.opset == 17 and graph.opsets == {"": 17}


def test_edits_are_seen_after_edited():
    graph = Graph(_model())
    assert set(graph.producers) == {"s", "y"} and len(graph.consumer_nodes["s"]) == 1
    graph.model.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.ones(3, np.float32), "b"))
    graph.model.graph.node.pop()  # drop the Relu
    graph.edited()
    np.testing.assert_array_equal(graph.constants["b"], np.ones(3))
    assert set(graph.producers) == {"s"} and "s" not in graph.consumer_nodes


def test_shapes_and_dtypes_come_from_inference():
    graph = Graph(_model())
    graph.replace_model(infer_shapes(graph.model))
    assert graph.shapes["s"] == (2, 3) and graph.shapes["b"] == (3,)
    assert graph.dtypes["s"] == np.float32
    assert graph.symbolic_shapes["y"] == (2, 3)


def test_nodes_are_topologically_ordered_views():
    model = _model()
    nodes = list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend(reversed(nodes))
    graph = Graph(model)
    assert [node.name for node in graph.nodes] == ["add", "relu"]
    assert graph.used_values == frozenset({"x", "b", "s", "y"})
    assert [n.name for n in graph.consumer_nodes["s"]] == ["relu"]


def test_a_cycle_is_an_invalid_graph():
    model = _model()
    model.graph.node[0].input[0] = "y"
    with pytest.raises(MindConverterError) as info:
        _ = Graph(model).nodes
    assert info.value.key == "INVALID_GRAPH"


def test_names_are_claimed_without_clashes():
    graph = Graph(_model())
    taken = graph.value_names()
    assert {"x", "b", "s", "y"} <= taken
    assert claim_name(taken, "s") == "s_2" and claim_name(taken, "s") == "s_3"
    assert claim_name(taken, "new") == "new"
    assert "s_2" not in graph.value_names()  # a fresh set every time
    assert graph.node_names() == {"add", "relu"}


def test_a_permuted_declaration_follows_the_permutation_or_declares_nothing():
    from onnx import TensorProto

    from mindconverter.graph.graph import declare_permuted

    graph = helper.make_graph(
        [],
        "g",
        [helper.make_tensor_value_info("k", TensorProto.FLOAT, ["b", 2, "s", 4])],
        [],
        value_info=[helper.make_tensor_value_info("unknown", TensorProto.FLOAT, None)],
    )
    declare_permuted(graph, "k", "kt", [0, 1, 3, 2])
    declare_permuted(graph, "k", "wrong_rank", [1, 0])
    declare_permuted(graph, "unknown", "unknown_t", [1, 0])
    declared = {info.name: info for info in graph.value_info}
    dims = [d.dim_param or d.dim_value for d in declared["kt"].type.tensor_type.shape.dim]
    assert dims == ["b", 2, 4, "s"]
    assert "wrong_rank" not in declared
    assert not declared["unknown_t"].type.tensor_type.HasField("shape")
