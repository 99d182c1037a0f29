"""GridSample in nearest mode: the script's GridSampleNearest cell rounds halfway positions to
even like ONNX (MindSpore's grid_sample does not); every padding mode, both align_corners, 2
and 3 spatial axes, grid points outside [-1, 1]. Equal to onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model


def _grid(rng, shape, sizes, align: bool) -> np.ndarray:
    """Random points in [-1.6, 1.6] plus points exactly halfway between pixels."""
    grid = rng.uniform(-1.6, 1.6, shape).astype(np.float32)
    flat = grid.reshape(-1, shape[-1])
    for axis, size in enumerate(reversed(sizes)):  # the grid's last axis is x (width) first
        halves = np.arange(-1, size + 1) + 0.5
        normalized = halves * 2 / (size - 1) - 1 if align else (2 * halves + 1) / size - 1
        count = min(len(normalized), len(flat))
        flat[:count, axis] = normalized[:count]
    return flat.reshape(shape)


@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("sizes", [(4, 5), (3, 4, 2)])
def test_grid_sample_nearest_equals_onnxruntime(tmp_path, padding, align, sizes):
    rng = np.random.default_rng(len(sizes) * 10 + align)
    spatial = len(sizes)
    x_shape = (2, 3, *sizes)
    grid_shape = (2, *([3] * spatial), spatial)
    node = helper.make_node(
        "GridSample",
        ["x", "grid"],
        ["y"],
        mode="nearest",
        padding_mode=padding,
        align_corners=align,
    )
    model = make_model(
        [node],
        [("x", np.float32, x_shape), ("grid", np.float32, grid_shape)],
        [("y", np.float32, None)],
        opset=20,
    )
    feeds = {
        "x": rng.standard_normal(x_shape).astype(np.float32),
        "grid": _grid(rng, grid_shape, sizes, bool(align)),
    }
    result = assert_matches(model, tmp_path, feeds, rtol=0, atol=0, graph_mode=spatial == 2)
    assert "class GridSampleNearest(nn.Cell):" in result.script_path.read_text()
