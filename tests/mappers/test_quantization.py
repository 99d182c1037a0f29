"""Quantization operators against onnxruntime (integer outputs must be exactly equal)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model

F32, U8, I8, I32 = np.float32, np.uint8, np.int8, np.int32


def _rng(seed=0):
    return np.random.default_rng(seed)


def _ties_and_extremes(shape, scale):
    """Values landing on .5 after division by ``scale`` (both parities, both signs), values past
    both ends of every 8-bit range, and random values."""
    special = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, 127.5, -128.5, 300.0, -300.0, 0.0])
    values = np.concatenate([special, _rng().uniform(-200, 200, int(np.prod(shape)))])
    return (values[: int(np.prod(shape))] * scale).astype(F32).reshape(shape)


@pytest.mark.parametrize("opset", [13, 21])
def test_quantize_linear(tmp_path, opset):
    shape = (2, 3, 4)
    inits = {
        "s": np.array(0.5, F32),
        "zu": np.array(3, U8),
        "zi": np.array(-2, I8),
        "sa": np.array([0.5, 0.25, 2.0], F32),
        "za": np.array([0, 128, 255], U8),
        "zb": np.array([-128, 0, 127], I8),
    }
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "zu"], ["y_u8"]),
        helper.make_node("QuantizeLinear", ["x", "s", "zi"], ["y_i8"]),
        helper.make_node("QuantizeLinear", ["x", "s"], ["y_default"]),
        helper.make_node("QuantizeLinear", ["x", "sa", "za"], ["y_axis_u8"], axis=1),
        helper.make_node("QuantizeLinear", ["x", "sa", "zb"], ["y_axis_i8"], axis=-2),
    ]
    outputs = [("y_u8", U8), ("y_i8", I8), ("y_default", U8), ("y_axis_u8", U8)]
    outputs.append(("y_axis_i8", I8))
    if opset >= 21:
        inits["sb"] = np.array([0.5, 2.0, 0.25, 1.0, 4.0, 0.125] * 2, F32).reshape(2, 3, 2)
        inits["zc"] = np.array([1, -3, 0, 5, 127, -128] * 2, I8).reshape(2, 3, 2)
        nodes.append(
            helper.make_node("QuantizeLinear", ["x", "sb", "zc"], ["y_block"], axis=2, block_size=2)
        )
        outputs.append(("y_block", I8))
    model = make_model(
        nodes,
        [("x", F32, shape)],
        [(name, dtype, None) for name, dtype in outputs],
        inits,
        opset=opset,
    )
    assert_matches(model, tmp_path, {"x": _ties_and_extremes(shape, 0.5)})


def test_quantize_linear_run_time_scale(tmp_path):
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=0)
    model = make_model(
        [node],
        [("x", F32, (3, 4)), ("s", F32, (3,)), ("z", I8, (3,))],
        [("y", I8, None)],
        opset=13,
    )
    feeds = {
        "x": _ties_and_extremes((3, 4), 1.0),
        "s": np.array([1.0, 0.5, 4.0], F32),
        "z": np.array([0, -5, 7], I8),
    }
    assert_matches(model, tmp_path, feeds)


def test_dequantize_linear(tmp_path):
    inits = {
        "s": np.array(0.125, F32),
        "zu": np.array(200, U8),
        "sa": np.array([0.5, 0.25, 3.0], F32),
        "za": np.array([0, 128, 255], U8),
        "zi": np.array([-128, 0, 127], I8),
    }
    nodes = [
        helper.make_node("DequantizeLinear", ["xu", "s", "zu"], ["d_u8"]),
        helper.make_node("DequantizeLinear", ["xu", "s"], ["d_nozp"]),
        helper.make_node("DequantizeLinear", ["xu", "sa", "za"], ["d_axis_u8"], axis=1),
        helper.make_node("DequantizeLinear", ["xi", "sa", "zi"], ["d_axis_i8"], axis=1),
        helper.make_node("DequantizeLinear", ["x32", "s"], ["d_i32"]),
    ]
    model = make_model(
        nodes,
        [("xu", U8, (2, 3, 4)), ("xi", I8, (2, 3, 4)), ("x32", I32, (5,))],
        [(name, F32, None) for name in ("d_u8", "d_nozp", "d_axis_u8", "d_axis_i8", "d_i32")],
        inits,
        opset=13,
    )
    rng = _rng(1)
    feeds = {
        "xu": rng.integers(0, 256, (2, 3, 4)).astype(U8),
        "xi": rng.integers(-128, 128, (2, 3, 4)).astype(I8),
        "x32": np.array([-(2**20), -7, 0, 9, 2**20], I32),
    }
    feeds["xu"].flat[:2] = [0, 255]
    feeds["xi"].flat[:2] = [-128, 127]
    assert_matches(model, tmp_path, feeds, rtol=0, atol=0)


@pytest.mark.parametrize(
    "x",
    [
        _rng(2).standard_normal((3, 4)).astype(F32) * 3,
        np.zeros((3, 4), F32),
        np.array([[1, 2, 3, 4], [0.5, 1.5, 2.5, 3.5], [4, 0, 0.25, 1]], F32),
        -np.array([[1, 2, 3, 4], [0.5, 1.5, 2.5, 3.5], [4, 0, 0.25, 1]], F32),
    ],
    ids=["random", "zeros", "positive", "negative"],
)
def test_dynamic_quantize_linear(tmp_path, x):
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "scale", "zp"])
    model = make_model(
        [node], [("x", F32, (3, 4))], [("y", U8, None), ("scale", F32, None), ("zp", U8, None)]
    )
    assert_matches(model, tmp_path, {"x": x}, rtol=0, atol=0)


def test_matmul_integer(tmp_path):
    rng = _rng(3)
    inits = {"az": np.array(7, U8), "bz": np.array([0, 128, 255, 3, 9], U8)}
    inits["b_const"] = rng.integers(0, 256, (4, 5)).astype(U8)
    nodes = [
        helper.make_node("MatMulInteger", ["a", "b"], ["plain"]),
        helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["with_zp"]),
        helper.make_node("MatMulInteger", ["a3", "b_const", "az"], ["batched"]),
        helper.make_node("MatMulInteger", ["ai", "bi"], ["signed"]),
    ]
    model = make_model(
        nodes,
        [
            ("a", U8, (3, 4)),
            ("b", U8, (4, 5)),
            ("a3", U8, (2, 3, 4)),
            ("ai", I8, (3, 4)),
            ("bi", I8, (4, 5)),
        ],
        [(name, I32, None) for name in ("plain", "with_zp", "batched", "signed")],
        inits,
    )
    feeds = {
        "a": rng.integers(0, 256, (3, 4)).astype(U8),
        "b": rng.integers(0, 256, (4, 5)).astype(U8),
        "a3": rng.integers(0, 256, (2, 3, 4)).astype(U8),
        "ai": rng.integers(-128, 128, (3, 4)).astype(I8),
        "bi": rng.integers(-128, 128, (4, 5)).astype(I8),
    }
    assert_matches(model, tmp_path, feeds)


@pytest.mark.parametrize(
    "attrs, x_shape, w_shape",
    [
        ({}, (1, 3, 5, 5), (2, 3, 3, 3)),
        ({"pads": [1, 0, 2, 1], "strides": [2, 1]}, (1, 2, 6, 5), (3, 2, 3, 2)),
        ({"group": 2, "dilations": [2, 2], "pads": [1, 1, 1, 1]}, (1, 4, 6, 6), (4, 2, 2, 2)),
        ({"auto_pad": "SAME_LOWER", "strides": [2, 2]}, (1, 2, 5, 5), (2, 2, 2, 2)),
        # 300 products per output: the data is split into base-16 digits
        ({"pads": [1, 1, 1, 1]}, (1, 12, 4, 4), (2, 12, 5, 5)),
        ({"strides": [2]}, (2, 3, 7), (2, 3, 3)),
    ],
)
def test_conv_integer(tmp_path, attrs, x_shape, w_shape):
    rng = _rng(4)
    inits = {"w": rng.integers(0, 256, w_shape).astype(U8), "xz": np.array(131, U8)}
    inits["wz"] = np.array(17, U8)
    nodes = [
        helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], **attrs),
        helper.make_node("ConvInteger", ["x", "w"], ["y_nozp"], **attrs),
    ]
    model = make_model(
        nodes,
        [("x", U8, x_shape)],
        [("y", I32, None), ("y_nozp", I32, None)],
        inits,
    )
    x = rng.integers(0, 256, x_shape).astype(U8)
    x.flat[:2] = [0, 255]
    assert_matches(model, tmp_path, {"x": x})


def test_conv_integer_large_sum(tmp_path):
    """5000 products of up to 255 * 255: the data and the weight are both split."""
    rng = _rng(5)
    inits = {"w": rng.integers(0, 256, (2, 200, 5, 5)).astype(U8), "wz": np.array(0, U8)}
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"])
    model = make_model(
        [node],
        [("x", U8, (1, 200, 5, 5)), ("xz", U8, ())],
        [("y", I32, None)],
        inits,
    )
    feeds = {"x": np.full((1, 200, 5, 5), 255, U8), "xz": np.array(0, U8)}
    feeds["x"][0, :100] = rng.integers(0, 256, (100, 5, 5))
    inits["w"][1] = 255
    assert_matches(model, tmp_path, feeds)


def _qlinear_inputs(dtype, seed):
    rng = _rng(seed)
    low, high = (0, 256) if dtype == U8 else (-128, 128)
    return rng, lambda shape: rng.integers(low, high, shape).astype(dtype)


@pytest.mark.parametrize("dtype", [U8, I8])
def test_qlinear_matmul(tmp_path, dtype):
    rng, ints = _qlinear_inputs(dtype, 6)
    inits = {
        "as": np.array(0.02, F32),
        "az": np.array(5, dtype),
        "bs": np.array(0.013, F32),
        "bz": np.array(-3 if dtype == I8 else 120, dtype),
        "bsa": np.array([0.01, 0.03, 0.002, 0.05], F32),
        "bza": np.array([1, 2, 3, 4], dtype),
        "ys": np.array(0.07, F32),
        "yz": np.array(10, dtype),
    }
    names = ["a", "as", "az", "b", "bs", "bz", "ys", "yz"]
    nodes = [
        helper.make_node("QLinearMatMul", names, ["y"]),
        helper.make_node(
            "QLinearMatMul", [n + "a" if n in ("bs", "bz") else n for n in names], ["ya"]
        ),
    ]
    model = make_model(
        nodes,
        [("a", dtype, (2, 3, 6)), ("b", dtype, (6, 4))],
        [("y", dtype, None), ("ya", dtype, None)],
        inits,
    )
    assert_matches(model, tmp_path, {"a": ints((2, 3, 6)), "b": ints((6, 4))})


@pytest.mark.parametrize("dtype", [U8, I8])
def test_qlinear_conv(tmp_path, dtype):
    rng, ints = _qlinear_inputs(dtype, 7)
    inits = {
        "xs": np.array(0.03, F32),
        "xz": np.array(7, dtype),
        "w": ints((4, 2, 3, 3)),
        "ws": np.array([0.01, 0.02, 0.005, 0.04], F32),
        "wz": np.array(0, dtype),
        "ys": np.array(0.11, F32),
        "yz": np.array(-5 if dtype == I8 else 100, dtype),
        "bias": rng.integers(-3000, 3000, (4,)).astype(I32),
        "ws1": np.array(0.017, F32),
    }
    names = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"]
    nodes = [
        helper.make_node("QLinearConv", names, ["y"], pads=[1, 1, 1, 1], group=2),
        helper.make_node(
            "QLinearConv", [*names[:4], "ws1", *names[5:8]], ["y1"], strides=[2, 2], group=2
        ),
    ]
    model = make_model(
        nodes, [("x", dtype, (1, 4, 5, 5))], [("y", dtype, None), ("y1", dtype, None)], inits
    )
    assert_matches(model, tmp_path, {"x": ints((1, 4, 5, 5))})


def test_blocked_run_time_parameters(tmp_path):
    """Blocked scales and zero points fed at run time; 5 columns in blocks of 2 (last cut)."""
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1, block_size=2),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], axis=1, block_size=2),
    ]
    model = make_model(
        nodes,
        [("x", F32, (2, 5)), ("s", F32, (2, 3)), ("z", I8, (2, 3))],
        [("q", I8, None), ("d", F32, None)],
        opset=21,
    )
    feeds = {
        "x": _ties_and_extremes((2, 5), 1.0),
        "s": np.array([[1.0, 0.5, 2.0], [0.25, 4.0, 1.0]], F32),
        "z": np.array([[0, -3, 5], [127, -128, 1]], I8),
    }
    assert_matches(model, tmp_path, feeds, rtol=0, atol=0)
