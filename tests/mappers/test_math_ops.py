"""Numeric tests of element-wise math, logic and comparison mappers against onnxruntime."""

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from tests.helpers import assert_matches, make_model

rng = np.random.default_rng(7)
SHAPE = (2, 3, 4)


def uniform(low, high, shape=SHAPE, dtype=np.float32):
    return rng.uniform(low, high, shape).astype(dtype)


def ints(low, high, shape=SHAPE, dtype=np.int32, nonzero=False):
    values = rng.integers(low, high, shape)
    if nonzero:
        values[values == 0] = 1
    return values.astype(dtype)


def check(
    tmp_path,
    op,
    feeds,
    opset=17,
    out_dtype=None,
    initializers=None,
    graph_mode=False,
    rtol=1e-4,
    atol=1e-5,
    **attrs,
):
    """Convert a one-node model of ``op`` over ``feeds`` (+ initializers) and compare with onnxruntime."""
    initializers = initializers or {}
    node = helper.make_node(op, list(feeds) + list(initializers), ["out"], **attrs)
    out_dtype = out_dtype or next(iter(feeds.values())).dtype
    model = make_model(
        [node],
        [(n, a.dtype, a.shape) for n, a in feeds.items()],
        [("out", out_dtype, None)],
        initializers,
        opset=opset,
    )
    return assert_matches(model, tmp_path, feeds=feeds, rtol=rtol, atol=atol, graph_mode=graph_mode)


def script(result):
    """The generated script with spaces removed (the formatter decides the spacing)."""
    return result.script_path.read_text().replace(" ", "")


# --- unary functions -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "op, low, high, opset",
    [
        ("Reciprocal", 0.5, 3.0, 13),
        ("Reciprocal", -3.0, -0.5, 7),
        ("Sqrt", 0.0, 4.0, 13),
        ("Exp", -3, 3, 13),
        ("Log", 0.05, 5.0, 13),
        ("Floor", -5, 5, 13),
        ("Ceil", -5, 5, 7),
        ("Round", -5, 5, 11),
        ("Round", -5, 5, 22),
        ("Erf", -2, 2, 13),
        ("Sin", -4, 4, 7),
        ("Cos", -4, 4, 22),
        ("Tan", -1.2, 1.2, 17),
        ("Asin", -1, 1, 17),
        ("Acos", -1, 1, 17),
        ("Atan", -5, 5, 17),
        ("Sinh", -3, 3, 9),
        ("Cosh", -3, 3, 17),
        ("Asinh", -5, 5, 17),
        ("Acosh", 1.0, 5.0, 17),
        ("Atanh", -0.95, 0.95, 17),
        ("Abs", -3, 3, 13),
        ("Neg", -3, 3, 13),
        ("Sign", -3, 3, 13),
    ],
)
def test_unary_float(tmp_path, op, low, high, opset):
    check(tmp_path, op, {"x": uniform(low, high)}, opset=opset)


@pytest.mark.parametrize("op", ["Exp", "Sqrt", "Abs", "Sin"])
def test_unary_float64(tmp_path, op):
    check(tmp_path, op, {"x": uniform(0.1, 3.0, dtype=np.float64)})


def test_round_half_to_even(tmp_path):
    x = np.array([-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49, 1.51, -1.49, 4.0], np.float32)
    check(tmp_path, "Round", {"x": x}, opset=11)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("op", ["Abs", "Sign", "Neg"])
def test_integer_unary(tmp_path, op, dtype):
    if op == "Neg" and dtype == np.uint8:
        pytest.skip("ONNX Neg has no unsigned types")
    low = 0 if dtype == np.uint8 else -20
    x = ints(low, 20, dtype=dtype)
    x.flat[0] = 0
    check(tmp_path, op, {"x": x}, opset=13)


def test_sign_int16(tmp_path):
    x = np.array([[-3, 0, 5], [0, -1, 2]], np.int16)
    check(tmp_path, "Sign", {"x": x}, opset=13)


# --- Pow -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "exponent, expected",
    [
        (np.array(2.0, np.float32), "**2"),
        (np.array([3], np.int64), "**3"),
        (np.array(0.5, np.float32), "**0.5"),
        (np.array(-1.5, np.float32), "**-1.5"),
    ],
)
def test_pow_scalar_exponent_literal(tmp_path, exponent, expected):
    result = check(
        tmp_path, "Pow", {"x": uniform(0.2, 3.0)}, initializers={"p": exponent}, opset=15
    )
    assert expected in script(result)


def test_pow_tensor_exponent(tmp_path):
    check(tmp_path, "Pow", {"x": uniform(0.2, 2.0), "p": uniform(-2, 2, (4,))}, opset=7)


