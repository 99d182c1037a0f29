"""Shape arguments computed from data convert: Reshape (0 copies an input size), Expand
(bidirectional), Pad (negative pads crop, a computed value) and sizes inference could only name
(a Pad's output read by Shape and Slice). Equal to onnxruntime in PyNative and GRAPH mode."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from mindconverter.check.verify import run_onnxruntime
from tests.helpers import make_model

CASES = {
    "reshape": (
        [helper.make_node("Reshape", ["x", "s"], ["y"])],
        [[0, -1, 1], [2, 3, 2], [-1, 2, 2]],
    ),
    "expand": (
        [helper.make_node("Expand", ["x", "s"], ["y"])],
        [[2, 1, 4], [1, 3, 1], [5, 3, 4]],
    ),
    "pad then crop back by its own shape": (
        [
            helper.make_node("Pad", ["x", "s", "value"], ["padded"]),
            helper.make_node("Shape", ["padded"], ["size"], end=1),
            helper.make_node("Sub", ["size", "one"], ["end"]),
            helper.make_node("Slice", ["padded", "one", "end"], ["y"]),
        ],
        [[1, 0, 2, 1], [0, -1, 1, 0], [2, 2, -1, -2]],
    ),
}


@pytest.mark.parametrize("graph_mode", [False, True])
@pytest.mark.parametrize("case", list(CASES))
def test_shapes_computed_from_data(tmp_path, case, graph_mode):
    nodes, targets = CASES[case]
    length = len(targets[0])
    model = make_model(
        nodes,
        [("x", np.float32, [3, 4]), ("s", np.int64, [length])],
        [("y", np.float32, None)],
        {"value": np.array(1.5, np.float32), "one": np.array([1], np.int64)},
        opset=18,
    )
    onnx.save(model, tmp_path / "m.onnx")
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out")
    assert result.unconverted == [], [(u.op_type, u.reason) for u in result.unconverted]
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for target in targets:
        feeds = {"x": x, "s": np.array(target, np.int64)}
        (want,) = run_onnxruntime(model, feeds, ["y"])
        (got,) = run_mindspore(
            result.script_path, result.checkpoint_path, list(feeds.values()), graph_mode=graph_mode
        )
        assert got.shape == want.shape, (target, got.shape, want.shape)
        np.testing.assert_array_equal(got, want)
