"""Tensors of types MindSpore lacks (2-/4-bit integers, 8-/4-bit floats) are held in the
narrowest MindSpore type that keeps every value: the network computes the source's numbers."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from mindconverter import convert
from mindconverter.check.network import run_mindspore

PACKED = [
    ("INT2", np.arange(-2, 2), "int8"),
    ("UINT2", np.arange(0, 4), "uint8"),
    ("INT4", np.arange(-8, 8), "int8"),
    ("UINT4", np.arange(0, 16), "uint8"),
    ("FLOAT8E4M3FN", np.array([-448.0, -1.5, -0.0, 0.001953125, 0.5, 1.0, 3.25, 448.0]), "float16"),
    ("FLOAT8E5M2", np.array([-57344.0, -2.5, 0.0, 1.52587890625e-05, 0.75, 1.0, 96.0]), "float16"),
    ("FLOAT4E2M1", np.array([-6.0, -1.5, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0]), "float16"),
]


def _gather_model(type_name: str, values: np.ndarray, size: int) -> onnx.ModelProto:
    """A weight of ``size`` values of the type, read at run-time indices and cast to float32."""
    data_type = getattr(TensorProto, type_name)
    stored = np.resize(values, size)
    weight = helper.make_tensor("table", data_type, [size], stored.tolist())
    nodes = [
        helper.make_node("Gather", ["table", "idx"], ["picked"]),
        helper.make_node("Cast", ["picked"], ["y"], to=TensorProto.FLOAT),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("idx", TensorProto.INT64, [size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [size])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 11
    return model


@pytest.mark.parametrize("size", [7, 300], ids=["literal", "checkpoint"])
@pytest.mark.parametrize(("type_name", "values", "container"), PACKED, ids=[p[0] for p in PACKED])
def test_packed_types_keep_their_values(tmp_path, type_name, values, container, size):
    if not hasattr(TensorProto, type_name):
        pytest.skip(f"this onnx has no {type_name}")
    model = _gather_model(type_name, values, size)
    onnx.checker.check_model(model)
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    idx = np.random.default_rng(0).integers(0, size, size).astype(np.int64)
    want = ReferenceEvaluator(model).run(None, {"idx": idx})[0]
    result = convert(path, output=tmp_path / "out")
    assert result.unconverted == []
    got = run_mindspore(result.script_path, result.checkpoint_path, [idx])[0]
    np.testing.assert_array_equal(got, want)
    script = result.script_path.read_text()
    assert f"ms.{container}" in script
    if size > 7:  # a frozen parameter: the weight map says how it is stored
        entries = json.loads(result.weight_map_path.read_text())["m"]
        assert any(f"stored as {container}" in e.get("transform", "") for e in entries), entries


@pytest.mark.parametrize(("type_name", "low", "high"), [("INT4", -8, 8), ("UINT2", 0, 4)])
def test_dequantized_low_bit_weights_verify_against_onnxruntime(tmp_path, type_name, low, high):
    """A 4-/2-bit weight dequantized into a MatMul: onnxruntime's reference run follows the ONNX
    definition (its extended fusions round a 4-bit DequantizeLinear + MatMul differently)."""
    if not hasattr(TensorProto, type_name):
        pytest.skip(f"this onnx has no {type_name}")
    data_type = getattr(TensorProto, type_name)
    quantized = np.random.default_rng(0).integers(low, high, (16, 8))
    inits = [
        helper.make_tensor("wq", data_type, [16, 8], quantized.reshape(-1).tolist()),
        helper.make_tensor("zp", data_type, [], [(low + high) // 2]),
        helper.make_tensor("scale", TensorProto.FLOAT, [], [0.05]),
    ]
    nodes = [
        helper.make_node("DequantizeLinear", ["wq", "scale", "zp"], ["w"]),
        helper.make_node("MatMul", ["x", "w"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])
    model.ir_version = 12
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    result = convert(path, output=tmp_path / "out", verify=True)
    assert result.verification["ok"], result.verification
