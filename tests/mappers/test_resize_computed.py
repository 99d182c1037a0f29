"""Resize whose sizes are computed from a dynamic batch (``concat(shape(x)[:2], [h, w])``, as
transformers' MobileViT exports it) converts with the batch kept dynamic."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from mindconverter.check.verify import run_onnxruntime
from tests.helpers import make_model


def test_resize_sizes_that_keep_the_dynamic_batch(tmp_path):
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], end=2),
        helper.make_node("Concat", ["shape", "spatial"], ["sizes"], axis=0),
        helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear"),
    ]
    model = make_model(
        nodes,
        [("x", np.float32, ["n", 2, 4, 5])],
        [("y", np.float32, None)],
        {"spatial": np.array([6, 3], np.int64)},
        opset=15,
    )
    onnx.save(model, tmp_path / "m.onnx")
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out", shape=["1,2,4,5"])
    assert result.unconverted == []
    assert "None, 2, 4, 5" in result.script_path.read_text()  # the batch stays dynamic
    rng = np.random.default_rng(0)
    for batch in (1, 3):
        x = rng.standard_normal((batch, 2, 4, 5)).astype(np.float32)
        (want,) = run_onnxruntime(model, {"x": x}, ["y"])
        (got,) = run_mindspore(result.script_path, result.checkpoint_path, [x])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
