"""ConvTranspose whose output_padding (or output_shape) reaches past every kernel tap: those
positions hold only the bias. Equal to onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize(
    "x_shape, kernel, attrs",
    [
        ((1, 2, 3, 3), (3, 3), {"strides": [3, 2], "output_padding": [2, 1]}),
        ((1, 2, 4), (2,), {"strides": [4], "output_padding": [3], "pads": [1, 0]}),
        ((2, 2, 3, 4), (2, 2), {"strides": [2, 3], "output_shape": [7, 12]}),
    ],
)
def test_output_padding_past_the_taps(tmp_path, x_shape, kernel, attrs, with_bias):
    rng = np.random.default_rng(0)
    weights = {"w": rng.standard_normal((2, 3, *kernel)).astype(np.float32)}
    if with_bias:
        weights["b"] = rng.standard_normal(3).astype(np.float32)
    node = helper.make_node("ConvTranspose", ["x", *weights], ["y"], **attrs)
    model = make_model([node], [("x", np.float32, x_shape)], [("y", np.float32, None)], weights)
    assert_matches(model, tmp_path, {"x": rng.standard_normal(x_shape).astype(np.float32)})
