"""Layers whose weights are graph inputs (legal ONNX: a weight computed or fed at run time):
Conv, ConvTranspose, BatchNormalization, LSTM, GRU and RNN go through functional ops instead of
cells, and give onnxruntime's results."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model
from tests.mappers.builders import randn

pytestmark = pytest.mark.slow


def _weights_as_inputs(op, inputs, outputs=("y",), opset=17, **attrs):
    """One ``op`` node whose every input (weights included) is a graph input; returns the model
    and random feeds."""
    node = helper.make_node(op, [name for name, _ in inputs], list(outputs), **attrs)
    model = make_model(
        [node],
        [(name, np.float32, list(shape)) for name, shape in inputs if name],
        [(name, np.float32, None) for name in outputs],
        opset=opset,
    )
    feeds = {name: randn(*shape) for name, shape in inputs if name}
    return model, feeds


@pytest.mark.parametrize(
    "attrs, x_shape, w_shape",
    [
        ({}, (1, 2, 4, 4), (2, 3, 3, 3)),
        ({"strides": [2, 2], "pads": [1, 1, 1, 1]}, (1, 2, 4, 5), (2, 3, 3, 3)),
        (
            {"strides": [3, 2], "pads": [1, 2, 0, 1], "output_padding": [2, 1]},
            (1, 2, 3, 3),
            (2, 3, 3, 2),
        ),
        ({"dilations": [2, 2]}, (2, 2, 3, 3), (2, 3, 3, 3)),
        ({"group": 2, "strides": [2, 2]}, (1, 4, 3, 3), (4, 1, 2, 2)),
        ({"strides": [2, 2], "output_shape": [9, 9]}, (1, 2, 4, 4), (2, 3, 3, 3)),
        ({"strides": [2, 2], "auto_pad": "SAME_UPPER"}, (1, 2, 3, 3), (2, 3, 3, 3)),
        ({"strides": [2], "pads": [1, 0]}, (1, 2, 5), (2, 3, 3)),
        ({"strides": [2, 1, 2], "pads": [1, 0, 0, 0, 1, 1]}, (1, 2, 3, 3, 2), (2, 2, 2, 2, 2)),
    ],
)
@pytest.mark.parametrize("bias", [True, False])
def test_conv_transpose_with_a_run_time_weight(tmp_path, attrs, x_shape, w_shape, bias):
    inputs = [("x", x_shape), ("W", w_shape)] + (
        [("B", (w_shape[1] * attrs.get("group", 1),))] if bias else []
    )
    model, feeds = _weights_as_inputs("ConvTranspose", inputs, **attrs)
    result = assert_matches(model, tmp_path, feeds, rtol=1e-4, atol=1e-5)
    assert "ops.conv" in result.script_path.read_text()


def test_conv_with_a_run_time_weight(tmp_path):
    inputs = [("x", (1, 2, 6, 6)), ("W", (4, 2, 3, 3)), ("B", (4,))]
    model, feeds = _weights_as_inputs("Conv", inputs, pads=[1, 0, 1, 2], strides=[2, 1])
    assert_matches(model, tmp_path, feeds)


@pytest.mark.parametrize("x_shape", [(2, 3), (2, 3, 4, 5), (1, 3, 2, 2, 2)])
def test_batch_norm_with_run_time_statistics(tmp_path, x_shape):
    names = ["x", "scale", "B", "mean", "var"]
    shapes = [x_shape] + [(x_shape[1],)] * 4
    model, feeds = _weights_as_inputs("BatchNormalization", list(zip(names, shapes)), epsilon=1e-3)
    feeds["var"] = np.abs(feeds["var"]) + 0.5
    assert_matches(model, tmp_path, feeds)


def test_training_batch_norm_with_run_time_statistics(tmp_path):
    names = ["x", "scale", "B", "mean", "var"]
    shapes = [(3, 2, 4)] + [(2,)] * 4
    model, feeds = _weights_as_inputs(
        "BatchNormalization", list(zip(names, shapes)), ("y", "rm", "rv"), opset=15, training_mode=1
    )
    feeds["var"] = np.abs(feeds["var"]) + 0.5
    assert_matches(model, tmp_path, feeds)
