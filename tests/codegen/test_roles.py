"""Block inputs named by what the block does with them (codegen/roles.py)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model

F32 = np.float32


def _half_passed_through(axis: int):
    """The root splits x in two along ``axis``; block ``blk`` convolves one half and puts the
    other back beside it (ShuffleNet's unit along channels; a cache extended along axis 2)."""
    nodes = [
        helper.make_node("Split", ["x"], ["a", "b"], name="/Split", axis=axis, num_outputs=2),
        helper.make_node("Conv", ["b", "w"], ["rb"], name="/blk/conv/Conv"),
        helper.make_node("Concat", ["a", "rb"], ["y"], name="/blk/Concat", axis=axis),
    ]
    channels = 2 if axis == 1 else 4
    weight = np.random.default_rng(1).standard_normal((channels, channels, 1, 1)).astype(F32)
    shape = [1, 4, 4, 4]
    return make_model(nodes, [("x", F32, shape)], [("y", F32, None)], {"w": weight}, opset=18)


@pytest.mark.parametrize("axis, name", [(1, "shortcut"), (2, "past_key")])
def test_a_value_only_put_back_beside_the_result_is_named_by_the_axis(tmp_path, axis, name):
    feeds = {"x": np.random.default_rng(0).standard_normal((1, 4, 4, 4)).astype(F32)}
    result = assert_matches(_half_passed_through(axis), tmp_path, feeds)
    code = result.script_path.read_text()
    block = code[code.index("class ") : code.index("class MindSporeModel")]
    assert f", {name})" in block.split("def construct(")[1].split("\n")[0], block
