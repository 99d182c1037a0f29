"""MaxPool's Indices output (flat over the whole input, row- or column-major) equals
onnxruntime with pads, strides, dilations and several images and channels."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model


@pytest.mark.parametrize(
    "x_shape, attrs",
    [
        ((2, 3, 6, 7), {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1]}),
        ((2, 3, 6, 7), {"kernel_shape": [2, 2], "storage_order": 1}),
        ((1, 2, 7, 7), {"kernel_shape": [2, 2], "dilations": [2, 2], "ceil_mode": 1}),
        ((2, 2, 9), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
        ((1, 2, 4, 4, 5), {"kernel_shape": [2, 2, 2], "strides": [2, 1, 2]}),
    ],
)
def test_max_pool_indices_equal_onnxruntime(tmp_path, x_shape, attrs):
    node = helper.make_node("MaxPool", ["x"], ["y", "indices"], **attrs)
    model = make_model(
        [node],
        [("x", np.float32, x_shape)],
        [("y", np.float32, None), ("indices", np.int64, None)],
        opset=12,
    )
    x = np.random.default_rng(0).standard_normal(x_shape).astype(np.float32)
    assert_matches(model, tmp_path, {"x": x})
