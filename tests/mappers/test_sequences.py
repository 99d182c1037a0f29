"""Tensor sequences become Python tuples."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model


@pytest.mark.parametrize("split, keepdims", [(np.array(2, np.int64), 1), (None, 0), (None, 1)])
def test_split_to_sequence_then_sequence_at(tmp_path, split, keepdims):
    inputs = ["x", "split"] if split is not None else ["x"]
    nodes = [
        helper.make_node("SplitToSequence", inputs, ["seq"], axis=1, keepdims=keepdims),
        helper.make_node("SequenceAt", ["seq", "first"], ["a"]),
        helper.make_node("SequenceAt", ["seq", "last"], ["b"]),
        helper.make_node("Add", ["a", "b"], ["y"]),
    ]
    inits = {"first": np.array(0, np.int64), "last": np.array(-1, np.int64)}
    if split is not None:
        inits["split"] = split
    model = make_model(nodes, [("x", np.float32, (2, 4, 3))], [("y", np.float32, None)], inits)
    x = np.random.default_rng(0).standard_normal((2, 4, 3)).astype(np.float32)
    assert_matches(model, tmp_path, feeds={"x": x})
