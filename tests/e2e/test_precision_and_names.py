"""float16/bfloat16 models run in their dtype (or widened with float32=True); outputs keep the
source's names; renamed weights get their source names back in the weight map."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from mindconverter import convert
from mindconverter.check.network import build_network, run_mindspore

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _half_model(elem_type, np_dtype):
    rng = np.random.default_rng(1)
    weight = rng.standard_normal((8, 4)).astype(np.float32)
    bias = rng.standard_normal((8,)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Gemm", ["x", "fc.weight", "fc.bias"], ["h"], transB=1),
            helper.make_node("Relu", ["h"], ["scores"]),
        ],
        "half",
        [helper.make_tensor_value_info("x", elem_type, ["batch", 4])],
        [helper.make_tensor_value_info("scores", elem_type, ["batch", 8])],
        [
            numpy_helper.from_array(weight.astype(np_dtype), "fc.weight"),
            numpy_helper.from_array(bias.astype(np_dtype), "fc.bias"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, weight, bias


def test_float16_runs_in_float16_and_can_be_widened(tmp_path):
    import mindspore as ms

    model, weight, bias = _half_model(TensorProto.FLOAT16, np.float16)
    onnx.save(model, tmp_path / "half.onnx")
    x = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    expected = np.maximum(x.astype(np.float16).astype(np.float32) @ weight.T + bias, 0)
    for float32, dtype in ((False, np.float16), (True, np.float32)):
        out = tmp_path / str(float32)
        result = convert(tmp_path / "half.onnx", shape=["2,4"], output=out, float32=float32)
        net = build_network(result.script_path, result.checkpoint_path)
        got = net(ms.Tensor(x.astype(dtype))).asnumpy()
        assert got.dtype == dtype
        np.testing.assert_allclose(got.astype(np.float32), expected, rtol=2e-2, atol=2e-2)
        assert "def construct(self, x)" in result.script_path.read_text()
        assert "return scores" in result.script_path.read_text()


def test_bfloat16_weights_reach_the_checkpoint_and_the_network_runs_on_cpu(tmp_path):
    import mindspore as ms

    model, weight, bias = _half_model(TensorProto.BFLOAT16, ml_dtypes.bfloat16)
    onnx.save(model, tmp_path / "bf16.onnx")
    result = convert(tmp_path / "bf16.onnx", shape=["2,4"], output=tmp_path / "out")
    stored = ms.load_checkpoint(str(result.checkpoint_path))
    assert stored["fc_weight"].dtype == ms.bfloat16 and stored["fc_weight"].requires_grad
    np.testing.assert_allclose(
        stored["fc_weight"].float().asnumpy(), weight.astype(ml_dtypes.bfloat16).astype(np.float32)
    )
    # MindSpore's CPU has no bfloat16 matmul: computed in float32, rounded back to bfloat16
    x = np.random.default_rng(2).standard_normal((3, 4)).astype(ml_dtypes.bfloat16)
    (got,) = run_mindspore(result.script_path, result.checkpoint_path, [x])
    bf16 = ml_dtypes.bfloat16
    h = x.astype(np.float32) @ weight.astype(bf16).astype(np.float32).T
    want = np.maximum(h + bias.astype(bf16).astype(np.float32), 0).astype(bf16)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2**-7)
    assert "no bfloat16 kernel for Gemm, Relu" in result.report_path.read_text()


def test_renamed_weights_get_their_source_names_back(tmp_path):
    result = convert(
        FIXTURES / "tiny_resnet_torchscript.onnx", shape=["1,3,32,32"], output=tmp_path
    )
    rows = json.loads(result.weight_map_path.read_text())["tiny_resnet_torchscript"]
    by_name = {row["converted_weight"]["name"]: row for row in rows}
    conv = by_name["layer1.0.conv1.weight"]
    assert conv["source_weight"]["name"] == "layer1.0.conv1.weight"
    assert conv["source_weight"]["exported_as"].startswith("onnx::Conv_")
    assert "computed by the exporter" in conv["transform"]
    report = result.report_path.read_text()
    assert "Weight transforms" in report and "computed by the exporter" in report