def test_pow_float_base_int_exponent(tmp_path):
    check(tmp_path, "Pow", {"x": uniform(-2, 2), "p": ints(0, 4, dtype=np.int64)}, opset=15)


def test_pow_negative_base_integer_valued_exponent(tmp_path):
    check(
        tmp_path,
        "Pow",
        {"x": uniform(-2, 2)},
        initializers={"p": np.array(3.0, np.float32)},
        opset=13,
    )


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_pow_integer(tmp_path, dtype):
    check(tmp_path, "Pow", {"x": ints(-4, 5, dtype=dtype), "p": ints(0, 4, dtype=dtype)}, opset=13)


def test_pow_integer_scalar_exponent(tmp_path):
    result = check(
        tmp_path,
        "Pow",
        {"x": ints(-6, 6, dtype=np.int64)},
        initializers={"p": np.array(2, np.int64)},
    )
    assert "**2" in script(result)


def test_pow_integer_base_float_exponent(tmp_path):
    check(tmp_path, "Pow", {"x": ints(1, 9, dtype=np.int32), "p": uniform(0.0, 2.0)}, opset=15)


# --- Mod -------------------------------------------------------------------------------------
def test_mod_float_fmod(tmp_path):
    check(
        tmp_path,
        "Mod",
        {"a": uniform(-10, 10), "b": uniform(1, 3) * np.sign(uniform(-1, 1))},
        fmod=1,
    )


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64])
@pytest.mark.parametrize("fmod", [0, 1])
def test_mod_integer(tmp_path, dtype, fmod):
    a = ints(-30, 30, dtype=dtype)
    b = ints(-7, 8, dtype=dtype, nonzero=True)
    check(tmp_path, "Mod", {"a": a, "b": b}, fmod=fmod, opset=13)


def test_mod_divisor_sign_python_style(tmp_path):
    a = np.array([-7, -7, 7, 7, 5, -5], np.int32)
    b = np.array([3, -3, 3, -3, 5, 3], np.int32)
    result = check(tmp_path, "Mod", {"a": a, "b": b}, opset=10)
    assert "out=a%b" in script(result)  # script() drops whitespace


def test_mod_unsigned_and_scalar_divisor(tmp_path):
    check(
        tmp_path,
        "Mod",
        {"a": ints(0, 200, dtype=np.uint8)},
        initializers={"b": np.array(7, np.uint8)},
    )


def test_mod_by_an_integer_constant_is_a_python_number(tmp_path):
    """CANINE hashes ids with ``ids % 64``, not ``ops.remainder(ids, ms.Tensor(64, ms.int64))``."""
    result = check(
        tmp_path,
        "Mod",
        {"a": ints(-200, 200, dtype=np.int64)},
        initializers={"b": np.array(64, np.int64)},
    )
    assert "out=a%64" in script(result)


# --- Max / Min / Mean ------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["Max", "Min"])
@pytest.mark.parametrize("count", [1, 2, 3])
def test_max_min_variadic(tmp_path, op, count):
    shapes = [SHAPE, (3, 1), (4,)][:count]
    feeds = {f"x{i}": uniform(-3, 3, shape) for i, shape in enumerate(shapes)}
    check(tmp_path, op, feeds, opset=13)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("op", ["Max", "Min"])
def test_max_min_integer(tmp_path, op, dtype):
    check(
        tmp_path, op, {"a": ints(0, 50, dtype=dtype), "b": ints(0, 50, (4,), dtype=dtype)}, opset=12
    )


def test_max_with_scalar_constant(tmp_path):
    result = check(
        tmp_path,
        "Max",
        {"x": uniform(-2, 2)},
        initializers={"c": np.array(0.25, np.float32)},
        opset=8,
    )
    assert "ops.maximum(x,0.25)" in script(result)


@pytest.mark.parametrize("count", [1, 2, 3])
def test_mean(tmp_path, count):
    shapes = [SHAPE, (1, 3, 4), (4,)][:count]
    check(
        tmp_path,
        "Mean",
        {f"x{i}": uniform(-3, 3, shape) for i, shape in enumerate(shapes)},
        opset=13,
    )


# --- Where / IsNaN / IsInf / CastLike ----------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8])
def test_where(tmp_path, dtype):
    cond = rng.integers(0, 2, SHAPE).astype(bool)
    if np.dtype(dtype).kind in "iu":
        x, y = ints(0, 9, (3, 4), dtype), ints(0, 9, (4,), dtype)
    else:
        x, y = uniform(-1, 1, (3, 4)), uniform(-1, 1, (4,))
    check(tmp_path, "Where", {"c": cond, "x": x, "y": y}, out_dtype=dtype, opset=16)


