"""Input shapes from the model and --shape, written into the graph."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from mindconverter.errors import MindConverterError
from mindconverter.passes import fix_shapes
from mindconverter.passes.fix_shapes import parse_shape, parse_shape_request
from tests.helpers import make_model
from tests.passes.passes_util import graph_and_context


def _model():
    return make_model(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        [("x", np.float32, ["batch", 3])],
        [("y", np.float32, ["batch", 3])],
        {"w": np.ones(3, np.float32)},
    )


def _fixed(shapes, dynamic=False):
    model = _model()
    model.graph.input.append(helper.make_tensor_value_info("w", 1, [3]))  # a weight listed as input
    graph, context = graph_and_context(model, dynamic=dynamic)
    context.input_specs = context.input_specs[:1]
    context.shapes = [parse_shape_request(s) for s in shapes]
    fix_shapes.run(graph, context)
    return graph, context


def test_shapes_are_written_and_weight_inputs_dropped():
    graph, context = _fixed(["4,3"])
    assert context.resolved_shapes == {"x": (4, 3)}
    assert [inp.name for inp in graph.model.graph.input] == ["x"]
    assert graph.symbolic_shapes["x"] == (4, 3)


def test_dynamic_dimensions_can_stay_named():
    graph, _ = _fixed(["4,3"], dynamic=True)
    assert graph.symbolic_shapes["x"] == ("batch", 3)


@pytest.mark.parametrize(
    "shapes,key",
    [([], "SHAPE_REQUIRED"), (["4,5"], "SHAPE_CONFLICT"), (["4,3,1"], "SHAPE_CONFLICT")],
)
def test_missing_and_conflicting_shapes(shapes, key):
    with pytest.raises(MindConverterError) as info:
        _fixed(shapes)
    assert info.value.key == key


@pytest.mark.parametrize("text", ["", "1,,2", "1.5", "-1", "2,-3", "a", str(1 << 41)])
def test_bad_shape_texts(text):
    with pytest.raises(MindConverterError) as info:
        parse_shape(text)
    assert info.value.key == "BAD_SHAPE"


def test_zero_is_an_empty_axis():
    assert parse_shape("0") == (0,)
    assert parse_shape("2,0,3") == (2, 0, 3)
    assert parse_shape_request("like=0") == ("like", (0,))


def _specs(*declared):
    from mindconverter.graph.specs import TensorSpec

    return [TensorSpec(name, 1, list(shape)) for name, shape in declared]


def test_unnamed_shapes_go_to_the_inputs_they_fit():
    """Static inputs (scalars included) beside the shaped ones need no --shape."""
    from mindconverter.passes.fix_shapes import resolve_input_shapes

    specs = _specs(("x", [3, 4]), ("s", []), ("t", [2]))
    assert resolve_input_shapes(specs, [(None, (3, 4))]) == {"x": (3, 4), "s": (), "t": (2,)}
    assert resolve_input_shapes(specs, [(None, (2,))])["t"] == (2,)
    assert resolve_input_shapes(specs, None) == {"x": (3, 4), "s": (), "t": (2,)}
    mixed = _specs(("s", []), ("x", ["n", 4]), ("y", [2, 2]))
    assert resolve_input_shapes(mixed, [(None, (5, 4))])["x"] == (5, 4)
    assert resolve_input_shapes(mixed, [("x", (0, 4))])["x"] == (0, 4)
    for wrong in ([(None, (7,))], [(None, (3, 4)), (None, (9, 9))]):
        with pytest.raises(MindConverterError) as info:
            resolve_input_shapes(specs, wrong)
        assert info.value.key == "SHAPE_COUNT"


def test_inputs_whose_named_dimensions_another_shape_sizes_need_no_shape():
    """Silero VAD v4: ``input[batch, sequence]``, ``sr``, ``h/c[2, batch, 64]``; once ``input``
    is shaped, ``h`` and ``c`` are known. An unnamed dynamic dimension still needs --shape."""
    from mindconverter.passes.fix_shapes import resolve_input_shapes

    specs = _specs(
        ("input", ["batch", "sequence"]),
        ("sr", []),
        ("h", [2, "batch", 64]),
        ("c", [2, "batch", 64]),
    )
    want = {"input": (3, 512), "sr": (), "h": (2, 3, 64), "c": (2, 3, 64)}
    assert resolve_input_shapes(specs, [("input", (3, 512))]) == want
    assert resolve_input_shapes(specs, [(None, (3, 512))]) == want
    assert resolve_input_shapes(specs, [("input", (3, 512)), ("h", (2, 3, 64))]) == want
    unnamed = _specs(("input", ["batch", "sequence"]), ("state", [2, "", 128]))
    for shapes in ([("input", (1, 512))], [(None, (1, 512))]):
        with pytest.raises(MindConverterError) as info:
            resolve_input_shapes(unnamed, shapes)
        assert info.value.key in ("SHAPE_REQUIRED", "SHAPE_COUNT")


def test_shape_requests():
    assert parse_shape_request("1,3") == (None, (1, 3))
    assert parse_shape_request("x:0=1,3") == ("x:0", (1, 3))
    assert parse_shape_request("sr=") == ("sr", ())
