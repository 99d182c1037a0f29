"""Resize to sizes computed from the input's dynamic dimensions (a ViT's position-embedding grid
interpolated to the image's patch grid) stays dynamic: the network converted at one image size
runs at others. Equal to onnxruntime at two sizes, PyNative and GRAPH mode."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from mindconverter.check.verify import run_onnxruntime
from tests.helpers import make_model

F32, I64 = np.float32, np.int64


def _model(mode: str) -> onnx.ModelProto:
    grid = np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(F32)
    nodes = [
        helper.make_node("Shape", ["image"], ["size"], start=2),
        helper.make_node("Div", ["size", "patch"], ["patches"]),
        helper.make_node("Concat", ["lead", "patches"], ["sizes"], axis=0),
        helper.make_node(
            "Resize", ["grid", "", "", "sizes"], ["y"], mode=mode, cubic_coeff_a=-0.75
        ),
    ]
    constants = {"grid": grid, "patch": np.array([7], I64), "lead": np.array([1, 2], I64)}
    return make_model(
        nodes, [("image", F32, ["batch", 3, "height", "width"])], [("y", F32, None)], constants
    )


@pytest.mark.parametrize("graph_mode", [False, True])
@pytest.mark.parametrize("mode", ["cubic", "linear"])
def test_grid_resized_to_the_image_patch_grid(tmp_path, mode, graph_mode):
    model = _model(mode)
    onnx.save(model, tmp_path / "m.onnx")
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out", shape=["2,3,28,28"])
    assert result.unconverted == [], [(u.op_type, u.reason) for u in result.unconverted]
    assert "by_sizes=True" in result.script_path.read_text()
    for shape in ((2, 3, 28, 28), (1, 3, 42, 21)):
        image = np.zeros(shape, F32)
        (want,) = run_onnxruntime(model, {"image": image}, ["y"])
        (got,) = run_mindspore(
            result.script_path, result.checkpoint_path, [image], graph_mode=graph_mode
        )
        assert got.shape == want.shape, (shape, got.shape, want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
