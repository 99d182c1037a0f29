"""Operators of detection post-processing on sizes known only at run time (how torchvision's
detectors export): NonMaxSuppression over a box count that depends on the data, ScatterElements
into an axis sized at run time, ConvTranspose and Flatten of inputs sized at run time. Each is
compared with onnxruntime at several sizes, in PyNative and GRAPH mode."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_runs_like_onnxruntime, convert_fully, make_model


def _convert(tmp_path, model, shape):
    return convert_fully(model, tmp_path, shape=shape)


def _check(model, result, feeds, graph_mode):
    assert_runs_like_onnxruntime(model, result, feeds, graph_mode, rtol=1e-4, atol=1e-5)


def _boxes(rng, n):
    corner = rng.random((1, n, 2)) * 50
    return np.concatenate([corner, corner + 5 + rng.random((1, n, 2)) * 30], -1).astype(np.float32)


def _thresholded_nms(nms_inputs, center_point_box=0):
    """torchvision's pattern: the boxes over a score threshold (NonZero), then NMS."""
    return [
        helper.make_node("Greater", ["scores", "threshold"], ["over"]),
        helper.make_node("NonZero", ["over"], ["where"]),
        helper.make_node("Squeeze", ["where", "zero"], ["kept"]),
        helper.make_node("Gather", ["boxes", "kept"], ["kept_boxes"], axis=0),
        helper.make_node("Gather", ["scores", "kept"], ["kept_scores"], axis=0),
        helper.make_node("Unsqueeze", ["kept_boxes", "zero"], ["batched_boxes"]),
        helper.make_node("Unsqueeze", ["kept_scores", "zero_one"], ["batched_scores"]),
        helper.make_node(
            "NonMaxSuppression",
            ["batched_boxes", "batched_scores", *nms_inputs],
            ["selected"],
            center_point_box=center_point_box,
        ),
    ]


@pytest.mark.parametrize("graph_mode", [False, True])
def test_nms_over_the_boxes_a_threshold_kept(tmp_path, graph_mode):
    """torchvision's pattern: keep the boxes over a score threshold (NonZero), then NMS with
    an unbounded max_output_boxes_per_class (sys.maxsize)."""
    nodes = _thresholded_nms(["limit", "iou"])
    model = make_model(
        nodes,
        [("boxes", np.float32, [60, 4]), ("scores", np.float32, [60])],
        [("selected", np.int64, None)],
        {
            "threshold": np.array(0.3, np.float32),
            "zero": np.array([0], np.int64),
            "zero_one": np.array([0, 1], np.int64),
            "limit": np.array([2**63 - 1], np.int64),
            "iou": np.array([0.4], np.float32),
        },
        opset=13,
    )
    result = _convert(tmp_path, model, None)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        feeds = {"boxes": _boxes(rng, 60)[0], "scores": rng.random(60).astype(np.float32)}
        _check(model, result, feeds, graph_mode)


@pytest.mark.parametrize("graph_mode", [False, True])
@pytest.mark.parametrize("center_point_box, limit", [(0, 2**63 - 1), (1, 700)])
def test_nms_over_thousands_of_boxes_compares_them_a_block_at_a_time(
    tmp_path, graph_mode, center_point_box, limit
):
    """SSDlite keeps tens of thousands of candidates: all pairs at once took tens of GB. Past
    a few thousand boxes (or a count known at run time only) the script keeps boxes block by
    block in PyNative mode; the result is ONNX's, ties (scores rounded) and limit included."""
    nodes = _thresholded_nms(["limit", "iou", "min_score"], center_point_box)
    count = 2600
    model = make_model(
        nodes,
        [("boxes", np.float32, [count, 4]), ("scores", np.float32, [count])],
        [("selected", np.int64, None)],
        {
            "threshold": np.array(0.05, np.float32),
            "zero": np.array([0], np.int64),
            "zero_one": np.array([0, 1], np.int64),
            "limit": np.array([limit], np.int64),
            "iou": np.array([0.3], np.float32),
            "min_score": np.array([0.1], np.float32),
        },
        opset=13,
    )
    result = _convert(tmp_path, model, None)
    assert "NonMaxSuppressionInBlocks" in result.script_path.read_text()
    rng = np.random.default_rng(center_point_box)
    scores = np.round(rng.random(count), 2).astype(np.float32)  # many equal scores
    corner = rng.random((count, 2)) * 600  # sparse enough that hundreds are kept
    boxes = np.concatenate([corner, corner + 5 + rng.random((count, 2)) * 30], -1)
    if center_point_box:
        boxes = np.concatenate([corner + 10, 10 + rng.random((count, 2)) * 30], -1)
    boxes = boxes.astype(np.float32)
    _check(model, result, {"boxes": boxes, "scores": scores}, graph_mode)


