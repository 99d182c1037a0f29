"""Views of dynamically sized values read as people write them: several new axes as
``x[:, None, None, :]``, a number spread over a computed shape as ``ops.full``. Equal to
onnxruntime at two sizes, in PyNative and GRAPH mode."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from mindconverter.check.verify import run_onnxruntime
from tests.helpers import make_model

I64 = np.int64


def _model() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Unsqueeze", ["x", "middle"], ["widened"]),
        helper.make_node("Shape", ["x"], ["size"]),
        helper.make_node("Expand", ["fifteen", "size"], ["filled"]),
    ]
    return make_model(
        nodes,
        [("x", I64, ["batch", "length"])],
        [("widened", I64, None), ("filled", I64, None)],
        {"middle": np.array([1, 2], I64), "fifteen": np.array(15, I64)},
    )


@pytest.mark.parametrize("graph_mode", [False, True])
def test_new_axes_and_filled_shape(tmp_path, graph_mode):
    model = _model()
    onnx.save(model, tmp_path / "m.onnx")
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out", shape=["2,3"])
    code = result.script_path.read_text()
    assert "x[:, None, None, :]" in code, code
    assert "ops.full(" in code and "broadcast_to" not in code, code
    for batch, length in ((2, 3), (4, 1)):
        x = np.arange(batch * length, dtype=I64).reshape(batch, length)
        want = run_onnxruntime(model, {"x": x}, ["widened", "filled"])
        got = run_mindspore(result.script_path, result.checkpoint_path, [x], graph_mode=graph_mode)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)
