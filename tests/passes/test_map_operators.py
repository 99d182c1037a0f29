"""Mapping every node: unknown operators and mapper bugs never lose the conversion."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from mindconverter.errors import MindConverterError
from mindconverter.mappers.registry import MapperRegistry
from mindconverter.passes import map_operators
from tests.helpers import make_model
from tests.passes.passes_util import graph_and_context


def _graph(registry, debug=False):
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])], [("x", np.float32, [2])], [("y", np.float32, [2])]
    )
    graph, context = graph_and_context(model, debug=debug)
    context.registry = registry
    return graph, context


def test_an_operator_without_mapper_gets_a_reason():
    graph, context = _graph(MapperRegistry())
    map_operators.run(graph, context)
    (mapped,) = context.mapped
    assert not mapped.converted and mapped.reason == "no mapper for 'Relu' at opset 17"


def test_a_failing_mapper_becomes_an_unconverted_node_or_an_error_with_debug():
    registry = MapperRegistry()

    @registry.register("Relu")
    def broken(ctx):
        raise ZeroDivisionError("oops")

    graph, context = _graph(registry)
    map_operators.run(graph, context)
    assert "internal mapper error (ZeroDivisionError: oops)" in context.mapped[0].reason
    graph, context = _graph(registry, debug=True)
    with pytest.raises(MindConverterError) as info:
        map_operators.run(graph, context)
    assert info.value.key == "MAPPING_FAILED"


def test_a_dynamic_dimension_written_as_a_size_is_an_unconverted_node_not_a_crash():
    """A mapper that puts a dynamic dimension into a literal (a reshape target) would make the
    code generator fail on the whole model; the node is left unconverted instead."""
    from mindconverter.graph.symbolic import DynamicDim
    from mindconverter.mappers.base import Call, Input, Lit

    registry = MapperRegistry()

    @registry.register("Relu")
    def reshaping(ctx):
        return Call("ops.reshape", [Input(0), Lit((DynamicDim("N"), -1))])

    graph, context = _graph(registry)
    map_operators.run(graph, context)
    assert context.mapped[0].reason == "the mapper writes dynamic dimension 'N' as a size"
