"""Reads inside If/Loop bodies count, at any depth."""

from __future__ import annotations

from onnx import TensorProto, helper

from mindconverter.graph.pruning import remove_dead_nodes
from mindconverter.graph.subgraphs import has_subgraph, subgraph_references


def _branch(name: str, reads: str) -> object:
    out = helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, None)
    return helper.make_graph(
        [helper.make_node("Identity", [reads], [f"{name}_out"])], name, [], [out]
    )


def test_reads_in_nested_subgraphs_are_found():
    inner = helper.make_node(
        "If", ["c"], ["i"], then_branch=_branch("t2", "deep"), else_branch=_branch("e2", "x")
    )
    then = helper.make_graph(
        [inner], "t", [], [helper.make_tensor_value_info("i", TensorProto.FLOAT, None)]
    )
    outer = helper.make_node(
        "If", ["c"], ["y"], then_branch=then, else_branch=_branch("e", "shallow")
    )
    graph = helper.make_graph(
        [outer], "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    )
    assert {"deep", "shallow", "x", "c"} <= subgraph_references(graph)
    assert has_subgraph(outer) and not has_subgraph(helper.make_node("Relu", ["a"], ["b"]))


def test_a_value_read_only_inside_a_branch_keeps_its_producer():
    producer = helper.make_node("Relu", ["x"], ["hidden"])
    branch = helper.make_node(
        "If", ["c"], ["y"], then_branch=_branch("t", "hidden"), else_branch=_branch("e", "x")
    )
    dead = helper.make_node("Neg", ["x"], ["unused"])
    graph = helper.make_graph(
        [producer, dead, branch],
        "g",
        [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph)
    remove_dead_nodes(model)
    assert [n.op_type for n in model.graph.node] == ["Relu", "If"]
