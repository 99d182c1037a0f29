"""Unique along an axis (distinct slices, first indices, inverse indices, counts) equals
onnxruntime, sorted or in order of first occurrence."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model


@pytest.mark.parametrize("sort", [1, 0])
@pytest.mark.parametrize(
    "values, axis",
    [
        (np.array([[1, 0, 0], [1, 0, 0], [2, 3, 4], [0, 5, 1], [2, 3, 4]], np.float32), 0),
        (np.array([[3, 1, 3, 2], [0, 1, 0, 2]], np.float32), -1),
        (np.random.default_rng(0).integers(0, 2, (2, 5, 2)).astype(np.int64), 1),
    ],
)
def test_unique_along_an_axis(tmp_path, values, axis, sort):
    node = helper.make_node(
        "Unique", ["x"], ["y", "indices", "inverse", "counts"], axis=axis, sorted=sort
    )
    model = make_model(
        [node],
        [("x", values.dtype, values.shape)],
        [("y", values.dtype, None)]
        + [(n, np.int64, None) for n in ("indices", "inverse", "counts")],
        opset=11,
    )
    assert_matches(model, tmp_path, {"x": values})
