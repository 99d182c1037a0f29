"""Shape arithmetic on dynamic dimensions collapses into one Dims node per consumer."""

from __future__ import annotations

from onnx import helper

from mindconverter.graph import Graph
from mindconverter.graph.internal_domain import DOMAIN
from mindconverter.graph.specs import detect_inputs
from mindconverter.mappers.registry import default_registry
from mindconverter.passes import lift_shape_arithmetic
from mindconverter.passes.context import PassContext
from mindconverter.passes.fix_shapes import parse_shape_request
from mindconverter.passes.pipeline import PIPELINE, run_passes
from tests.graph.test_symbolic import _heads_model


def _simplified(dynamic: bool) -> Graph:
    graph = Graph(_heads_model())
    context = PassContext(
        default_registry(), shapes=[parse_shape_request("3,5,8")], dynamic=dynamic
    )
    context.input_specs = detect_inputs(graph.model)
    upto = [step.name for step in PIPELINE].index("collapse shape arithmetic on dynamic dimensions")
    run_passes(graph, context, PIPELINE[1:upto])
    return graph, context


def test_reshape_target_becomes_one_dims_node():
    graph, context = _simplified(dynamic=True)
    assert lift_shape_arithmetic.run(graph, context)
    ops = [(node.domain, node.op_type) for node in graph.model.graph.node]
    assert ops == [(DOMAIN, "Dims"), ("", "Reshape")]
    dims = graph.model.graph.node[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in dims.attribute}
    assert list(dims.input) == ["x"] and list(dims.output) == ["target"]
    assert attrs["symbols"] == [b"batch", b"seq"] and attrs["axes"] == [0, 1]
    assert attrs["sources"] == [0, 0] and attrs["scalar"] == 0
    assert [str(v) for v in graph.symbolic_values["target"]] == ["batch", "seq", "2", "4"]


def test_static_graphs_are_left_alone():
    graph, context = _simplified(dynamic=False)
    before = [node.op_type for node in graph.model.graph.node]
    assert not lift_shape_arithmetic.run(graph, context)
    assert [node.op_type for node in graph.model.graph.node] == before == ["Reshape"]