@pytest.mark.parametrize("graph_mode", [False, True])
def test_nms_with_a_dynamic_box_count_and_a_small_limit(tmp_path, graph_mode):
    model = make_model(
        [helper.make_node("NonMaxSuppression", ["b", "s", "limit", "iou", "min_score"], ["sel"])],
        [("b", np.float32, [1, "n", 4]), ("s", np.float32, [1, 2, "n"])],
        [("sel", np.int64, None)],
        {
            "limit": np.array([3], np.int64),
            "iou": np.array([0.5], np.float32),
            "min_score": np.array([0.2], np.float32),
        },
        opset=11,
    )
    result = _convert(tmp_path, model, ["1,10,4", "1,2,10"])
    for n in (10, 2, 25):
        rng = np.random.default_rng(n)
        feeds = {"b": _boxes(rng, n), "s": rng.random((1, 2, n)).astype(np.float32)}
        _check(model, result, feeds, graph_mode)


@pytest.mark.parametrize("graph_mode", [False, True])
def test_scatter_elements_into_an_axis_sized_at_run_time(tmp_path, graph_mode):
    model = make_model(
        [helper.make_node("ScatterElements", ["data", "indices", "updates"], ["y"], axis=0)],
        [("data", np.float32, ["n", 3]), ("updates", np.float32, [2, 3])],
        [("y", np.float32, None)],
        {"indices": np.array([[-1, 0, 1], [0, -2, -1]], np.int64)},
        opset=13,
    )
    result = _convert(tmp_path, model, ["4,3", "2,3"])
    for n in (4, 2, 7):
        feeds = {
            "data": np.arange(n * 3, dtype=np.float32).reshape(n, 3),
            "updates": -np.arange(1, 7, dtype=np.float32).reshape(2, 3),
        }
        _check(model, result, feeds, graph_mode)


@pytest.mark.parametrize("graph_mode", [False, True])
@pytest.mark.parametrize(
    "attrs",
    [
        {"strides": [2, 2]},
        {"strides": [2, 2], "pads": [1, 1, 1, 1]},
        {"strides": [3, 2], "pads": [0, 1, 1, 0], "output_padding": [1, 0]},
    ],
)
def test_conv_transpose_of_an_input_sized_at_run_time(tmp_path, graph_mode, attrs):
    rng = np.random.default_rng(0)
    model = make_model(
        [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)],
        [("x", np.float32, ["n", 2, "h", "w"])],
        [("y", np.float32, None)],
        {
            "w": rng.standard_normal((2, 3, 2, 2)).astype(np.float32),
            "b": rng.standard_normal(3).astype(np.float32),
        },
        opset=13,
    )
    result = _convert(tmp_path, model, ["1,2,5,4"])
    for shape in ((1, 2, 5, 4), (3, 2, 2, 6)):
        _check(model, result, {"x": rng.standard_normal(shape).astype(np.float32)}, graph_mode)


@pytest.mark.parametrize("graph_mode", [False, True])
def test_flatten_with_both_sides_sized_at_run_time(tmp_path, graph_mode):
    model = make_model(
        [helper.make_node("Flatten", ["x"], ["y"], axis=2)],
        [("x", np.float32, ["a", "b", "c"])],
        [("y", np.float32, None)],
        opset=13,
    )
    result = _convert(tmp_path, model, ["2,3,4"])
    for shape in ((2, 3, 4), (1, 5, 2)):
        x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        _check(model, result, {"x": x}, graph_mode)


@pytest.mark.parametrize("graph_mode", [False, True])
def test_resize_by_scales_keeps_axes_of_scale_one_sized_at_run_time(tmp_path, graph_mode):
    model = make_model(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear")],
        [("x", np.float32, ["n", "c", 3, 4])],
        [("y", np.float32, None)],
        {"scales": np.array([1, 1, 2, 1.5], np.float32)},
        opset=13,
    )
    result = _convert(tmp_path, model, ["1,2,3,4"])
    rng = np.random.default_rng(0)
    for shape in ((1, 2, 3, 4), (5, 3, 3, 4)):
        _check(model, result, {"x": rng.standard_normal(shape).astype(np.float32)}, graph_mode)
