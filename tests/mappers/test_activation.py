"""Numeric tests of the extra activation mappers (Elu ... Hardmax) against onnxruntime."""

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, convert_and_run, make_model, single_op_model
from tests.mappers.builders import randn

rng = np.random.default_rng(11)
SHAPE = (2, 3, 5)


def normal(shape=SHAPE, scale=2.0, dtype=np.float32):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def check(tmp_path, op, x, opset=17, graph_mode=False, rtol=1e-4, atol=1e-5, **attrs):
    """Convert a one-node model ``op(x)`` and compare with onnxruntime; returns the spaceless script."""
    node = helper.make_node(op, ["x"], ["out"], **attrs)
    model = make_model([node], [("x", x.dtype, x.shape)], [("out", x.dtype, None)], opset=opset)
    result = assert_matches(
        model, tmp_path, feeds={"x": x}, rtol=rtol, atol=atol, graph_mode=graph_mode
    )
    return result.script_path.read_text().replace(" ", "")


@pytest.mark.parametrize(
    "op, attrs, opset, expected",
    [
        ("Elu", {}, 7, "ops.elu(x)"),
        ("Elu", {"alpha": 0.5}, 22, "ops.expm1"),
        ("Selu", {}, 7, "ops.selu(x)"),
        ("Selu", {"alpha": 1.5, "gamma": 2.0}, 17, "ops.expm1"),
        ("Selu", {"gamma": 1.5}, 22, "ops.expm1"),
        ("Selu", {"alpha": 1.0, "gamma": 3.0}, 17, "ops.elu(x)"),
        ("Celu", {}, 12, "ops.celu(x)"),
        ("Celu", {"alpha": 2.5}, 17, "alpha=2.5"),
        ("Gelu", {}, 20, "ops.gelu(x)"),
        ("Gelu", {"approximate": "tanh"}, 20, 'approximate="tanh"'),
        ("Mish", {}, 18, "ops.mish(x)"),
        ("Softplus", {}, 7, "ops.softplus(x)"),
        ("Softplus", {}, 22, "ops.softplus(x)"),
        ("Softsign", {}, 17, "ops.softsign(x)"),
        ("ThresholdedRelu", {}, 10, "ops.threshold(x,1.0,0.0)"),
        ("ThresholdedRelu", {"alpha": -0.3}, 22, "ops.threshold(x,-0.3,0.0)"),
        ("Shrink", {}, 9, "ops.hardshrink(x)"),
        ("Shrink", {"lambd": 1.5}, 17, "ops.hardshrink(x,lambd=1.5)"),
        ("Shrink", {"bias": 0.5}, 17, "ops.softshrink(x)"),
        ("Shrink", {"bias": 1.2, "lambd": 1.2}, 17, "ops.softshrink(x,lambd=1.2)"),
        ("Shrink", {"bias": 0.3, "lambd": 1.0}, 17, "ops.where"),
    ],
)
def test_activation(tmp_path, op, attrs, opset, expected):
    assert expected in check(tmp_path, op, normal(), opset=opset, **attrs)


def test_softplus_large_values(tmp_path):
    x = np.linspace(-40, 40, 30, dtype=np.float32).reshape(2, 15)
    check(tmp_path, "Softplus", x)


def test_shrink_boundaries(tmp_path):
    x = np.array([-1.0, -0.5, -0.49, 0.0, 0.5, 0.51, 1.0], np.float32)
    check(tmp_path, "Shrink", x, bias=0.2)
    check(tmp_path / "soft", "Shrink", x)


@pytest.mark.parametrize(
    "attrs", [{"bias": 1.0, "lambd": 1.5}, {"bias": 0.0, "lambd": 2.0}, {"bias": 0.5}]
)
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8])
def test_shrink_integer(tmp_path, dtype, attrs):
    x = rng.integers(-5, 6, SHAPE).astype(dtype)
    check(tmp_path, "Shrink", x, **attrs)


# --- Hardmax ----------------------------------------------------------------------------------
def ties(shape=(2, 3, 4)):
    """Small integer-valued floats, so equal maxima occur (the first one must win)."""
    return rng.integers(0, 3, shape).astype(np.float32)


@pytest.mark.parametrize("opset", [7, 11])
@pytest.mark.parametrize("axis", [None, 0, 2, -1, -2])
def test_hardmax_flatten(tmp_path, opset, axis):
    if opset < 11 and axis is not None and axis < 0:
        pytest.skip("negative axes arrive with opset 11")
    attrs = {} if axis is None else {"axis": axis}
    check(tmp_path, "Hardmax", ties(), opset=opset, **attrs)


