"""Cast against onnxruntime."""

from __future__ import annotations

import numpy as np
from onnx import helper

from tests.helpers import assert_matches, make_model


def test_cast(tmp_path):
    node = helper.make_node("Cast", ["x"], ["y"], to=7)
    model = make_model([node], [("x", np.float32, (5,))], [("y", np.int64, None)])
    assert_matches(model, tmp_path, feeds={"x": np.array([1.7, -1.7, 0.2, 3.0, -0.0], np.float32)})
