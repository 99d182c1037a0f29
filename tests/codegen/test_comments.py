"""Workarounds carry a one-line comment above the statement that computes them."""

import numpy as np
from onnx import helper

from tests.helpers import assert_matches, make_model

F32 = np.float32


def test_written_out_layer_norm_says_why(tmp_path):
    model = make_model(
        [helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"], epsilon=1e-5)],
        [("x", F32, [2, 3, 4]), ("scale", F32, [4]), ("bias", F32, [4])],
        [("y", F32, [2, 3, 4])],
    )
    lines = assert_matches(model, tmp_path).script_path.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if "ops.layer_norm has no CPU kernel" in line)
    assert lines[index].strip().startswith("# ")
    assert "=" in lines[index + 1] and not lines[index + 1].strip().startswith("#")


def test_explicit_softmax_says_why(tmp_path):
    """A softmax over scores that may hold -inf (a mask) is written out, with the reason."""
    model = make_model(
        [
            helper.make_node("Where", ["keep", "x", "low"], ["masked"]),
            helper.make_node("Softmax", ["masked"], ["y"], axis=-1),
        ],
        [("x", F32, [2, 4]), ("keep", np.bool_, [2, 4])],
        [("y", F32, [2, 4])],
        {"low": np.array(-np.inf, F32)},
    )
    feeds = {
        "x": np.random.default_rng(0).standard_normal((2, 4)).astype(F32),
        "keep": np.array([[True, False, True, True], [True, True, False, True]]),
    }
    code = assert_matches(model, tmp_path, feeds).script_path.read_text()
    assert "# explicit softmax: MindSpore's CPU kernel zeroes" in code, code
