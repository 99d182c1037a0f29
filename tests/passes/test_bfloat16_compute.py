"""bfloat16 operators MindSpore's CPU cannot compute run in float32 between casts: every result
is rounded to bfloat16 as in the source, weights stay bfloat16, the report says so."""

from __future__ import annotations

import mindspore as ms
import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from mindconverter import convert
from mindconverter.check.network import run_mindspore

BF16 = ml_dtypes.bfloat16


def _model(w: np.ndarray) -> onnx.ModelProto:
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Add", ["h", "h"], ["d"]),  # computed in bfloat16 itself
        helper.make_node("Softmax", ["d"], ["y"], axis=-1),
        helper.make_node("Relu", ["x"], ["r"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [2, 4])],
        [
            helper.make_tensor_value_info("y", TensorProto.BFLOAT16, None),
            helper.make_tensor_value_info("r", TensorProto.BFLOAT16, None),
        ],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_bfloat16_matmul_and_softmax_round_like_the_source(tmp_path):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3)).astype(BF16)
    x = rng.standard_normal((2, 4)).astype(BF16)
    onnx.save(_model(w), tmp_path / "m.onnx")
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out")
    assert result.unconverted == []
    y, r = run_mindspore(result.script_path, result.checkpoint_path, [x])

    h = (x.astype(np.float32) @ w.astype(np.float32)).astype(BF16)
    d = (h + h).astype(np.float32)
    e = np.exp(d - d.max(-1, keepdims=True))
    want = (e / e.sum(-1, keepdims=True)).astype(BF16)
    assert y.dtype.name == r.dtype.name == "bfloat16"
    np.testing.assert_allclose(y.astype(np.float32), want.astype(np.float32), rtol=2**-8)
    np.testing.assert_array_equal(r, np.maximum(x, 0))

    stored = ms.load_checkpoint(str(result.checkpoint_path))
    assert [p.dtype for p in stored.values()] == [ms.bfloat16]
    report = result.report_path.read_text()
    assert "no bfloat16 kernel for MatMul, Relu, Softmax" in report
    assert "Add" not in report.split("no bfloat16 kernel for")[1].split(":")[0]
