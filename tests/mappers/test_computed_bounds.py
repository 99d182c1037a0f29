"""Slice bounds computed from data (not from shapes) convert: the kept positions are gathered,
with ONNX's counting from the end and clamping; equal to onnxruntime in PyNative and GRAPH mode,
for bounds inside, past and before the axis, and empty results."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from mindconverter.check.verify import run_onnxruntime
from tests.helpers import make_model


@pytest.mark.parametrize("graph_mode", [False, True])
def test_slice_with_bounds_read_from_an_input(tmp_path, graph_mode):
    nodes = [
        helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["y"]),
        helper.make_node("Slice", ["x", "first", "far", "one_axis"], ["z"]),
    ]
    model = make_model(
        nodes,
        [
            ("x", np.float32, [5, 6]),
            ("starts", np.int64, [2]),
            ("ends", np.int64, [2]),
            ("first", np.int64, [1]),
        ],
        [("y", np.float32, None), ("z", np.float32, None)],
        {
            "axes": np.array([0, 1], np.int64),
            "far": np.array([2**62], np.int64),
            "one_axis": np.array([1], np.int64),
        },
        opset=13,
    )
    onnx.save(model, tmp_path / "m.onnx")
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out")
    assert result.unconverted == [], [(u.op_type, u.reason) for u in result.unconverted]
    x = np.arange(30, dtype=np.float32).reshape(5, 6)
    for starts, ends in (
        ([1, 2], [4, 5]),
        ([-3, 0], [100, -1]),
        ([4, 3], [2, 3]),
        ([-9, -9], [2, 9]),
    ):
        feeds = {
            "x": x,
            "starts": np.array(starts, np.int64),
            "ends": np.array(ends, np.int64),
            "first": np.array(starts[1:], np.int64),
        }
        want = run_onnxruntime(model, feeds, ["y", "z"])
        got = run_mindspore(
            result.script_path, result.checkpoint_path, list(feeds.values()), graph_mode=graph_mode
        )
        for g, w in zip(got, want):
            assert g.shape == w.shape, (starts, ends, g.shape, w.shape)
            np.testing.assert_array_equal(g, w)
