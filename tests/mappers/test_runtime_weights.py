"""Layers whose weights are graph inputs (legal ONNX: a weight computed or fed at run time):
Conv, ConvTranspose, BatchNormalization, LSTM, GRU and RNN go through functional ops instead of
cells, and give onnxruntime's results."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from mindconverter.check.network import run_mindspore
from tests.helpers import assert_matches, assert_outputs_match, convert_fully, make_model

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
    # a generator of the case's own, so the data does not depend on which tests ran before
    # (under xdist a shared one gave another draw, once near a tanh kink beyond the tolerance)
    rng = np.random.default_rng(zlib.crc32(repr((op, sorted(attrs.items()))).encode()))
    feeds = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in inputs if name}
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


def _recurrent_case(
    op, gates, directions=1, layout=0, bias=True, states=True, lengths=None, **attrs
):
    seq, batch, size, hidden = 4, 3, 5, 6
    x = (batch, seq, size) if layout else (seq, batch, size)
    state = (batch, directions, hidden) if layout else (directions, batch, hidden)
    inputs = [
        ("X", x),
        ("W", (directions, gates * hidden, size)),
        ("R", (directions, gates * hidden, hidden)),
        ("B", (directions, 2 * gates * hidden)) if bias else ("", ()),
        ("", ()),  # sequence_lens: fed separately below
        ("initial_h", state) if states else ("", ()),
    ]
    if op == "LSTM":
        inputs += [("initial_c", state) if states else ("", ()), ("P", (directions, 3 * hidden))]
    outputs = ("Y", "Y_h", "Y_c") if op == "LSTM" else ("Y", "Y_h")
    model, feeds = _weights_as_inputs(
        op, inputs, outputs, opset=14, hidden_size=hidden, layout=layout, **attrs
    )
    if lengths is not None:
        model.graph.node[0].input[4] = "lens"
        model.graph.input.insert(1, helper.make_tensor_value_info("lens", 6, [batch]))
        feeds = {"X": feeds.pop("X"), "lens": np.array(lengths, np.int32), **feeds}
    return model, feeds


@pytest.mark.parametrize(
    "op, gates, case",
    [
        ("LSTM", 4, {}),
        ("LSTM", 4, {"directions": 2, "direction": "bidirectional", "lengths": [4, 2, 3]}),
        ("LSTM", 4, {"layout": 1, "direction": "reverse", "states": False}),
        ("GRU", 3, {}),
        ("GRU", 3, {"linear_before_reset": 1, "bias": False, "lengths": [1, 4, 2]}),
        ("GRU", 3, {"directions": 2, "direction": "bidirectional", "layout": 1}),
        ("RNN", 1, {}),
        ("RNN", 1, {"activations": ["Relu"], "direction": "reverse", "lengths": [2, 4, 3]}),
    ],
)
def test_recurrent_layers_with_run_time_weights(tmp_path, op, gates, case):
    """Against onnxruntime; the batch-first layout (which onnxruntime refuses) against the ONNX
    reference implementation."""
    model, feeds = _recurrent_case(op, gates, **case)
    if not case.get("layout"):
        result = assert_matches(model, tmp_path, feeds, rtol=1e-3, atol=1e-4)
    else:
        result = convert_fully(model, tmp_path)
        got = run_mindspore(result.script_path, result.checkpoint_path, list(feeds.values()))
        want = ReferenceEvaluator(model).run(None, feeds)
        assert_outputs_match(got, want, rtol=1e-3, atol=1e-4)
    assert "RecurrenceOfInputs" in result.script_path.read_text()
