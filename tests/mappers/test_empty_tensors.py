"""Tensors with a size-0 axis flow through: reductions over an empty axis give ONNX's identity
(MindSpore's kernels return uninitialised memory there), empty Split sections, Trilu of an empty
matrix, elementwise operators and Concat with an empty part. Checked against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model

REDUCTIONS = [
    "ReduceSum",
    "ReduceProd",
    "ReduceMax",
    "ReduceMin",
    "ReduceL1",
    "ReduceL2",
    "ReduceSumSquare",
    "ReduceLogSum",
    "ReduceLogSumExp",
]


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("op_type", REDUCTIONS)
def test_reduction_over_an_empty_axis_gives_the_identity(op_type, dtype, tmp_path):
    if dtype is np.int32 and op_type in ("ReduceL2", "ReduceLogSum", "ReduceLogSumExp"):
        pytest.skip("float-only reduction")
    axes = helper.make_tensor("axes", 7, [1], [1])
    node = helper.make_node(op_type, ["x", "axes"], ["y"], keepdims=0)
    model = make_model(
        [helper.make_node("Constant", [], ["axes"], value=axes), node],
        [("x", dtype, [3, 0, 2])],
        [("y", dtype, None)],
        opset=18,
    )
    feeds = {"x": np.zeros((3, 0, 2), dtype)}
    assert_matches(model, tmp_path, feeds)


def test_split_with_empty_sections_and_trilu_of_an_empty_matrix(tmp_path):
    sizes = helper.make_tensor("sizes", 7, [3], [2, 0, 3])
    nodes = [
        helper.make_node("Constant", [], ["sizes"], value=sizes),
        helper.make_node("Split", ["x", "sizes"], ["a", "b", "c"], axis=1),
        helper.make_node("Trilu", ["e"], ["t"], upper=0),
        helper.make_node("Relu", ["e"], ["r"]),
        helper.make_node("Concat", ["x", "e"], ["j"], axis=0),
    ]
    model = make_model(
        nodes,
        [("x", np.float32, [2, 5]), ("e", np.float32, [0, 5])],
        [(n, np.float32, None) for n in "abctrj"],
        opset=18,
    )
    rng = np.random.default_rng(0)
    feeds = {"x": rng.standard_normal((2, 5)).astype(np.float32), "e": np.zeros((0, 5), np.float32)}
    assert_matches(model, tmp_path, feeds)
