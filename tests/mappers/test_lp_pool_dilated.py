"""Dilated LpPool equals onnxruntime (window sums of |x|^p by a dilated convolution)."""

from __future__ import annotations

import pytest

from tests.helpers import assert_matches, single_op_model


@pytest.mark.parametrize(
    "shape, attrs",
    [
        ((1, 2, 7, 7), {"kernel_shape": [2, 2], "dilations": [2, 2], "p": 2}),
        ((2, 3, 8, 6), {"kernel_shape": [3, 2], "dilations": [2, 1], "strides": [2, 1], "p": 1}),
        ((1, 2, 9), {"kernel_shape": [3], "dilations": [2], "pads": [1, 2], "p": 3}),
    ],
)
def test_dilated_lp_pool(tmp_path, shape, attrs):
    model = single_op_model("LpPool", {"x": shape}, opset=18, **attrs)
    assert_matches(model, tmp_path, atol=1e-4)
