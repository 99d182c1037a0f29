"""Inline constant Ifs, onnxoptimizer clean-ups, dead nodes, reference copy, graph checks."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from mindconverter.errors import MindConverterError
from mindconverter.passes import (
    check_graph,
    dead_nodes,
    infer_shapes,
    inline_ifs,
    keep_reference,
    optimize,
)
from tests.helpers import make_model
from tests.passes.passes_util import graph_and_context


def _branch(name, op):
    out = helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, None)
    return helper.make_graph([helper.make_node(op, ["x"], [f"{name}_y"])], name, [], [out])


def test_an_if_with_a_constant_condition_becomes_its_branch():
    model = make_model(
        [
            helper.make_node(
                "If",
                ["c"],
                ["y"],
                then_branch=_branch("t", "Relu"),
                else_branch=_branch("e", "Neg"),
            )
        ],
        [("x", np.float32, [2])],
        [("y", np.float32, [2])],
        {"c": np.array(False)},
    )
    graph, context = graph_and_context(model)
    assert inline_ifs.run(graph, context)
    assert [n.op_type for n in graph.model.graph.node] == ["Neg", "Identity"]


def test_optimizer_drops_identities_and_keeps_node_metadata():
    model = make_model(
        [
            helper.make_node("Identity", ["x"], ["i"]),
            helper.make_node("Relu", ["i"], ["y"], name="relu"),
        ],
        [("x", np.float32, [2])],
        [("y", np.float32, [2])],
    )
    model.graph.node[1].metadata_props.add(key="namespace", value="layer1")
    graph, context = graph_and_context(model)
    optimize.run(graph, context)
    (node,) = graph.model.graph.node
    assert node.op_type == "Relu" and node.metadata_props[0].value == "layer1"


@pytest.mark.parametrize(
    "opset, first, second", [(13, [-3], [-1]), (11, [-3], [-1]), (13, [0], [1])]
)
def test_consecutive_squeezes_keep_their_meaning(tmp_path, opset, first, second):
    """onnxoptimizer fused Squeeze(-3) then Squeeze(-1) of [1, 3, 1] into Squeeze((0, 0)),
    which leaves [3, 1]; with negative axes the two stay apart."""
    from tests.helpers import assert_matches

    if opset >= 13:
        nodes = [
            helper.make_node("Squeeze", ["x", "a"], ["t"]),
            helper.make_node("Squeeze", ["t", "b"], ["y"]),
        ]
        inits = {"a": np.array(first, np.int64), "b": np.array(second, np.int64)}
    else:
        nodes = [
            helper.make_node("Squeeze", ["x"], ["t"], axes=first),
            helper.make_node("Squeeze", ["t"], ["y"], axes=second),
        ]
        inits = {}
    model = make_model(
        nodes, [("x", np.float32, [1, 3, 1])], [("y", np.float32, None)], inits, opset=opset
    )
    assert_matches(model, tmp_path)


def test_dead_nodes_and_unused_weights_go():
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Add", ["x", "w"], ["unused"])],
        [("x", np.float32, [2])],
        [("y", np.float32, [2])],
        {"w": np.ones(2, np.float32)},
    )
    graph, context = graph_and_context(model)
    dead_nodes.run(graph, context)
    assert [n.op_type for n in graph.model.graph.node] == ["Relu"] and not graph.initializers


def test_the_reference_is_an_untouched_copy():
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])], [("x", np.float32, [2])], [("y", np.float32, [2])]
    )
    graph, context = graph_and_context(model, keep_reference=True)
    keep_reference.run(graph, context)
    graph.model.graph.node[0].op_type = "Neg"
    assert context.reference.graph.node[0].op_type == "Relu"
    graph, context = graph_and_context(model)
    keep_reference.run(graph, context)
    assert context.reference is None


def test_shape_inference_fills_value_infos():
    model = make_model(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["r"], ["y"])],
        [("x", np.float32, [2, 5])],
        [("y", np.float32, None)],
    )
    graph, context = graph_and_context(model)
    infer_shapes.run(graph, context)
    assert graph.shapes["r"] == (2, 5) and graph.shapes["y"] == (2, 5)


def test_check_graph_refuses_outputs_nothing_produces():
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])], [("x", np.float32, [2])], [("z", np.float32, [2])]
    )
    graph, context = graph_and_context(model)
    with pytest.raises(MindConverterError) as info:
        check_graph.run(graph, context)
    assert info.value.key == "INVALID_GRAPH"
