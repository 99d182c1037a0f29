"""Building a graph and a context for running single passes."""

from __future__ import annotations

from mindconverter.graph import Graph
from mindconverter.graph.specs import detect_inputs, detect_outputs
from mindconverter.mappers.registry import default_registry
from mindconverter.passes.context import PassContext


def graph_and_context(model, **settings) -> tuple[Graph, PassContext]:
    """A Graph of ``model`` and a context whose detected inputs/outputs are the model's."""
    graph = Graph(model)
    context = PassContext(default_registry(), **settings)
    context.input_specs, context.output_specs = detect_inputs(model), detect_outputs(model)
    return graph, context