def test_where_scalar_constant(tmp_path):
    feeds = {"c": rng.integers(0, 2, SHAPE).astype(bool), "x": uniform(-1, 1)}
    check(
        tmp_path,
        "Where",
        feeds,
        initializers={"y": np.array(0.0, np.float32)},
        out_dtype=np.float32,
        opset=9,
    )


SPECIALS = np.array([[1.0, np.inf, -np.inf, np.nan], [0.0, -2.0, np.inf, 3.0]], np.float32)


@pytest.mark.parametrize("opset", [9, 13, 20])
def test_isnan(tmp_path, opset):
    check(tmp_path, "IsNaN", {"x": SPECIALS}, out_dtype=np.bool_, opset=opset)


@pytest.mark.parametrize("positive, negative", [(1, 1), (1, 0), (0, 1), (0, 0)])
def test_isinf(tmp_path, positive, negative):
    check(
        tmp_path,
        "IsInf",
        {"x": SPECIALS},
        out_dtype=np.bool_,
        opset=10,
        detect_positive=positive,
        detect_negative=negative,
    )


def test_isinf_defaults_float64(tmp_path):
    check(tmp_path, "IsInf", {"x": SPECIALS.astype(np.float64)}, out_dtype=np.bool_, opset=20)


@pytest.mark.parametrize(
    "source, target",
    [
        (np.float32, np.int32),
        (np.int32, np.float32),
        (np.float32, np.bool_),
        (np.int64, np.float64),
        (np.float32, np.float32),
        (np.bool_, np.float32),
    ],
)
def test_cast_like(tmp_path, source, target):
    x = (uniform(-9, 9) if np.dtype(source).kind == "f" else ints(-2, 3)).astype(source)
    like = np.zeros((1,), target)
    check(tmp_path, "CastLike", {"x": x, "like": like}, out_dtype=target, opset=15)


# --- bit operations ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.uint64])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bit_shift(tmp_path, direction, dtype):
    check(
        tmp_path,
        "BitShift",
        {"x": ints(0, 60, dtype=dtype), "s": ints(0, 3, (4,), dtype=dtype)},
        direction=direction,
        opset=11,
    )


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bit_shift_out_of_range_amounts(tmp_path, direction):
    x = np.array([200, 7, 1, 255, 9, 128], np.uint8)
    s = np.array([8, 9, 0, 7, 200, 1], np.uint8)
    check(tmp_path, "BitShift", {"x": x, "s": s}, direction=direction, opset=11)


def test_max_uint16(tmp_path):
    """onnxruntime has no uint16 Max kernel: compare with numpy (the ONNX reference) instead."""
    a, b = ints(0, 60000, dtype=np.uint16), ints(0, 60000, (4,), dtype=np.uint16)
    node = helper.make_node("Max", ["a", "b"], ["out"])
    model = make_model(
        [node], [("a", np.uint16, a.shape), ("b", np.uint16, b.shape)], [("out", np.uint16, None)]
    )
    onnx.save(model, str(tmp_path / "model.onnx"))
    result = convert(tmp_path / "model.onnx", output=tmp_path / "out")
    (got,) = run_mindspore(result.script_path, result.checkpoint_path, [a, b])
    assert got.dtype == np.uint16
    np.testing.assert_array_equal(got, np.maximum(a, b))


def test_bit_shift_scalar_constant(tmp_path):
    check(
        tmp_path,
        "BitShift",
        {"x": ints(0, 200, dtype=np.uint8)},
        initializers={"s": np.array(2, np.uint8)},
        direction="RIGHT",
        opset=11,
    )


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
def test_bitwise_binary(tmp_path, op, dtype):
    low = 0 if np.dtype(dtype).kind == "u" else -100
    check(
        tmp_path,
        op,
        {"a": ints(low, 100, dtype=dtype), "b": ints(low, 100, (4,), dtype=dtype)},
        opset=18,
    )


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint16])
def test_bitwise_not(tmp_path, dtype):
    low = 0 if np.dtype(dtype).kind == "u" else -100
    check(tmp_path, "BitwiseNot", {"a": ints(low, 100, dtype=dtype)}, opset=18)


# --- logic and comparison ----------------------------------------------------------------------
@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logical_binary(tmp_path, op):
    feeds = {
        "a": rng.integers(0, 2, SHAPE).astype(bool),
        "b": rng.integers(0, 2, (3, 1)).astype(bool),
    }
    check(tmp_path, op, feeds, opset=7)


def test_not(tmp_path):
    check(tmp_path, "Not", {"a": rng.integers(0, 2, SHAPE).astype(bool)})


