"""Numeric tests of the extra reductions, ArgMax/ArgMin and CumSum against onnxruntime."""

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model, single_op_model

REDUCE_OPS = [
    "ReduceSum",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceSumSquare",
]


def _positive_feeds(shape=(2, 3, 4)):
    rng = np.random.default_rng(1)
    return {"x": rng.uniform(0.5, 1.5, shape).astype(np.float32)}


def _reduce_model(op, opset, axes, keep, noop=None, shape=(2, 3, 4)):
    since = 13 if op == "ReduceSum" else 18
    attrs = {"keepdims": keep}
    if noop is not None:
        attrs["noop_with_empty_axes"] = noop
    inits = {}
    if axes is not None:
        if opset >= since:
            inits["axes"] = np.array(axes, np.int64)
        else:
            attrs["axes"] = axes
    return single_op_model(op, {"x": shape}, initializers=inits, opset=opset, **attrs)


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize(
    "opset, axes, keep",
    [
        (11, [1], 1),
        (13, [0, -1], 0),
        (18, [-2], 1),
        (18, None, 0),
        (17, None, 1),
    ],
)
def test_reduce(tmp_path, op, opset, axes, keep):
    model = _reduce_model(op, opset, axes, keep)
    assert_matches(model, tmp_path, feeds=_positive_feeds())


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceSumSquare", "ReduceL2"])
def test_reduce_noop_with_empty_axes(tmp_path, op):
    model = _reduce_model(op, 18, None, 1, noop=1)
    assert_matches(model, tmp_path, feeds=_positive_feeds())


def test_reduce_sum_int64(tmp_path):
    node = helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)
    model = make_model(
        [node],
        [("x", np.int64, (3, 4))],
        [("y", np.int64, None)],
        {"axes": np.array([1], np.int64)},
        opset=13,
    )
    assert_matches(model, tmp_path)


def _arg_model(op, dtype=np.float32, **attrs):
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    return make_model([node], [("x", dtype, (3, 5))], [("y", np.int64, None)], opset=13)


TIES = {"x": np.array([[1, 3, 3, 0, 3], [2, 2, 1, 2, 1], [0, 0, 0, 0, 0]], np.float32)}


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"axis": 1},
        {"axis": -1, "keepdims": 0},
        {"axis": 1, "select_last_index": 1},
        {"axis": 0, "keepdims": 0, "select_last_index": 1},
    ],
)
def test_arg_reduce(tmp_path, op, attrs):
    assert_matches(_arg_model(op, **attrs), tmp_path, feeds=TIES)


@pytest.mark.parametrize(
    "attrs", [{}, {"exclusive": 1}, {"reverse": 1}, {"exclusive": 1, "reverse": 1}]
)
@pytest.mark.parametrize("axis", [1, -1, 0])
def test_cumsum(tmp_path, attrs, axis):
    model = single_op_model(
        "CumSum", {"x": (3, 4)}, initializers={"a": np.array(axis, np.int64)}, opset=14, **attrs
    )
    assert_matches(model, tmp_path)


def test_cumsum_int(tmp_path):
    node = helper.make_node("CumSum", ["x", "a"], ["y"], exclusive=1)
    model = make_model(
        [node],
        [("x", np.int64, (6,))],
        [("y", np.int64, None)],
        {"a": np.array([0], np.int64)},
        opset=11,
    )
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("opset, keep", [(13, 1), (13, 0), (18, 1)])
def test_reduce_mean(tmp_path, opset, keep):
    if opset >= 18:
        model = single_op_model(
            "ReduceMean",
            {"x": (2, 3, 4)},
            opset=opset,
            initializers={"a": np.array([1, -1], np.int64)},
            keepdims=keep,
        )
    else:
        model = single_op_model(
            "ReduceMean", {"x": (2, 3, 4)}, opset=opset, axes=[1], keepdims=keep
        )
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceProd", "ReduceL1", "ReduceSumSquare"])
def test_integer_reductions_keep_int32(tmp_path, op):
    """MindSpore sums and multiplies int32 in int64: the result is cast back as ONNX says."""
    from tests.helpers import convert_and_run

    model = make_model(
        [helper.make_node(op, ["x"], ["y"], keepdims=0)],
        [("x", np.int32, (2, 3))],
        [("y", np.int32, None)],
        opset=18,
    )
    feeds = {"x": np.arange(-3, 3, dtype=np.int32).reshape(2, 3)}
    result, (got,), (want,) = convert_and_run(model, tmp_path, feeds=feeds)
    assert got.dtype == want.dtype == np.int32
    np.testing.assert_array_equal(got, want)
