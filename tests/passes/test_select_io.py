"""Choosing and checking inputs and outputs, cutting the graph."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from mindconverter.errors import MindConverterError
from mindconverter.passes import select_io
from tests.helpers import make_model
from tests.passes.passes_util import graph_and_context


def _model():
    return make_model(
        [
            helper.make_node("Relu", ["a"], ["r"]),
            helper.make_node("Add", ["r", "b"], ["s"]),
            helper.make_node("Neg", ["s"], ["y"]),
        ],
        [("a", np.float32, [2]), ("b", np.float32, [2])],
        [("y", np.float32, [2])],
    )


def test_detected_inputs_and_outputs_are_recorded_and_said():
    said = []
    graph, context = graph_and_context(_model(), log=said.append)
    select_io.run(graph, context)
    assert [s.name for s in context.input_specs] == ["a", "b"]
    assert [s.name for s in context.output_specs] == ["y"]
    assert said == [
        "Detected inputs:  a: float32[2]; b: float32[2]",
        "Detected outputs: y: float32[2]",
    ]


def test_user_order_of_inputs_is_kept():
    graph, context = graph_and_context(_model(), input_nodes=["b", "a"])
    select_io.run(graph, context)
    assert graph.inputs == ["b", "a"]


def test_an_inner_output_cuts_the_graph():
    graph, context = graph_and_context(_model(), output_nodes=["s"])
    select_io.run(graph, context)
    assert graph.outputs == ["s"] and [n.op_type for n in graph.model.graph.node] == ["Relu", "Add"]


@pytest.mark.parametrize(
    "settings,key",
    [
        ({"input_nodes": ["q"]}, "UNKNOWN_NODE"),
        ({"output_nodes": ["yy"]}, "UNKNOWN_NODE"),
        ({"input_nodes": ["a", "a"]}, "DUPLICATE_NODE"),
    ],
)
def test_bad_names_are_coded_errors_with_candidates(settings, key):
    graph, context = graph_and_context(_model(), **settings)
    with pytest.raises(MindConverterError) as info:
        select_io.run(graph, context)
    assert info.value.key == key
    if key == "UNKNOWN_NODE":
        assert "candidates" in str(info.value)
