"""A declared dynamic dimension that the model fixes is reported, not silently baked."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from mindconverter import convert
from tests.helpers import make_model


def test_a_pinned_dimension_is_named_in_the_log_and_the_report(tmp_path):
    bias = np.arange(12, dtype=np.float32).reshape(1, 3, 4)  # broadcasting fixes seq to 3
    model = make_model(
        [helper.make_node("Add", ["x", "bias"], ["y"])],
        [("x", np.float32, ("batch", "seq", 4))],
        [("y", np.float32, None)],
        {"bias": bias},
    )
    onnx.save(model, tmp_path / "pinned.onnx")
    said = []
    result = convert(
        tmp_path / "pinned.onnx", shape=["2,3,4"], output=tmp_path / "out", log=said.append
    )
    notes = [line for line in said if line.startswith("NOTE:")]
    assert len(notes) == 1 and "'seq'" in notes[0] and "fixes it to 3" in notes[0]
    assert "batch" not in notes[0]
    report = result.report_path.read_text()
    assert "Notes:" in report and "fixes it to 3" in report
    assert "x: float32[batch, 3, 4]" in result.script_path.read_text()
