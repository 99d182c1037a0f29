"""Resize and Upsample whose scales are a graph input (known only at run time): the script's
ResizeByScales cell, converted once and run at two different scales, against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_runs_like_onnxruntime, convert_fully, make_model

pytestmark = pytest.mark.slow


def _model(op, opset, **attrs):
    inputs = ["x", "", "scales"] if op == "Resize" and opset >= 11 else ["x", "scales"]
    node = helper.make_node(op, inputs, ["y"], **attrs)
    return make_model(
        [node],
        [("x", np.float32, [1, 2, 4, 5]), ("scales", np.float32, [4])],
        [("y", np.float32, None)],
        opset=opset,
    )


@pytest.mark.parametrize(
    "op, opset, attrs",
    [
        ("Resize", 13, {"mode": "nearest"}),
        ("Resize", 13, {"mode": "nearest", "nearest_mode": "round_prefer_ceil"}),
        ("Resize", 13, {"mode": "nearest", "nearest_mode": "floor"}),
        ("Resize", 13, {"mode": "nearest", "coordinate_transformation_mode": "asymmetric"}),
        ("Resize", 13, {"mode": "linear"}),
        ("Resize", 13, {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}),
        ("Resize", 13, {"mode": "linear", "coordinate_transformation_mode": "align_corners"}),
        ("Resize", 13, {"mode": "cubic"}),
        ("Resize", 13, {"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1}),
        (
            "Resize",
            19,
            {"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"},
        ),
        ("Resize", 18, {"mode": "linear", "antialias": 1}),
        ("Resize", 18, {"mode": "cubic", "antialias": 1}),
        ("Resize", 10, {"mode": "nearest"}),
        ("Upsample", 9, {"mode": "nearest"}),
        ("Upsample", 9, {"mode": "linear"}),
    ],
)
def test_resize_by_run_time_scales(tmp_path, op, opset, attrs):
    model = _model(op, opset, **attrs)
    result = convert_fully(model, tmp_path)
    assert "ResizeByScales" in result.script_path.read_text()
    x = np.random.default_rng(opset).standard_normal((1, 2, 4, 5)).astype(np.float32)
    growing = op == "Upsample" or opset == 10  # those only grow in onnxruntime
    for scales in ([1, 1, 2, 1.5], [1, 1, 1.5, 3] if growing else [1, 1, 0.6, 0.5]):
        feeds = {"x": x, "scales": np.array(scales, np.float32)}
        assert_runs_like_onnxruntime(model, result, feeds, rtol=1e-4, atol=1e-5)
