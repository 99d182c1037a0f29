"""Workarounds carry a one-line comment above the statement that computes them."""

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from tests.helpers import assert_matches, make_model

F32 = np.float32


def test_written_out_layer_norm_says_why(tmp_path):
    model = make_model(
        [helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"], epsilon=1e-5)],
        [("x", F32, [2, 3, 4]), ("scale", F32, [4]), ("bias", F32, [4])],
        [("y", F32, [2, 3, 4])],
    )
    lines = assert_matches(model, tmp_path).script_path.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if "ops.layer_norm has no CPU kernel" in line)
    assert lines[index].strip().startswith("# ")
    assert "=" in lines[index + 1] and not lines[index + 1].strip().startswith("#")


def test_explicit_softmax_says_why(tmp_path):
    """A softmax over scores that may hold -inf (a mask) is written out, with the reason."""
    model = make_model(
        [
            helper.make_node("Where", ["keep", "x", "low"], ["masked"]),
            helper.make_node("Softmax", ["masked"], ["y"], axis=-1),
        ],
        [("x", F32, [2, 4]), ("keep", np.bool_, [2, 4])],
        [("y", F32, [2, 4])],
        {"low": np.array(-np.inf, F32)},
    )
    feeds = {
        "x": np.random.default_rng(0).standard_normal((2, 4)).astype(F32),
        "keep": np.array([[True, False, True, True], [True, True, False, True]]),
    }
    code = assert_matches(model, tmp_path, feeds).script_path.read_text()
    assert "# explicit softmax: MindSpore's CPU kernel zeroes" in code, code


def test_bfloat16_computed_in_float32_says_why(tmp_path):
    bf16 = ml_dtypes.bfloat16
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3)).astype(bf16)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, None)],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "m.onnx")
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out")
    x = rng.standard_normal((2, 4)).astype(bf16)
    (y,) = run_mindspore(result.script_path, result.checkpoint_path, [x])
    h = (x.astype(np.float32) @ w.astype(np.float32)).astype(bf16)
    want = np.maximum(h.astype(np.float32), 0)
    np.testing.assert_allclose(y.astype(np.float32), want, rtol=2**-8)
    code = result.script_path.read_text()
    assert code.count("# no bfloat16 kernel in MindSpore for this operator") == 1, code
