"""Views of dynamically sized values read as people write them: several new axes as
``x[:, None, None, :]``, a number spread over a computed shape as ``ops.full``. Equal to
onnxruntime at two sizes, in PyNative and GRAPH mode."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from mindconverter.check.verify import run_onnxruntime
from tests.helpers import make_model

I64 = np.int64


def _model() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Unsqueeze", ["x", "middle"], ["widened"]),
        helper.make_node("Shape", ["x"], ["size"]),
        helper.make_node("Expand", ["fifteen", "size"], ["filled"]),
    ]
    return make_model(
        nodes,
        [("x", I64, ["batch", "length"])],
        [("widened", I64, None), ("filled", I64, None)],
        {"middle": np.array([1, 2], I64), "fifteen": np.array(15, I64)},
    )


@pytest.mark.parametrize("graph_mode", [False, True])
def test_new_axes_and_filled_shape(tmp_path, graph_mode):
    model = _model()
    onnx.save(model, tmp_path / "m.onnx")
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out", shape=["2,3"])
    code = result.script_path.read_text()
    assert "x[:, None, None, :]" in code, code
    assert "ops.full_like(x, 15" in code and "broadcast_to" not in code, code
    for batch, length in ((2, 3), (4, 1)):
        x = np.arange(batch * length, dtype=I64).reshape(batch, length)
        want = run_onnxruntime(model, {"x": x}, ["widened", "filled"])
        got = run_mindspore(result.script_path, result.checkpoint_path, [x], graph_mode=graph_mode)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("graph_mode", [False, True])
def test_reshape_to_a_shape_also_read_as_a_tensor_passes_sizes(tmp_path, graph_mode):
    """The target is a tensor in the script (another reader takes the shape as data): the
    reshape gets its entries one by one, never the tensor (which can crash MindSpore)."""
    nodes = [
        helper.make_node("Shape", ["x"], ["size"]),
        helper.make_node("Reshape", ["x", "flat"], ["row"]),
        helper.make_node("Reshape", ["row", "size"], ["y"]),
        helper.make_node("Cast", ["size"], ["size_out"], to=onnx.TensorProto.FLOAT),
    ]
    model = make_model(
        nodes,
        [("x", np.float32, ["batch", 4])],
        [("y", np.float32, None), ("size_out", np.float32, None)],
        {"flat": np.array([-1], I64)},
    )
    onnx.save(model, tmp_path / "m.onnx")
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out", shape=["2,4"])
    code = result.script_path.read_text()
    assert "one by one" in code, code
    for batch in (2, 3):
        x = np.arange(batch * 4, dtype=np.float32).reshape(batch, 4)
        want = run_onnxruntime(model, {"x": x}, ["y", "size_out"])
        got = run_mindspore(result.script_path, result.checkpoint_path, [x], graph_mode=graph_mode)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def _dynamic_cases():
    rng = np.random.default_rng(0)
    return {
        "einsum": (
            [helper.make_node("Einsum", ["a", "b"], ["y"], equation="bijk,bjk->bi")],
            [("a", np.float32, ["batch", 3, "seq", 4]), ("b", np.float32, ["batch", "seq", 4])],
            {},
            lambda n: [
                rng.standard_normal((n, 3, n + 1, 4)).astype(np.float32),
                rng.standard_normal((n, n + 1, 4)).astype(np.float32),
            ],
        ),
        "gather_elements": (
            [helper.make_node("GatherElements", ["a", "index"], ["y"], axis=1)],
            [("a", np.float32, ["batch", "seq"]), ("index", I64, ["batch", "seq"])],
            {},
            lambda n: [
                rng.standard_normal((n, n + 3)).astype(np.float32),
                rng.integers(-n - 3, n + 3, (n, n + 3)).astype(I64),
            ],
        ),
        "expand_to_constant": (
            [helper.make_node("Expand", ["a", "target"], ["y"])],
            [("a", np.float32, ["batch", 1, 3])],
            {"target": np.array([1, 4, 1], I64)},
            lambda n: [rng.standard_normal((n, 1, 3)).astype(np.float32)],
        ),
    }


@pytest.mark.parametrize("graph_mode", [False, True])
@pytest.mark.parametrize("case", ["einsum", "gather_elements", "expand_to_constant"])
def test_operators_over_dynamic_sizes_stay_dynamic(tmp_path, case, graph_mode):
    """Einsum, GatherElements and Expand to a constant target read dynamic sizes at run time
    instead of falling back to fixed sizes."""
    nodes, inputs, constants, make_feeds = _dynamic_cases()[case]
    model = make_model(nodes, inputs, [("y", np.float32, None)], constants)
    onnx.save(model, tmp_path / "m.onnx")
    first = make_feeds(2)
    shapes = [",".join(str(d) for d in value.shape) for value in first]
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out", shape=shapes)
    assert result.unconverted == [], [(u.op_type, u.reason) for u in result.unconverted]
    for feeds in (first, make_feeds(3)):
        names = [name for name, _, _ in inputs]
        (want,) = run_onnxruntime(model, dict(zip(names, feeds)), ["y"])
        (got,) = run_mindspore(
            result.script_path, result.checkpoint_path, feeds, graph_mode=graph_mode
        )
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
