"""Casts to float8 / float4 / float8_e8m0fnu / 2- and 4-bit integers: MindSpore computes ONNX's
exact values in the container type, checked against onnx's reference evaluator on every bit
pattern of the target type, the midpoints between neighbours (ties), random values and the
special values."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from tests.helpers import make_model

FLOATS = {
    TensorProto.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn,
    TensorProto.FLOAT8E4M3FNUZ: ml_dtypes.float8_e4m3fnuz,
    TensorProto.FLOAT8E5M2: ml_dtypes.float8_e5m2,
    TensorProto.FLOAT8E5M2FNUZ: ml_dtypes.float8_e5m2fnuz,
    TensorProto.FLOAT4E2M1: ml_dtypes.float4_e2m1fn,
}
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 1e30, -1e30, 65504.0, 3e38]


def _values(narrow) -> np.ndarray:
    """Every value of ``narrow``, the midpoints between neighbours, random values, specials."""
    bits = 16 if narrow is ml_dtypes.float4_e2m1fn else 256
    every = np.arange(bits, dtype=np.uint8)
    if narrow is ml_dtypes.float4_e2m1fn:
        every = np.array([narrow(v) for v in [0, 0.5, 1, 1.5, 2, 3, 4, 6]]).astype(np.float32)
        every = np.concatenate([every, -every])
    else:
        every = every.view(narrow).astype(np.float32)
    finite = np.unique(every[np.isfinite(every)])
    mids = (finite[:-1] + finite[1:]) / 2
    rng = np.random.default_rng(5)
    spread = rng.standard_normal(200).astype(np.float32) * np.float32(2.0) ** rng.integers(
        -12, 12, 200
    )
    return np.concatenate([every, mids, spread, np.array(SPECIALS, np.float32)]).astype(np.float32)


def _convert_and_compare(model, feeds, tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    shapes = [np.shape(v) for v in feeds.values()]
    result = convert(path, output=tmp_path / "out", shape=shapes)
    assert result.unconverted == []
    got = run_mindspore(result.script_path, result.checkpoint_path, list(feeds.values()))
    want = ReferenceEvaluator(model).run(None, feeds)
    for g, w in zip(got, want):
        w = w.astype(g.dtype)  # the container holds the narrow values exactly
        np.testing.assert_array_equal(g, w)
        zeros = w == 0
        np.testing.assert_array_equal(np.signbit(g[zeros]), np.signbit(w[zeros]))
    return result


def _cast_model(to, source=np.float32, **attrs):
    node = helper.make_node("Cast", ["x"], ["y"], to=to, **attrs)
    target = helper.tensor_dtype_to_np_dtype(to)
    return make_model([node], [("x", source, None)], [("y", target, None)], opset=23)


@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("to", list(FLOATS))
def test_cast_to_narrow_floats_is_exact(to, saturate, tmp_path):
    x = _values(FLOATS[to])
    _convert_and_compare(_cast_model(to, saturate=saturate), {"x": x}, tmp_path)


def test_cast_from_float64_rounds_through_float32_like_the_reference(tmp_path):
    x = _values(ml_dtypes.float8_e4m3fn).astype(np.float64) * (1 + 1e-12)
    model = _cast_model(TensorProto.FLOAT8E4M3FN, source=np.float64)
    _convert_and_compare(model, {"x": x}, tmp_path)


@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
def test_cast_to_e8m0(round_mode, saturate, tmp_path):
    rng = np.random.default_rng(9)
    x = np.concatenate(
        [
            np.float32(2.0) ** np.arange(-149, 128, dtype=np.float32),
            rng.standard_normal(300).astype(np.float32)
            * np.float32(10.0) ** rng.integers(-40, 38, 300),
            np.array([1.5, 3.0, 0.75, 1.25, 3e38, 2.0**-128, 1.5 * 2.0**-127], np.float32),
            np.array(SPECIALS, np.float32),
        ]
    ).astype(np.float32)
    model = _cast_model(TensorProto.FLOAT8E8M0, round_mode=round_mode, saturate=saturate)
    model.opset_import[0].version = 25  # round_mode is new in opset 25
    _convert_and_compare(model, {"x": x}, tmp_path)


@pytest.mark.parametrize(
    "to", [TensorProto.INT4, TensorProto.UINT4, TensorProto.INT2, TensorProto.UINT2]
)
@pytest.mark.parametrize("source", [np.float32, np.int32])
def test_cast_to_sub_byte_integers_wraps_like_the_reference(to, source, tmp_path):
    rng = np.random.default_rng(2)
    x = np.concatenate([np.arange(-20, 21), rng.integers(-1000, 1000, 50)]).astype(np.float32)
    if source is np.float32:
        x = np.concatenate([x, x + 0.5, x - 0.7, np.array([np.inf, -np.inf, np.nan], np.float32)])
    _convert_and_compare(_cast_model(to, source=source), {"x": x.astype(source)}, tmp_path)


def test_narrow_inputs_are_declared_in_their_container(tmp_path):
    nodes = [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)]
    model = make_model(
        nodes, [("x", ml_dtypes.float8_e5m2, (2, 3))], [("y", np.float32, None)], opset=23
    )
    x = np.array([[1.5, -2.0, 57344.0], [np.inf, -0.0, 2.0**-16]], np.float32).astype(
        ml_dtypes.float8_e5m2
    )
    result = _convert_and_compare(model, {"x": x}, tmp_path)
    script = result.script_path.read_text()
    assert "x: float16[2, 3] (float8_e5m2 values, held exactly)" in script


def test_quantize_to_float8_and_back(tmp_path):
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["q"], saturate=1),
        helper.make_node("DequantizeLinear", ["q", "scale", "zero"], ["y"]),
    ]
    inits = {
        "scale": np.array(0.05, np.float32),
        "zero": np.array(0, np.float32).astype(ml_dtypes.float8_e4m3fn),
    }
    model = make_model(
        nodes,
        [("x", np.float32, (64,))],
        [("q", ml_dtypes.float8_e4m3fn, None), ("y", np.float32, None)],
        inits,
        opset=23,
    )
    x = np.random.default_rng(4).standard_normal(64).astype(np.float32) * 30
    _convert_and_compare(model, {"x": x}, tmp_path)
