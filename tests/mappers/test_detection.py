"""NonMaxSuppression against onnxruntime (real MindSpore, real boxes with overlaps and ties)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model

NMS_INPUTS = ["boxes", "scores", "max_output", "iou_threshold", "score_threshold"]


def _boxes(batches: int, count: int, center: bool, seed: int) -> np.ndarray:
    """Clustered boxes (so many overlap), some with flipped corners when in corner format."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0, 6, (batches, count, 2))
    sizes = rng.uniform(0.5, 3, (batches, count, 2))
    if center:
        return np.concatenate([centres, sizes], axis=-1).astype(np.float32)
    lo, hi = centres - sizes / 2, centres + sizes / 2
    boxes = np.stack([lo[..., 1], lo[..., 0], hi[..., 1], hi[..., 0]], axis=-1)
    flip = rng.random((batches, count)) < 0.3
    boxes[flip] = boxes[flip][:, [2, 3, 0, 1]]
    return boxes.astype(np.float32)


def _scores(batches: int, classes: int, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed + 1)
    return rng.choice(np.linspace(0.05, 0.95, 7), (batches, classes, count)).astype(
        np.float32
    )  # ties


def _model(
    batches,
    classes,
    count,
    constants: dict,
    runtime=(),
    center_point_box=None,
    opset=11,
    names=NMS_INPUTS,
):
    attrs = {} if center_point_box is None else {"center_point_box": center_point_box}
    node = helper.make_node("NonMaxSuppression", names, ["selected"], **attrs)
    inputs = [
        ("boxes", np.float32, [batches, count, 4]),
        ("scores", np.float32, [batches, classes, count]),
    ]
    inputs += [(name, constants[name].dtype, list(constants[name].shape)) for name in runtime]
    initializers = {k: v for k, v in constants.items() if k not in runtime}
    return make_model([node], inputs, [("selected", np.int64, None)], initializers, opset=opset)


def _limits(max_output=3, iou=0.4, score=None):
    values = {
        "max_output": np.array([max_output], np.int64),
        "iou_threshold": np.array([iou], np.float32),
    }
    if score is not None:
        values["score_threshold"] = np.array([score], np.float32)
    return values


@pytest.mark.parametrize("center", [0, 1])
def test_nms_single_class_overlapping(tmp_path, center):
    boxes, scores = _boxes(1, 10, bool(center), seed=center), _scores(1, 1, 10, seed=center)
    model = _model(
        1, 1, 10, _limits(max_output=6, iou=0.3), center_point_box=center, names=NMS_INPUTS[:4]
    )
    assert_matches(model, tmp_path, feeds={"boxes": boxes, "scores": scores})


def test_nms_batches_classes_score_threshold(tmp_path):
    boxes, scores = _boxes(2, 12, False, seed=3), _scores(2, 3, 12, seed=3)
    model = _model(2, 3, 12, _limits(max_output=4, iou=0.25, score=0.4), opset=10)
    result = assert_matches(model, tmp_path, feeds={"boxes": boxes, "scores": scores})
    assert "NonMaxSuppressionWithOverlaps" in result.script_path.read_text()


def test_nms_ties_and_identical_boxes_keep_lowest_index(tmp_path):
    boxes = np.tile(np.array([[0, 0, 1, 1]], np.float32), (6, 1))[None]
    boxes[0, 3:] += np.array([0, 5, 0, 5], np.float32)  # a second cluster, far away
    scores = np.full((1, 2, 6), 0.5, np.float32)
    model = _model(1, 2, 6, _limits(max_output=10, iou=0.5), names=NMS_INPUTS[:4])
    assert_matches(model, tmp_path, feeds={"boxes": boxes, "scores": scores})


def test_nms_iou_exactly_at_threshold_is_kept(tmp_path):
    boxes = np.array(
        [[[0, 0, 1, 1], [0, 0, 1, 2], [0, 0.5, 1, 1.5]]], np.float32
    )  # IoU 0.5, 1/3, 0.5
    scores = np.array([[[0.9, 0.8, 0.7]]], np.float32)
    model = _model(1, 1, 3, _limits(max_output=3, iou=0.5), names=NMS_INPUTS[:4])
    assert_matches(model, tmp_path, feeds={"boxes": boxes, "scores": scores})


@pytest.mark.parametrize("max_output", [0, -1, None])
def test_nms_no_output_boxes(tmp_path, max_output):
    boxes, scores = _boxes(1, 5, False, seed=5), _scores(1, 2, 5, seed=5)
    if max_output is None:  # absent: the ONNX default 0 selects nothing
        model = _model(1, 2, 5, {}, names=NMS_INPUTS[:2])
    else:
        model = _model(1, 2, 5, _limits(max_output=max_output), names=NMS_INPUTS[:4])
    assert_matches(model, tmp_path, feeds={"boxes": boxes, "scores": scores})


def test_nms_torchvision_style_huge_limit(tmp_path):
    """torchvision exports max_output_boxes_per_class = sys.maxsize and no score threshold."""
    boxes, scores = _boxes(1, 16, False, seed=7), _scores(1, 1, 16, seed=7)
    model = _model(
        1, 1, 16, _limits(max_output=np.iinfo(np.int64).max, iou=0.5), names=NMS_INPUTS[:4]
    )
    assert_matches(model, tmp_path, feeds={"boxes": boxes, "scores": scores})


@pytest.mark.parametrize("graph_mode", [False, True])
def test_nms_runtime_thresholds(tmp_path, graph_mode):
    boxes, scores = _boxes(2, 8, True, seed=9), _scores(2, 2, 8, seed=9)
    limits = _limits(max_output=3, iou=0.2, score=0.3)
    model = _model(2, 2, 8, limits, runtime=NMS_INPUTS[2:], center_point_box=1)
    assert_matches(
        model, tmp_path, feeds={"boxes": boxes, "scores": scores, **limits}, graph_mode=graph_mode
    )