@pytest.mark.parametrize("axis", [None, 0, 1, -1, -3])
def test_hardmax_axis(tmp_path, axis):
    attrs = {} if axis is None else {"axis": axis}
    check(tmp_path, "Hardmax", ties(), opset=13, **attrs)


def test_hardmax_random_values(tmp_path):
    check(tmp_path, "Hardmax", normal((3, 4, 2, 5)), opset=13, axis=2)


def test_hardmax_opsets_differ(tmp_path):
    """The same node means different things before and after opset 13 (flatten vs. one axis)."""
    x = ties()
    old = check(tmp_path / "old", "Hardmax", x, opset=11, axis=1)
    new = check(tmp_path / "new", "Hardmax", x, opset=13, axis=1)
    assert "ops.reshape" in old and "ops.reshape" not in new


# --- Swish (opset 24) --------------------------------------------------------------------------
@pytest.mark.parametrize("attrs", [{}, {"alpha": 0.5}])
def test_swish(tmp_path, attrs):
    check(tmp_path, "Swish", normal(), opset=24, **attrs)


# --- graph mode -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "op, attrs, opset",
    [
        ("Selu", {"alpha": 1.5, "gamma": 2.0}, 17),
        ("Hardmax", {"axis": 1}, 11),
        ("Hardmax", {"axis": 1}, 13),
        ("Gelu", {"approximate": "tanh"}, 20),
        ("Shrink", {"bias": 0.3, "lambd": 1.0}, 17),
        ("ThresholdedRelu", {"alpha": 0.5}, 17),
    ],
)
def test_graph_mode(tmp_path, op, attrs, opset):
    check(
        tmp_path, op, ties() if op == "Hardmax" else normal(), opset=opset, graph_mode=True, **attrs
    )


@pytest.mark.parametrize(
    "op, attrs",
    [
        ("Relu", {}),
        ("Sigmoid", {}),
        ("Tanh", {}),
        ("LeakyRelu", {"alpha": 0.1}),
        ("LeakyRelu", {}),
        ("HardSigmoid", {}),
        ("HardSigmoid", {"alpha": 1 / 6, "beta": 0.5}),
        ("HardSwish", {}),
        ("Softmax", {}),
        ("Softmax", {"axis": 1}),
        ("LogSoftmax", {"axis": -1}),
        ("Identity", {}),
    ],
)
def test_unary(tmp_path, op, attrs):
    assert_matches(single_op_model(op, {"x": (2, 3, 4)}, **attrs), tmp_path)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_softmax_opset11_flattens(tmp_path, axis):
    assert_matches(single_op_model("Softmax", {"x": (2, 3, 4)}, opset=11, axis=axis), tmp_path)


def test_clip_attribute_and_inputs(tmp_path):
    assert_matches(
        single_op_model("Clip", {"x": (2, 5)}, opset=9, min=-0.5, max=0.5), tmp_path / "a"
    )
    inits = {"lo": np.array(0.0, np.float32), "hi": np.array(6.0, np.float32)}
    assert_matches(single_op_model("Clip", {"x": (2, 5)}, initializers=inits), tmp_path / "b")
    model = single_op_model(
        "Clip",
        {"x": (2, 5)},
        input_names=["x", "", "hi"],
        initializers={"hi": np.array(0.3, np.float32)},
    )
    assert_matches(model, tmp_path / "c")


@pytest.mark.parametrize("slope_shape", [(3, 1, 1), (1,), (3, 4, 4)])
def test_prelu(tmp_path, slope_shape):
    model = single_op_model("PRelu", {"x": (1, 3, 4, 4)}, initializers={"s": randn(*slope_shape)})
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax_with_a_fully_masked_row_keeps_the_other_rows(tmp_path, op):
    """MindSpore's CPU softmax zeroes all rows after an all -inf row; the mapper must avoid that."""
    nodes = [
        helper.make_node("Add", ["x", "mask"], ["masked"]),
        helper.make_node(op, ["masked"], ["y"], axis=-1),
    ]
    mask = np.zeros((2, 4, 5), np.float32)
    mask[0, 1, :] = -np.inf
    mask[1, 2, 3] = -np.inf
    model = make_model(
        nodes, [("x", np.float32, (2, 4, 5))], [("y", np.float32, None)], {"mask": mask}
    )
    result, ms_out, ort_out = convert_and_run(model, tmp_path)
    np.testing.assert_allclose(ms_out[0], ort_out[0], rtol=1e-5, atol=1e-6, equal_nan=True)
    unmasked = np.isfinite(mask)
    unmasked[0] = False
    unmasked[0, 2:] = True  # the rows after the fully masked one must survive
    assert np.isfinite(ms_out[0][unmasked]).all()
