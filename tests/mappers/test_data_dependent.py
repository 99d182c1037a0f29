"""Sizes only the data decide (NonZero's count, a TopK whose k is computed from it) keep a known
rank, and their consumers convert: detection-style post-processing equals onnxruntime on inputs
that keep different numbers of boxes, in PyNative and GRAPH mode."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from mindconverter.check.verify import run_onnxruntime
from tests.helpers import make_model


def _post_processing() -> onnx.ModelProto:
    """Keep scores above 0.5, then the best min(3, kept) of them with their boxes."""
    nodes = [
        helper.make_node("Greater", ["scores", "threshold"], ["above"]),
        helper.make_node("NonZero", ["above"], ["where"]),
        helper.make_node("Squeeze", ["where", "zero_axis"], ["kept"]),
        helper.make_node("Gather", ["scores", "kept"], ["kept_scores"], axis=0),
        helper.make_node("Gather", ["boxes", "kept"], ["kept_boxes"], axis=0),
        helper.make_node("Shape", ["where"], ["count"], start=1),
        helper.make_node("Min", ["count", "most"], ["k"]),
        helper.make_node("TopK", ["kept_scores", "k"], ["top", "order"]),
        helper.make_node("Gather", ["kept_boxes", "order"], ["top_boxes"], axis=0),
    ]
    return make_model(
        nodes,
        [("scores", np.float32, ["n"]), ("boxes", np.float32, ["n", 4])],
        [("top", np.float32, None), ("top_boxes", np.float32, None)],
        {
            "threshold": np.array(0.5, np.float32),
            "zero_axis": np.array([0], np.int64),
            "most": np.array([3], np.int64),
        },
        opset=18,
    )


@pytest.mark.parametrize("graph_mode", [False, True])
def test_post_processing_with_data_dependent_sizes(tmp_path, graph_mode):
    model = _post_processing()
    onnx.save(model, tmp_path / "m.onnx")
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out", shape=["8", "8,4"])
    assert result.unconverted == [], [(u.op_type, u.reason) for u in result.unconverted]
    rng = np.random.default_rng(0)
    for scores in (rng.uniform(size=8), np.array([0.9, 0.1, 0.2, 0.7, 0.3, 0.1]), np.zeros(5)):
        scores = scores.astype(np.float32)
        boxes = rng.standard_normal((scores.size, 4)).astype(np.float32)
        want = run_onnxruntime(model, {"scores": scores, "boxes": boxes}, ["top", "top_boxes"])
        got = run_mindspore(
            result.script_path, result.checkpoint_path, [scores, boxes], graph_mode=graph_mode
        )
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-6)
