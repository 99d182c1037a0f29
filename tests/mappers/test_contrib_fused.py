"""onnxruntime's fused float operators (com.microsoft) against onnxruntime itself."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from mindconverter.check.network import run_mindspore
from mindconverter.check.verify import run_onnxruntime
from tests.helpers import assert_matches, convert_fully, make_model

MS = "com.microsoft"
F32 = np.float32


def ms_model(nodes, inputs, outputs, initializers=None, opset=17):
    """A model whose nodes may come from the com.microsoft domain."""
    return make_model(nodes, inputs, outputs, initializers, opset=opset, extra_opsets={MS: 1})


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(F32)


@pytest.mark.parametrize(
    ("op", "extra", "attrs"),
    [
        ("Gelu", {}, {}),
        ("BiasGelu", {"b": rand(8, seed=1)}, {}),
        ("FastGelu", {"b": rand(8, seed=1)}, {}),
        ("FastGelu", {}, {}),
        ("QuickGelu", {}, {"alpha": 1.5}),
    ],
)
def test_gelu_family(tmp_path, op, extra, attrs):
    node = helper.make_node(op, ["x", *extra], ["y"], domain=MS, **attrs)
    model = ms_model([node], [("x", F32, [2, 3, 8])], [("y", F32, None)], extra)
    assert_matches(model, tmp_path)


def test_bias_add_against_its_definition(tmp_path):
    # onnxruntime runs BiasAdd on CUDA only: compare with its definition, x + bias + skip
    bias = rand(8, seed=2)
    node = helper.make_node("BiasAdd", ["x", "b", "skip"], ["y"], domain=MS)
    model = ms_model(
        [node],
        [("x", F32, [2, 3, 8]), ("skip", F32, [2, 3, 8])],
        [("y", F32, None)],
        {"b": bias},
    )
    result = convert_fully(model, tmp_path)
    x, skip = rand(2, 3, 8, seed=20), rand(2, 3, 8, seed=21)
    (got,) = run_mindspore(result.script_path, result.checkpoint_path, [x, skip])
    np.testing.assert_allclose(got, x + bias + skip, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "attrs", [{}, {"transA": 1, "alpha": 0.5}, {"transB": 1}, {"transA": 1, "transB": 1}]
)
def test_fused_matmul(tmp_path, attrs):
    a_shape = [2, 5, 4] if attrs.get("transA") else [2, 4, 5]
    b_shape = [2, 6, 5] if attrs.get("transB") else [2, 5, 6]
    node = helper.make_node("FusedMatMul", ["a", "b"], ["y"], domain=MS, **attrs)
    model = ms_model([node], [("a", F32, a_shape), ("b", F32, b_shape)], [("y", F32, None)])
    assert_matches(model, tmp_path)


@pytest.mark.parametrize(
    ("activation", "params"),
    [("Relu", []), ("LeakyRelu", [0.2]), ("Clip", [-0.5, 0.5]), ("Sigmoid", [])],
)
def test_fused_conv(tmp_path, activation, params):
    attrs = {"activation": activation, "pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}
    if params:
        attrs["activation_params"] = params
    node = helper.make_node("FusedConv", ["x", "w", "b"], ["y"], domain=MS, **attrs)
    weights = {"w": rand(4, 3, 3, 3, seed=3), "b": rand(4, seed=4)}
    model = ms_model([node], [("x", F32, [1, 3, 8, 8])], [("y", F32, None)], weights)
    assert_matches(model, tmp_path)


def test_fused_gemm(tmp_path):
    node = helper.make_node(
        "FusedGemm",
        ["x", "w", "b"],
        ["y"],
        domain=MS,
        transB=1,
        activation="LeakyRelu",
        activation_alpha=0.1,
    )
    weights = {"w": rand(6, 4, seed=5), "b": rand(6, seed=6)}
    model = ms_model([node], [("x", F32, [3, 4])], [("y", F32, None)], weights)
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("with_bias", [False, True])
def test_skip_layer_norm_is_a_layer_norm_cell(tmp_path, with_bias):
    names = ["x", "skip", "gamma", "beta"] + (["bias"] if with_bias else [])
    weights = {"gamma": rand(8, seed=7) + 1, "beta": rand(8, seed=8)}
    if with_bias:
        weights["bias"] = rand(8, seed=9)
    node = helper.make_node(
        "SkipLayerNormalization", names, ["y", "", "", "sum"], domain=MS, epsilon=1e-5
    )
    model = ms_model(
        [node],
        [("x", F32, [2, 3, 8]), ("skip", F32, [2, 3, 8])],
        [("y", F32, None), ("sum", F32, None)],
        weights,
    )
    result = assert_matches(model, tmp_path)
    script = result.script_path.read_text()
    assert "nn.LayerNorm(" in script


def test_skip_simplified_layer_norm(tmp_path):
    node = helper.make_node(
        "SkipSimplifiedLayerNormalization", ["x", "skip", "gamma"], ["y"], domain=MS, epsilon=1e-6
    )
    model = ms_model(
        [node],
        [("x", F32, [2, 3, 8]), ("skip", F32, [2, 3, 8])],
        [("y", F32, None)],
        {"gamma": rand(8, seed=10)},
    )
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("opset", [14, 17])
def test_simplified_layer_norm_in_the_onnx_domain(tmp_path, opset):
    node = helper.make_node(
        "SimplifiedLayerNormalization", ["x", "scale"], ["y"], axis=-1, epsilon=1e-5
    )
    model = ms_model(
        [node], [("x", F32, [2, 3, 8])], [("y", F32, None)], {"scale": rand(8, seed=11)}, opset
    )
    assert_matches(model, tmp_path)


def test_layer_norm_before_opset_17(tmp_path):
    node = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], epsilon=1e-5)
    weights = {"g": rand(8, seed=12), "b": rand(8, seed=13)}
    model = ms_model([node], [("x", F32, [2, 3, 8])], [("y", F32, None)], weights, opset=14)
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("with_segments", [False, True])
def test_embed_layer_norm(tmp_path, with_segments):
    names = ["ids", "seg" if with_segments else "", "word", "pos"]
    names += ["segtab" if with_segments else "", "gamma", "beta", "mask"]
    node = helper.make_node(
        "EmbedLayerNormalization", names, ["y", "mask_index"], domain=MS, epsilon=1e-5
    )
    weights = {
        "word": rand(20, 8, seed=14),
        "pos": rand(10, 8, seed=15),
        "gamma": rand(8, seed=16),
        "beta": rand(8, seed=17),
    }
    inputs = [("ids", np.int32, [2, 5])]
    if with_segments:
        weights["segtab"] = rand(2, 8, seed=18)
        inputs.append(("seg", np.int32, [2, 5]))
    inputs.append(("mask", np.int32, [2, 5]))
    model = ms_model([node], inputs, [("y", F32, None), ("mask_index", np.int32, None)], weights)
    rng = np.random.default_rng(3)
    feeds = {"ids": rng.integers(0, 20, (2, 5)).astype(np.int32)}
    if with_segments:
        feeds["seg"] = rng.integers(0, 2, (2, 5)).astype(np.int32)
    feeds["mask"] = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32)
    result = assert_matches(model, tmp_path, feeds)
    assert "nn.Embedding(" in result.script_path.read_text()


def test_gemm_fast_gelu_against_matmul_and_fast_gelu(tmp_path):
    # onnxruntime runs GemmFastGelu on GPUs only: compare with its MatMul + FastGelu
    weights = {"w": rand(8, 6, seed=30), "b": rand(6, seed=31)}
    node = helper.make_node("GemmFastGelu", ["x", "w", "b"], ["y"], domain=MS)
    model = ms_model([node], [("x", F32, [2, 3, 8])], [("y", F32, None)], weights)
    result = convert_fully(model, tmp_path)
    x = rand(2, 3, 8, seed=32)
    got = run_mindspore(result.script_path, result.checkpoint_path, [x])
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["xw"]),
        helper.make_node("FastGelu", ["xw", "b"], ["y"], domain=MS),
    ]
    reference = ms_model(nodes, [("x", F32, [2, 3, 8])], [("y", F32, None)], weights)
    np.testing.assert_allclose(got[0], run_onnxruntime(reference, {"x": x}, ["y"])[0], 1e-4, 1e-5)
