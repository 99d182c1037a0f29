"""Symbolic shape inference: named dimensions and the symbolic values of shape tensors."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import sympy
from onnx import helper

from mindconverter.graph import Graph
from mindconverter.graph.specs import detect_inputs
from mindconverter.graph.symbolic import infer_symbolic, is_numeric, plain_value
from mindconverter.mappers.registry import default_registry
from mindconverter.passes import fix_shapes, fold_constants, infer_shapes
from mindconverter.passes.context import PassContext
from mindconverter.passes.fix_shapes import parse_shape_request
from tests.helpers import make_model


def _heads_model() -> onnx.ModelProto:
    """x[batch, seq, 8] reshaped to [batch, seq, 2, last] where last = 8 // 2 from the shape."""
    ints = {"i0": np.array(0), "i1": np.array(1), "i2": np.array(2), "ax": np.array([0])}
    ints["heads"] = np.array([2])
    ints["two"] = np.array(2)
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "i0"], ["b"]),
        helper.make_node("Gather", ["shape", "i1"], ["t"]),
        helper.make_node("Gather", ["shape", "i2"], ["d"]),
        helper.make_node("Div", ["d", "two"], ["dh"]),
        helper.make_node("Unsqueeze", ["b", "ax"], ["b1"]),
        helper.make_node("Unsqueeze", ["t", "ax"], ["t1"]),
        helper.make_node("Unsqueeze", ["dh", "ax"], ["dh1"]),
        helper.make_node("Concat", ["b1", "t1", "heads", "dh1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    initializers = {name: value.astype(np.int64) for name, value in ints.items()}
    return make_model(
        nodes,
        [("x", np.float32, ["batch", "seq", 8])],
        [("y", np.float32, None)],
        initializers,
    )


def test_symbolic_inference_names_dimensions_and_shape_values():
    result = infer_symbolic(_heads_model())
    assert result is not None
    batch, seq = sympy.Symbol("batch", integer=True, positive=True), sympy.Symbol("seq")
    assert result.values["d"] == 8 and result.values["dh"] == 4
    target = result.values["target"]
    assert [str(v) for v in target] == ["batch", "seq", "2", "4"]
    assert target[0] == batch and str(target[1]) == str(seq)
    output = next(v for v in result.model.graph.output if v.name == "y")
    dims = [d.dim_param or d.dim_value for d in output.type.tensor_type.shape.dim]
    assert dims == ["batch", "seq", 2, 4]


def test_plain_values_and_numeric_check():
    assert plain_value(np.array([1, 2], dtype=np.int64)) == (1, 2)
    assert plain_value(np.int64(3)) == 3 and plain_value(sympy.Integer(4)) == 4
    assert is_numeric((1, (2, 3))) and not is_numeric((1, sympy.Symbol("n")))


def _run(graph: Graph, context: PassContext, *passes) -> None:
    for module in passes:
        module.run(graph, context)


def test_dynamic_dims_stay_named_and_fixed_arithmetic_folds():
    graph = Graph(_heads_model())
    context = PassContext(default_registry(), shapes=[parse_shape_request("3,5,8")], dynamic=True)
    context.input_specs = detect_inputs(graph.model)
    _run(graph, context, fix_shapes, infer_shapes, fold_constants)
    assert context.resolved_shapes == {"x": (3, 5, 8)}
    assert graph.symbolic_shapes["x"] == ("batch", "seq", 8)
    assert graph.symbolic_shapes["y"] == ("batch", "seq", 2, 4)
    # the static part of the shape arithmetic (8 // 2) is now a constant; batch and seq are not
    assert "dh1" in graph.initializers and "d" not in {n.output[0] for n in graph.model.graph.node}
    assert "b1" not in graph.initializers and "t1" not in graph.initializers


def test_static_conversion_fixes_every_dimension():
    graph = Graph(_heads_model())
    context = PassContext(default_registry(), shapes=[parse_shape_request("3,5,8")], dynamic=False)
    context.input_specs = detect_inputs(graph.model)
    _run(graph, context, fix_shapes, infer_shapes, fold_constants)
    assert graph.symbolic_values == {}
    assert graph.shapes["x"] == (3, 5, 8)
    assert "target" in graph.initializers


def test_dynamic_dims_refuse_to_become_sizes():
    from mindconverter.graph.symbolic import DynamicDim, DynamicDimensionError

    batch = DynamicDim("batch")
    assert batch == DynamicDim("batch") and batch != DynamicDim("seq") and batch != 1
    assert hash(batch) == hash(DynamicDim("batch")) and str(batch) == "batch"
    assert 0 not in (batch, 3)
    for use in (
        int,
        float,
        bool,
        lambda d: d + 1,
        lambda d: 2 * d,
        lambda d: d // 2,
        lambda d: d < 3,
    ):
        with pytest.raises(DynamicDimensionError):
            use(batch)


def test_graph_dims_show_dynamic_dims_only_for_dynamic_networks():
    from mindconverter.graph.symbolic import DynamicDim

    graph = Graph(_heads_model())
    context = PassContext(default_registry(), shapes=[parse_shape_request("3,5,8")], dynamic=True)
    context.input_specs = detect_inputs(graph.model)
    _run(graph, context, fix_shapes, infer_shapes)
    assert graph.dims("x") == (DynamicDim("batch"), DynamicDim("seq"), 8)
    assert graph.dynamic_dims == {"batch", "seq"}
    static = Graph(_heads_model())
    context = PassContext(default_registry(), shapes=[parse_shape_request("3,5,8")], dynamic=False)
    context.input_specs = detect_inputs(static.model)
    _run(static, context, fix_shapes, infer_shapes)
    assert static.dims("x") == (3, 5, 8) and static.dynamic_dims == set()


def test_a_node_over_its_time_budget_falls_back_to_onnx_inference(monkeypatch):
    """sympy can spend minutes on one node's size arithmetic: such a node is interrupted and
    inferred by ONNX's own inference, and the rest keeps its symbolic values."""
    import time

    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

    from mindconverter.graph import symbolic

    original = SymbolicShapeInference._infer_Concat

    def stuck(self, node):
        time.sleep(30)  # interrupted after NODE_SECONDS
        original(self, node)

    monkeypatch.setattr(SymbolicShapeInference, "_infer_Concat", stuck)
    monkeypatch.setattr(symbolic, "NODE_SECONDS", 0.2)
    started = time.monotonic()
    result = infer_symbolic(_heads_model())
    assert time.monotonic() - started < 20
    assert result is not None
    assert result.values["dh"] == 4  # inferred before and after the interrupted node
    assert "target" not in result.values  # the Concat's value came from ONNX's inference: none


def test_past_the_total_budget_there_is_no_symbolic_result(monkeypatch):
    from mindconverter.graph import symbolic

    monkeypatch.setattr(symbolic, "TOTAL_SECONDS", -1.0)
    assert infer_symbolic(_heads_model()) is None


def test_sizes_built_from_whole_dimensions_read_them():
    """A sum, a product or a min over whole dimensions of a candidate tensor (up to a small
    offset) reads those dimensions: symbols of their own, recorded with where they are."""
    from types import SimpleNamespace

    from mindconverter.graph.symbolic import whole_dimensions

    n = sympy.Symbol("n", integer=True, positive=True)
    height, width = sympy.Symbol("height", integer=True), sympy.Symbol("width", integer=True)
    length = sympy.floor((n - 9) / 4)  # a convolution's length, minus one
    rows, columns = sympy.floor(height / 7), sympy.floor(width / 7)
    graph = SimpleNamespace(
        symbolic_shapes={
            "h": ("batch", str(length + 1), 16),
            "grid": ("batch", 8, str(rows), str(columns)),
        }
    )
    items = [511 - length, rows * columns, sympy.Min(rows, columns + 1)]
    items, whole = whole_dimensions(graph, items, ["h", "grid"])
    assert whole["whole_dim_0"] == ("h", 1)
    assert str(items[0]) == "512 - whole_dim_0"
    assert {whole[str(s)] for s in items[1].free_symbols} == {("grid", 2), ("grid", 3)}
    assert {whole[str(s)] for s in items[2].free_symbols} == {("grid", 2), ("grid", 3)}
    assert isinstance(items[2], sympy.Min)


def test_a_size_missing_from_the_tensors_at_hand_is_read_from_a_multiple_of_it():
    """Swin's window attention reshapes its scores by the image batch while holding the windows
    of every image (``16*batch``): the batch is read as that dimension floor-divided by 16
    when no candidate has the batch itself."""
    from types import SimpleNamespace

    from mindconverter.graph.symbolic import whole_dimensions

    batch = sympy.Symbol("batch", integer=True)
    graph = SimpleNamespace(
        symbolic_shapes={
            "windows": ("16*batch", 16, 8),
            "image": ("batch", 3, 32, 32),
            "odd": ("batch*16", 4),
        }
    )
    items, whole = whole_dimensions(graph, [batch, 2 * batch], ["windows", "odd"])
    assert whole == {"whole_dim_0": ("windows", 0)}
    assert str(items[0]) == "floor(whole_dim_0/16)" and str(items[1]) == "2*floor(whole_dim_0/16)"
    for candidates in (["image", "windows"], ["windows", "image"]):  # the batch itself wins
        items, whole = whole_dimensions(graph, [batch], candidates)
        assert items == [batch] and whole == {}
    items, whole = whole_dimensions(graph, [batch], ["odd"])
    assert items == [batch] and whole == {}
    items, whole = whole_dimensions(graph, [batch], ["windows"], parts=False)
    assert items == [batch] and whole == {}


def test_a_size_divided_in_floating_point_is_not_read_as_floor_division(tmp_path):
    """EnCodec pads each layer to ``(ceil(length / stride) - 1) * stride + k - length``: the
    division is a float one. The tool's symbolic values would say ``length // stride``; they
    are dropped for it and what is computed from it, so the pad is right at every length."""
    from tests.helpers import assert_matches

    nodes = [
        helper.make_node("Shape", ["x"], ["dims"]),
        helper.make_node("Gather", ["dims", "last"], ["length"], axis=0),
        helper.make_node("Cast", ["length"], ["length_f"], to=onnx.TensorProto.FLOAT),
        helper.make_node("Div", ["length_f", "stride_f"], ["frames_f"]),
        helper.make_node("Ceil", ["frames_f"], ["frames_up"]),
        helper.make_node("Cast", ["frames_up"], ["frames"], to=onnx.TensorProto.INT64),
        helper.make_node("Mul", ["frames", "stride"], ["ideal"]),
        helper.make_node("Sub", ["ideal", "length"], ["extra"]),
        helper.make_node("Concat", ["zeros", "extra"], ["pads"], axis=0),
        helper.make_node("Pad", ["x", "pads"], ["y"]),
    ]
    constants = {
        "last": np.array([1], np.int64),
        "stride_f": np.array(4.0, np.float32),
        "stride": np.array([4], np.int64),
        "zeros": np.array([0, 0, 0], np.int64),
    }
    model = make_model(nodes, [("x", np.float32, [1, "n"])], [("y", np.float32, None)], constants)
    graph = Graph(model)
    symbolic = infer_symbolic(graph.model, {"n": 7})
    assert symbolic is not None and "frames_f" not in symbolic.values  # not floor(n / 4)
    for length in (8, 7, 5):  # 7 and 5 pad up to 8
        feeds = {"x": np.random.default_rng(length).standard_normal((1, length)).astype(np.float32)}
        assert_matches(model, tmp_path / str(length), feeds, shape=[f"1,{length}"])