@pytest.mark.parametrize("op", ["Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.int8])
def test_compare(tmp_path, op, dtype):
    if np.dtype(dtype).kind == "f":
        a, b = np.round(uniform(-2, 2)), np.round(uniform(-2, 2, (3, 4)))  # rounded: ties occur
    else:
        a, b = ints(-2, 3, dtype=dtype), ints(-2, 3, (3, 4), dtype=dtype)
    check(tmp_path, op, {"a": a, "b": b}, out_dtype=np.bool_, opset=13)


@pytest.mark.parametrize(
    "op, opset",
    [
        ("Equal", 7),
        ("Greater", 7),
        ("Less", 9),
        ("Equal", 11),
        ("GreaterOrEqual", 12),
        ("LessOrEqual", 16),
        ("Equal", 19),
    ],
)
def test_compare_opsets(tmp_path, op, opset):
    dtype = np.int64 if opset < 11 and op == "Equal" else np.float32
    a, b = ints(-2, 3, dtype=dtype), ints(-2, 3, (4,), dtype=dtype)
    check(tmp_path, op, {"a": a, "b": b}, out_dtype=np.bool_, opset=opset)


def test_equal_bool(tmp_path):
    feeds = {
        "a": rng.integers(0, 2, SHAPE).astype(bool),
        "b": rng.integers(0, 2, (4,)).astype(bool),
    }
    check(tmp_path, "Equal", feeds, out_dtype=np.bool_, opset=13)


def test_compare_scalar_constant(tmp_path):
    result = check(
        tmp_path,
        "Greater",
        {"a": uniform(-1, 1)},
        initializers={"b": np.array(0.1, np.float32)},
        out_dtype=np.bool_,
    )
    assert ">0.1" in script(result)


# --- graph mode -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "op, feeds, attrs, out_dtype",
    [
        ("Mod", {"a": ints(-20, 20), "b": ints(-5, 6, nonzero=True)}, {}, None),
        ("IsInf", {"x": SPECIALS}, {"detect_negative": 0}, np.bool_),
        ("Sign", {"x": ints(-3, 3, dtype=np.int8)}, {}, None),
        ("Pow", {"x": ints(1, 9), "p": uniform(0.0, 2.0)}, {}, None),
        ("LessOrEqual", {"a": uniform(-1, 1), "b": uniform(-1, 1)}, {}, np.bool_),
    ],
)
def test_graph_mode(tmp_path, op, feeds, attrs, out_dtype):
    check(tmp_path, op, feeds, out_dtype=out_dtype, graph_mode=True, **attrs)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_mod_follows_numpy_on_edge_cases(tmp_path, dtype):
    """fmod=0 on floats (opset 28) is numpy's mod: infinities, signed zeros, NaNs."""
    x = np.array([0, -0.0, 0, -0.0, -3, 3, -1, 1, np.inf, -np.inf, 1, 1, np.nan, 5.5, -5.5], dtype)
    y = np.array([-2, 2, 2, -2, np.inf, np.inf, -np.inf, -np.inf, 2, 2, 0, -0.0, 2, -2, 2], dtype)
    node = helper.make_node("Mod", ["x", "y"], ["z"], fmod=0)
    model = make_model(
        [node], [("x", dtype, [15]), ("y", dtype, [15])], [("z", dtype, None)], opset=28
    )
    onnx.save(model, tmp_path / "m.onnx")
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out")
    (got,) = run_mindspore(result.script_path, result.checkpoint_path, [x, y])
    with np.errstate(invalid="ignore", divide="ignore"):
        want = np.mod(x, y)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]))


def test_a_log_truncated_to_a_bucket_lands_on_whole_numbers(tmp_path):
    """T5 and WavLM's relative position buckets: ``int(log(d / 8) / log(16) * 8)``. Whole
    numbers (d = 16, 32, 64) must not come out one lower, as MindSpore's float32 log would
    make them; the log is computed in float64."""
    nodes = [
        helper.make_node("Div", ["d", "exact"], ["ratio"]),
        helper.make_node("Log", ["ratio"], ["log"]),
        helper.make_node("Div", ["log", "span"], ["scaled"]),
        helper.make_node("Mul", ["scaled", "buckets"], ["wide"]),
        helper.make_node("Cast", ["wide"], ["y"], to=onnx.TensorProto.INT64),
    ]
    constants = {
        "exact": np.array(8.0, np.float32),
        "span": np.array(np.log(16.0), np.float32),
        "buckets": np.array(8.0, np.float32),
    }
    model = make_model(nodes, [("d", np.float32, ["n"])], [("y", np.int64, None)], constants)
    distances = np.arange(8, 400, dtype=np.float32)
    result = assert_matches(model, tmp_path, {"d": distances}, shape=[f"{distances.size}"])
    assert "ms.float64" in result.script_path.read_text()
