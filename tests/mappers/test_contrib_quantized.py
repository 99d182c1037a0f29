"""onnxruntime's quantized operators (com.microsoft) against onnxruntime: weights come out as
float parameters, run-time quantization as onnxruntime does it."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from mindconverter.check.verify import run_onnxruntime
from tests.helpers import assert_matches, assert_outputs_match, convert_fully
from tests.mappers.test_contrib_fused import MS, ms_model, rand

F32 = np.float32
U8 = np.uint8


def ints(shape, low, high, seed, dtype=U8):
    return np.random.default_rng(seed).integers(low, high, shape).astype(dtype)


def assert_kept_quantized(result, dtype):
    """--keep_quantized: the script's QuantizedDense, its weight stored as integers."""
    import mindspore as ms

    assert "QuantizedDense(" in result.script_path.read_text()
    params = ms.load_checkpoint(str(result.checkpoint_path))
    stored = [p for name, p in params.items() if name.endswith(".weight")]
    assert stored and all(p.asnumpy().dtype == dtype for p in stored)


def weight_map_entries(result):
    data = json.loads(result.weight_map_path.read_text())
    return [entry for entries in data.values() for entry in entries]


@pytest.mark.parametrize(
    ("bits", "k", "zero_points", "bias"),
    [(4, 32, "packed", False), (4, 40, None, True), (8, 32, "packed", False), (2, 32, None, False),
     (4, 32, "float", False)],
)  # fmt: skip
@pytest.mark.parametrize("keep_quantized", [False, True])
def test_matmul_nbits_is_a_dense_layer_with_float_weights(
    tmp_path, bits, k, zero_points, bias, keep_quantized
):
    n, block = 6, 16
    blocks = -(-k // block)
    initializers = {
        "w": ints((n, blocks, block * bits // 8), 0, 256, 1),
        "scales": (np.abs(rand(n * blocks, seed=2)) * 0.1 + 0.01).astype(F32),
    }
    names = ["x", "w", "scales"]
    if zero_points == "packed":
        initializers["zp"] = ints((n, -(-blocks * bits // 8)), 0, 256, 3)
    elif zero_points == "float":
        initializers["zp"] = rand(n * blocks, seed=3)
    names.append("zp" if zero_points else "")
    if bias:
        initializers["bias"] = rand(n, seed=4)
        names += ["", "bias"]
    node = helper.make_node(
        "MatMulNBits", names, ["y"], domain=MS, K=k, N=n, bits=bits, block_size=block
    )
    model = ms_model([node], [("x", F32, [2, 3, k])], [("y", F32, None)], initializers)
    result = assert_matches(model, tmp_path, rtol=1e-4, atol=1e-4, keep_quantized=keep_quantized)
    if keep_quantized:
        assert_kept_quantized(result, U8)
        return
    assert "nn.Dense(" in result.script_path.read_text()
    transforms = [e["converted_weight"]["name"] for e in weight_map_entries(result)]
    assert any(name.endswith("weight") for name in transforms)
    notes = json.dumps(weight_map_entries(result))
    assert "dequantized" in notes


@pytest.mark.parametrize("with_zero_points", [False, True])
def test_gather_block_quantized_is_an_embedding(tmp_path, with_zero_points):
    vocab, hidden, block = 10, 32, 16
    initializers = {
        "table": ints((vocab, hidden // 2), 0, 256, 5),
        "scales": (np.abs(rand(vocab, hidden // block, seed=6)) + 0.05).astype(F32),
    }
    names = ["table", "ids", "scales"]
    if with_zero_points:
        initializers["zp"] = ints((vocab, hidden // block // 2), 0, 256, 7)
        names.append("zp")
    node = helper.make_node(
        "GatherBlockQuantized", names, ["y"], domain=MS, block_size=block, bits=4
    )
    model = ms_model([node], [("ids", np.int64, [2, 4])], [("y", F32, None)], initializers)
    feeds = {"ids": ints((2, 4), 0, vocab, 8, np.int64)}
    result = assert_matches(model, tmp_path, feeds)
    assert "nn.Embedding(" in result.script_path.read_text()


@pytest.mark.parametrize("keep_quantized", [False, True])
@pytest.mark.parametrize("signed", [True, False])
def test_dynamic_quantize_matmul(tmp_path, signed, keep_quantized):
    dtype = np.int8 if signed else U8
    low, high = (-128, 128) if signed else (0, 256)
    initializers = {
        "w": ints((16, 6), low, high, 9, dtype),
        "scale": (np.abs(rand(6, seed=10)) * 0.01 + 0.001).astype(F32),
        "zp": ints((6,), low // 4, high // 4, 11, dtype),
        "bias": rand(6, seed=12),
    }
    node = helper.make_node(
        "DynamicQuantizeMatMul", ["x", "w", "scale", "zp", "bias"], ["y"], domain=MS
    )
    model = ms_model([node], [("x", F32, [3, 16])], [("y", F32, None)], initializers)
    result = assert_matches(model, tmp_path, rtol=1e-4, atol=1e-4, keep_quantized=keep_quantized)
    if keep_quantized:
        assert_kept_quantized(result, dtype)


@pytest.mark.parametrize("keep_quantized", [False, True])
def test_matmul_integer_to_float(tmp_path, keep_quantized):
    initializers = {
        "w": ints((16, 6), -128, 128, 13, np.int8),
        "a_scale": np.array(0.02, F32),
        "b_scale": (np.abs(rand(6, seed=14)) * 0.01 + 0.001).astype(F32),
        "a_zp": np.array(120, U8),
        "bias": rand(6, seed=15),
    }
    node = helper.make_node(
        "MatMulIntegerToFloat",
        ["a", "w", "a_scale", "b_scale", "a_zp", "", "bias"],
        ["y"],
        domain=MS,
    )
    model = ms_model([node], [("a", U8, [2, 3, 16])], [("y", F32, None)], initializers)
    feeds = {"a": ints((2, 3, 16), 0, 256, 16)}
    result = assert_matches(
        model, tmp_path, feeds, rtol=1e-4, atol=1e-4, keep_quantized=keep_quantized
    )
    if keep_quantized:
        assert_kept_quantized(result, np.int8)


def test_q_attention(tmp_path):
    initializers = {
        "w": ints((16, 48), -128, 128, 17, np.int8),
        "bias": rand(48, seed=18) * 0.1,
        "x_scale": np.array(0.02, F32),
        "w_scale": np.array(0.01, F32),
        "x_zp": np.array(128, U8),
    }
    node = helper.make_node(
        "QAttention",
        ["x", "w", "bias", "x_scale", "w_scale", "mask", "x_zp"],
        ["y"],
        domain=MS,
        num_heads=2,
    )
    model = ms_model(
        [node],
        [("x", U8, [2, 5, 16]), ("mask", np.int32, [2, 5])],
        [("y", F32, None)],
        initializers,
    )
    mask = np.ones((2, 5), np.int32)
    mask[1, -2:] = 0
    feeds = {"x": ints((2, 5, 16), 0, 256, 19), "mask": mask}
    result = assert_matches(model, tmp_path, feeds, rtol=1e-4, atol=1e-4)
    assert "self.query = nn.Dense(" in result.script_path.read_text()


def assert_same_integers(model, tmp_path, feeds):
    """The quantized outputs equal onnxruntime's exactly, in the same integer type."""
    result = convert_fully(model, tmp_path)
    names = [inp.name for inp in model.graph.input if inp.name in feeds]
    ms_outputs = run_mindspore(
        result.script_path, result.checkpoint_path, [feeds[n] for n in names]
    )
    ort_outputs = run_onnxruntime(model, feeds, [model.graph.output[0].name])
    assert_outputs_match(ms_outputs, ort_outputs, same_dtype=True)


def quantized_inputs(names, shape, seed):
    inputs = [(name, U8, shape) for name in names]
    feeds = {name: ints(shape, 0, 256, seed + i) for i, name in enumerate(names)}
    return inputs, feeds


def q_params(prefix, scale, zero):
    return {f"{prefix}_scale": np.array(scale, F32), f"{prefix}_zp": np.array(zero, U8)}


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
def test_qlinear_binary(tmp_path, op):
    inputs, feeds = quantized_inputs(["a", "b"], [2, 3, 8], 20)
    weights = {**q_params("a", 0.05, 120), **q_params("b", 0.03, 130), **q_params("y", 0.1, 125)}
    names = ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"]
    node = helper.make_node(op, names, ["y"], domain=MS)
    model = ms_model([node], inputs, [("y", U8, None)], weights)
    assert_same_integers(model, tmp_path, feeds)


@pytest.mark.parametrize("op", ["QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax"])
def test_qlinear_unary(tmp_path, op):
    inputs, feeds = quantized_inputs(["x"], [2, 3, 8], 30)
    weights = {**q_params("x", 0.05, 128), **q_params("y", 1 / 256, 0)}
    attrs = {"alpha": 0.1} if op == "QLinearLeakyRelu" else {}
    if op == "QLinearSoftmax":
        attrs = {"axis": -1, "opset": 13}
    if op == "QLinearLeakyRelu":
        weights.update(q_params("y", 0.04, 100))
    node = helper.make_node(
        op, ["x", "x_scale", "x_zp", "y_scale", "y_zp"], ["y"], domain=MS, **attrs
    )
    model = ms_model([node], inputs, [("y", U8, None)], weights)
    assert_same_integers(model, tmp_path, feeds)


def test_qlinear_global_average_pool(tmp_path):
    inputs, feeds = quantized_inputs(["x"], [1, 3, 4, 4], 40)
    weights = {**q_params("x", 0.05, 128), **q_params("y", 0.02, 120)}
    node = helper.make_node(
        "QLinearGlobalAveragePool", ["x", "x_scale", "x_zp", "y_scale", "y_zp"], ["y"], domain=MS
    )
    model = ms_model([node], inputs, [("y", U8, None)], weights)
    assert_same_integers(model, tmp_path, feeds)


def test_qlinear_concat(tmp_path):
    inputs, feeds = quantized_inputs(["a", "b"], [2, 3, 4], 50)
    weights = {**q_params("a", 0.05, 120), **q_params("b", 0.03, 130), **q_params("y", 0.06, 125)}
    names = ["y_scale", "y_zp", "a", "a_scale", "a_zp", "b", "b_scale", "b_zp"]
    node = helper.make_node("QLinearConcat", names, ["y"], domain=MS, axis=1)
    model = ms_model([node], inputs, [("y", U8, None)], weights)
    assert_same_integers(model, tmp_path, feeds)


@pytest.mark.parametrize("quantized_output", [False, True])
def test_q_gemm(tmp_path, quantized_output):
    inputs, feeds = quantized_inputs(["a"], [3, 16], 60)
    weights = {
        **q_params("a", 0.05, 120),
        "b": ints((6, 16), -128, 128, 61, np.int8),
        "b_scale": np.array(0.01, F32),
        "b_zp": np.array(0, np.int8),
        "c": ints((6,), -500, 500, 62, np.int32),
    }
    names = ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "c"]
    out_type = F32
    if quantized_output:
        weights.update(q_params("y", 0.2, 128))
        names += ["y_scale", "y_zp"]
        out_type = U8
    node = helper.make_node("QGemm", names, ["y"], domain=MS, transB=1, alpha=1.0)
    model = ms_model([node], inputs, [("y", out_type, None)], weights)
    if quantized_output:
        assert_same_integers(model, tmp_path, feeds)
    else:
        assert_matches(model, tmp_path, feeds, rtol=1e-4, atol=1e-4)


def quantized_lstm_model(per_column: bool):
    """A DynamicQuantizeLSTM (int8 W [1, in, 4h], R [1, h, 4h]) and the float ONNX LSTM of its
    dequantized weights."""
    hidden, size = 3, 4
    columns = 4 * hidden if per_column else 1
    w, r = ints((1, size, 4 * hidden), -128, 128, 70, np.int8), ints((1, hidden, 4 * hidden), -128, 128, 71, np.int8)  # fmt: skip
    w_scale = (np.abs(rand(1, columns, seed=72)) * 0.01 + 0.005).astype(F32)
    r_scale = (np.abs(rand(1, columns, seed=73)) * 0.01 + 0.005).astype(F32)
    w_zp, r_zp = np.zeros((1, columns), np.int8), np.zeros((1, columns), np.int8)
    bias = rand(1, 8 * hidden, seed=74) * 0.1
    if not per_column:
        w_scale, r_scale, w_zp, r_zp = (v.reshape(1) for v in (w_scale, r_scale, w_zp, r_zp))
    quantized = {"w": w, "r": r, "b": bias, "ws": w_scale, "wz": w_zp, "rs": r_scale, "rz": r_zp}
    names = ["x", "w", "r", "b", "", "", "", "", "ws", "wz", "rs", "rz"]
    node = helper.make_node(
        "DynamicQuantizeLSTM", names, ["y", "y_h"], domain=MS, hidden_size=hidden
    )
    outputs = [("y", F32, None), ("y_h", F32, None)]
    model = ms_model([node], [("x", F32, [5, 2, size])], outputs, quantized)
    dequantized = {
        "w": ((w.astype(F32) - w_zp.reshape(1, 1, -1)) * w_scale.reshape(1, 1, -1)).transpose(0, 2, 1),
        "r": ((r.astype(F32) - r_zp.reshape(1, 1, -1)) * r_scale.reshape(1, 1, -1)).transpose(0, 2, 1),
        "b": bias,
    }  # fmt: skip
    float_node = helper.make_node("LSTM", ["x", "w", "r", "b"], ["y", "y_h"], hidden_size=hidden)
    reference = ms_model([float_node], [("x", F32, [5, 2, size])], outputs, dequantized)
    return model, reference


@pytest.mark.parametrize("per_column", [False, True])
def test_dynamic_quantize_lstm_is_the_lstm_of_its_dequantized_weights(tmp_path, per_column):
    model, reference = quantized_lstm_model(per_column)
    result = convert_fully(model, tmp_path)
    feeds = {"x": rand(5, 2, 4, seed=75)}
    got = run_mindspore(result.script_path, result.checkpoint_path, [feeds["x"]])
    # exactly the float LSTM of the dequantized weights ...
    assert_outputs_match(got, run_onnxruntime(reference, feeds, ["y", "y_h"]), 1e-4, 1e-5)
    # ... and onnxruntime's quantized kernel up to its run-time quantization of the activations
    quantized = run_onnxruntime(model, feeds, ["y", "y_h"])
    for mine, theirs in zip(got, quantized):
        assert np.abs(mine - theirs).max() <= 0.02 * np.abs(theirs).max()
    assert "dequantized" in result.weight_map_path.read_text()


def test_q_embed_layer_norm(tmp_path):
    tables = {"word": (20, 8), "pos": (10, 8), "seg": (2, 8), "gamma": (8,), "beta": (8,)}
    initializers = {}
    for i, (name, shape) in enumerate(tables.items()):
        initializers[name] = ints(shape, 0, 256, 80 + i)
        initializers[f"{name}_scale"] = np.array(0.01 * (i + 1), F32)
        initializers[f"{name}_zp"] = np.array(128, U8)
    names = ["ids", "segs", "word", "pos", "seg", "gamma", "beta", "mask"]
    names += [f"{name}_scale" for name in tables] + [f"{name}_zp" for name in tables]
    node = helper.make_node(
        "QEmbedLayerNormalization", names, ["y", "mask_index"], domain=MS, epsilon=1e-5
    )
    inputs = [("ids", np.int32, [2, 5]), ("segs", np.int32, [2, 5]), ("mask", np.int32, [2, 5])]
    outputs = [("y", F32, None), ("mask_index", np.int32, None)]
    model = ms_model([node], inputs, outputs, initializers)
    mask = np.ones((2, 5), np.int32)
    mask[0, 3:] = 0
    feeds = {
        "ids": ints((2, 5), 0, 20, 90, np.int32),
        "segs": ints((2, 5), 0, 2, 91, np.int32),
        "mask": mask,
    }
    result = assert_matches(model, tmp_path, feeds, rtol=1e-4, atol=1e-4)
    assert "nn.Embedding(" in result.script_path.read_text()


def test_a_packed_weight_that_contradicts_k_and_n_is_reported_not_converted(tmp_path):
    initializers = {"w": ints((6, 2, 8), 0, 256, 1), "scales": np.ones(12, F32)}
    node = helper.make_node(
        "MatMulNBits", ["x", "w", "scales"], ["y"], domain=MS, K=64, N=6, bits=4, block_size=16
    )
    model = ms_model([node], [("x", F32, [2, 64])], [("y", F32, None)], initializers)
    onnx_path = tmp_path / "bad.onnx"
    onnx.save(model, str(onnx_path))
    result = convert(onnx_path, output=tmp_path / "out")
    assert [u.op_type for u in result.unconverted] == ["MatMulNBits"]
    assert "for K=64, N=6" in result.unconverted[0].reason


@pytest.mark.parametrize(
    "attrs",
    [{"kernel_shape": [2, 2], "strides": [2, 2]},
     {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 0}],
)  # fmt: skip
def test_qlinear_average_pool(tmp_path, attrs):
    inputs, feeds = quantized_inputs(["x"], [1, 3, 6, 6], 100)
    weights = {**q_params("x", 0.05, 128), **q_params("y", 0.04, 120)}
    node = helper.make_node(
        "QLinearAveragePool", ["x", "x_scale", "x_zp", "y_scale", "y_zp"], ["y"], domain=MS, **attrs
    )
    model = ms_model([node], inputs, [("y", U8, None)], weights)
    assert_same_integers(model, tmp_path, feeds)


@pytest.mark.parametrize("op", ["QuantizeLinear", "DequantizeLinear"])
def test_com_microsoft_quantize_and_dequantize_linear_16_bit(tmp_path, op):
    scale, zero = np.array([0.01, 0.02, 0.03], F32), np.array([100, -200, 0], np.int16)
    node = helper.make_node(op, ["x", "scale", "zero"], ["y"], domain=MS, axis=1)
    if op == "QuantizeLinear":
        model = ms_model([node], [("x", F32, [2, 3, 4])], [("y", np.int16, None)], {"scale": scale, "zero": zero})  # fmt: skip
        feeds = {"x": rand(2, 3, 4, seed=101) * 100}
        assert_same_integers(model, tmp_path, feeds)
    else:
        model = ms_model([node], [("x", np.int16, [2, 3, 4])], [("y", F32, None)], {"scale": scale, "zero": zero})  # fmt: skip
        feeds = {"x": ints((2, 3, 4), -3000, 3000, 102, np.int16)}
        assert_matches(model, tmp_path, feeds)


@pytest.mark.parametrize(("quant_type", "k"), [(0, 32), (1, 32), (1, 24)])
def test_matmul_bnb4_is_a_dense_layer_with_float_weights(tmp_path, quant_type, k):
    n, block = 6, 16
    initializers = {
        "w": ints(((n * k + 1) // 2,), 0, 256, 110),
        "absmax": (np.abs(rand(-(-n * k // block), seed=111)) + 0.1).astype(F32),
    }
    node = helper.make_node(
        "MatMulBnb4", ["x", "w", "absmax"], ["y"], domain=MS, K=k, N=n, block_size=block,
        quant_type=quant_type,
    )  # fmt: skip
    model = ms_model([node], [("x", F32, [2, 3, k])], [("y", F32, None)], initializers)
    result = assert_matches(model, tmp_path, rtol=1e-4, atol=1e-4)
    assert "dequantized from" in result.weight_map_path.read_text()
