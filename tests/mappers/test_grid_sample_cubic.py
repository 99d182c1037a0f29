"""GridSample in cubic mode: the script's GridSampleCubic cell (written with ops) against the
ONNX reference implementation, for every padding mode, both align_corners, grid points outside
[-1, 1], on an image of one row as well."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from mindconverter.check.network import run_mindspore
from tests.helpers import assert_outputs_match, convert_fully, make_model

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("size", [(5, 6), (2, 3)])
def test_grid_sample_cubic_like_the_reference(tmp_path, padding, align, size):
    rng = np.random.default_rng(size[0] * 10 + align)
    x_shape, grid_shape = (2, 3, *size), (2, 4, 3, 2)
    node = helper.make_node(
        "GridSample", ["x", "grid"], ["y"], mode="cubic", padding_mode=padding, align_corners=align
    )
    model = make_model(
        [node],
        [("x", np.float32, x_shape), ("grid", np.float32, grid_shape)],
        [("y", np.float32, None)],
        opset=20,
    )
    feeds = {
        "x": rng.standard_normal(x_shape).astype(np.float32),
        "grid": rng.uniform(-1.7, 1.7, grid_shape).astype(np.float32),
    }
    want = ReferenceEvaluator(model).run(None, feeds)
    result = convert_fully(model, tmp_path)
    assert "GridSampleCubic" in result.script_path.read_text()
    got = run_mindspore(result.script_path, result.checkpoint_path, list(feeds.values()))
    assert_outputs_match(got, want, rtol=1e-4, atol=1e-5)
