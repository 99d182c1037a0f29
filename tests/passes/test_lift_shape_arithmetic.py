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


def test_size_equal_to_a_whole_dimension_is_read_from_that_tensor(tmp_path):
    """A size computed by a formula over the network input (``n - 1``) that is a whole dimension
    of a tensor the shape already reads is read from that tensor: blocks need not receive the
    network input only for its size."""
    import numpy as np

    from tests.helpers import assert_matches, make_model

    nodes = [
        helper.make_node("Slice", ["x", "zero", "minus_one", "one"], ["h"]),
        helper.make_node("Shape", ["h"], ["h_size"]),
        helper.make_node("Gather", ["h_size", "first"], ["batch"]),
        helper.make_node("Shape", ["x"], ["x_size"]),
        helper.make_node("Gather", ["x_size", "second"], ["n"]),
        helper.make_node("Sub", ["n", "one"], ["shorter"]),
        helper.make_node("Concat", ["batch", "shorter", "tail"], ["target"], axis=0),
        helper.make_node("Reshape", ["h", "target"], ["y"]),
    ]
    constants = {
        "zero": np.array([0], np.int64),
        "minus_one": np.array([-1], np.int64),
        "one": np.array([1], np.int64),
        "first": np.array([0], np.int64),
        "second": np.array([1], np.int64),
        "tail": np.array([2, 2], np.int64),
    }
    model = make_model(
        nodes, [("x", np.float32, ["batch", "n", 4])], [("y", np.float32, None)], constants
    )
    feeds = {"x": np.random.default_rng(0).standard_normal((2, 5, 4)).astype(np.float32)}
    result = assert_matches(model, tmp_path, feeds, shape=["2,5,4"])
    code = result.script_path.read_text()
    body = code[code.index("def construct") :]
    assert "ops.shape(x)[1]" not in body and "- 1" not in body and "-1 +" not in body, body


def test_a_size_near_a_whole_dimension_is_read_from_that_tensor(tmp_path):
    """A size that differs from a whole dimension of a tensor the shape reads by a constant
    (``n - 2`` beside ``h`` of ``n - 1`` rows) is read from that tensor, plus the constant."""
    import numpy as np

    from tests.helpers import assert_matches, make_model

    nodes = [
        helper.make_node("Slice", ["x", "zero", "minus_one", "one"], ["h"]),
        helper.make_node("Slice", ["h", "one", "big", "one"], ["z"]),
        helper.make_node("Shape", ["h"], ["h_size"]),
        helper.make_node("Gather", ["h_size", "first"], ["batch"]),
        helper.make_node("Shape", ["x"], ["x_size"]),
        helper.make_node("Gather", ["x_size", "second"], ["n"]),
        helper.make_node("Sub", ["n", "two"], ["shorter"]),
        helper.make_node("Concat", ["batch", "shorter", "tail"], ["target"], axis=0),
        helper.make_node("Reshape", ["z", "target"], ["y"]),
    ]
    constants = {
        "zero": np.array([0], np.int64),
        "minus_one": np.array([-1], np.int64),
        "one": np.array([1], np.int64),
        "two": np.array([2], np.int64),
        "big": np.array([2**62], np.int64),
        "first": np.array([0], np.int64),
        "second": np.array([1], np.int64),
        "tail": np.array([2, 2], np.int64),
    }
    model = make_model(
        nodes, [("x", np.float32, ["batch", "n", 4])], [("y", np.float32, None)], constants
    )
    feeds = {"x": np.random.default_rng(0).standard_normal((2, 6, 4)).astype(np.float32)}
    result = assert_matches(model, tmp_path, feeds, shape=["2,6,4"])
    code = result.script_path.read_text()
    body = code[code.index("def construct") :]
    assert "ops.shape(x)" not in body and "_ = x.shape" not in body, body
    assert "x.shape[1]" not in body, body


def test_a_size_also_read_by_other_arithmetic_is_a_python_number(tmp_path):
    """BERT slices its position ids with the sequence length that also sizes a reshape: once the
    reshape's target is a Dims node of its own, the slice is the size's only reader and gets it
    as a Python number (``ids[:, :seq_len]``), not a tensor made from a tuple."""
    import numpy as np

    from tests.helpers import assert_matches, make_model

    nodes = [
        helper.make_node("Shape", ["x"], ["x_size"]),
        helper.make_node("Gather", ["x_size", "second"], ["n"]),
        helper.make_node("Slice", ["table", "zero", "n", "one"], ["rows"]),
        helper.make_node("Concat", ["n", "tail"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    constants = {
        "zero": np.array([0], np.int64),
        "one": np.array([1], np.int64),
        "second": np.array([1], np.int64),
        "tail": np.array([-1], np.int64),
        "table": np.arange(64, dtype=np.float32).reshape(16, 4),
    }
    outputs = [("y", np.float32, None), ("rows", np.float32, None)]
    model = make_model(nodes, [("x", np.float32, [1, "n", 4])], outputs, constants)
    for n in (5, 7):
        feeds = {"x": np.random.default_rng(n).standard_normal((1, n, 4)).astype(np.float32)}
        result = assert_matches(model, tmp_path / str(n), feeds, shape=["1,5,4"])
    body = result.script_path.read_text().split("def construct")[-1]
    assert "tuple_to_array" not in body and ":seq_len]" in body, body
