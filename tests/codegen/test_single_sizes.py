"""A computed size read only at index 0 of a one-element tuple is written as that number."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, assert_runs_like_onnxruntime, make_model


def _shortest_common_prefix_model():
    """LayerNorm(x[:, :n] + y[:, :n]) with n = min(x's length, y's length), as SEW adds its
    pooled states and position embeddings."""
    constants = {
        "zero": np.array([0], np.int64),
        "one": np.array([1], np.int64),
        "two": np.array([2], np.int64),
        "scale": np.linspace(0.5, 1.5, 4).astype(np.float32),
        "bias": np.linspace(-0.1, 0.1, 4).astype(np.float32),
    }
    nodes = [
        helper.make_node("Shape", ["x"], ["x_shape"]),
        helper.make_node("Shape", ["y"], ["y_shape"]),
        helper.make_node("Slice", ["x_shape", "one", "two"], ["x_length"]),
        helper.make_node("Slice", ["y_shape", "one", "two"], ["y_length"]),
        helper.make_node("Min", ["x_length", "y_length"], ["length"]),
        helper.make_node("Slice", ["x", "zero", "length", "one"], ["x_kept"]),
        helper.make_node("Slice", ["y", "zero", "length", "one"], ["y_kept"]),
        helper.make_node("Add", ["x_kept", "y_kept"], ["sum"]),
        helper.make_node("LayerNormalization", ["sum", "scale", "bias"], ["out"], axis=-1),
    ]
    return make_model(
        nodes,
        [("x", np.float32, ["b", "n", 4]), ("y", np.float32, ["b", "m", 4])],
        [("out", np.float32, None)],
        constants,
    )


def _feeds(batch: int, n: int, m: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((batch, n, 4)).astype(np.float32),
        "y": rng.standard_normal((batch, m, 4)).astype(np.float32),
    }


@pytest.mark.slow
def test_a_computed_slice_bound_is_one_named_number(tmp_path):
    model = _shortest_common_prefix_model()
    result = assert_matches(model, tmp_path, _feeds(2, 5, 3), shape=["2,5,4", "2,3,4"])
    code = result.script_path.read_text()
    assert "size = min((" in code and "[:, :size]" in code, code
    assert "size[0]" not in code and "shape[0]]" not in code, code
    assert_runs_like_onnxruntime(model, result, _feeds(3, 4, 7, seed=1))


@pytest.mark.slow
def test_a_computed_slice_bound_compiles_in_graph_mode(tmp_path):
    """min() of two sizes known at run time is folded wrongly by GRAPH_MODE (the LayerNorm
    after it fails to compile): the script takes the min of a tuple."""
    model = _shortest_common_prefix_model()
    assert_matches(model, tmp_path, _feeds(2, 5, 3), graph_mode=True, shape=["2,5,4", "2,3,4"])
