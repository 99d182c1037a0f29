"""Values of multi-axis shape tensors sliced along their rows: the TorchScript exporter's
``F.pad`` with a run-time amount (SEW's encoder), checked by its value and by numbers."""

from __future__ import annotations

import numpy as np
from onnx import helper

from mindconverter.graph.symbolic import infer_symbolic
from tests.helpers import assert_runs_like_onnxruntime, convert_fully, make_model

I64 = np.int64


def _padded_to_eight():
    """``F.pad(x, (0, 0, 0, 8 - t))`` on x (1, t, 4) as TorchScript exports it: PyTorch's pad
    list widened to 6, made rows of two, rows reversed, transposed and flattened (ONNX's
    order: every axis's start, then every axis's end)."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "one"], ["t"], axis=0),
        helper.make_node("Sub", ["eight", "t"], ["n"]),
        helper.make_node("Unsqueeze", ["n", "axis0"], ["n1"]),
        helper.make_node("Concat", ["zeros3", "n1", "zeros2"], ["torch_pads"], axis=0),
        helper.make_node("Reshape", ["torch_pads", "rows"], ["pairs"]),
        helper.make_node("Slice", ["pairs", "minus1", "int64_min", "axis0", "minus1"], ["rev"]),
        helper.make_node("Transpose", ["rev"], ["turned"], perm=[1, 0]),
        helper.make_node("Reshape", ["turned", "flat"], ["pads"]),
        helper.make_node("Pad", ["x", "pads"], ["y"]),
    ]
    constants = {
        "one": np.array(1, I64),
        "eight": np.array(8, I64),
        "axis0": np.array([0], I64),
        "zeros3": np.zeros(3, I64),
        "zeros2": np.zeros(2, I64),
        "rows": np.array([-1, 2], I64),
        "minus1": np.array([-1], I64),
        "int64_min": np.array([-(2**63) + 1], I64),
        "flat": np.array([-1], I64),
    }
    return make_model(nodes, [("x", np.float32, [1, "t", 4])], [("y", np.float32, None)], constants)


def test_rows_reversed_keep_their_pairs():
    inferred = infer_symbolic(_padded_to_eight(), {"t": 5})
    assert inferred is not None
    pads = [str(v) for v in inferred.values["pads"]]
    assert pads == ["0", "0", "0", "0", "8 - t", "0"], pads


def test_a_run_time_pad_matches_onnxruntime_at_two_lengths(tmp_path):
    model = _padded_to_eight()
    result = convert_fully(model, tmp_path, shape=["x=1,5,4"])
    for length in (5, 3):
        feeds = {"x": np.random.default_rng(length).standard_normal((1, length, 4), np.float32)}
        assert_runs_like_onnxruntime(model, result, feeds)
