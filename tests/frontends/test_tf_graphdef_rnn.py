"""Keras recurrent models (LSTM, GRU, SimpleRNN, Bidirectional, stacked) frozen to .pb both ways,
converted, run in MindSpore and compared with TensorFlow.

* ``lower_control_flow=True`` (the default of ``convert_variables_to_constants_v2``) leaves TF1
  while loops over TensorLists: tf_loading.densify_tensor_lists turns the lists into plain
  tensors, tf2onnx makes an ONNX Loop, and the preprocessing unrolls it (mindconverter/unroll.py).
* ``lower_control_flow=False`` keeps functional While ops: tf2onnx turns LSTMs into ONNX LSTM
  nodes and the other cells into Loops, which are unrolled the same way.
"""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")
pytest.importorskip("tf2onnx")

import numpy as np

from .tfutil import convert_and_compare, freeze_keras, keras_module, tf

keras = keras_module()
TOLERANCE = 1e-4
VOCAB, SEQ, UNITS, BATCH = 50, 8, 16, 2


def _text_model(kind: str):
    keras.utils.set_random_seed(7)
    inp = keras.Input((SEQ,), dtype="int32")
    x = keras.layers.Embedding(VOCAB, UNITS)(inp)
    if kind == "lstm":
        x = keras.layers.LSTM(UNITS)(x)
    elif kind == "gru":
        x = keras.layers.GRU(UNITS)(x)
    elif kind == "simple_rnn":
        x = keras.layers.SimpleRNN(UNITS)(x)
    elif kind == "bidirectional_lstm":
        x = keras.layers.Bidirectional(keras.layers.LSTM(UNITS))(x)
    elif kind == "stacked":  # whole sequences between layers: the loop writes every time step
        x = keras.layers.LSTM(UNITS, return_sequences=True)(x)
        x = keras.layers.GRU(UNITS, return_sequences=True, go_backwards=True)(x)
        x = keras.layers.GlobalAveragePooling1D()(x)
    return keras.Model(inp, keras.layers.Dense(4)(x))  # raw logits: no softmax to damp errors


@pytest.mark.parametrize(
    "lower_control_flow", [True, False], ids=["default_freeze", "functional_while"]
)
@pytest.mark.parametrize("kind", ["lstm", "gru", "simple_rnn", "bidirectional_lstm", "stacked"])
def test_keras_rnn_converts_and_matches(tmp_path, kind, lower_control_flow):
    pb = tmp_path / f"{kind}.pb"
    _, inputs, outputs = freeze_keras(
        _text_model(kind),
        [(BATCH, SEQ)],
        pb,
        dtypes=[tf.int32],
        lower_control_flow=lower_control_flow,
    )
    feed = np.random.default_rng(0).integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32)
    result, errors = convert_and_compare(pb, inputs, outputs, [feed], tmp_path / "out")
    assert result.unconverted == [], [(u.op_type, u.reason) for u in result.unconverted]
    assert max(errors) < TOLERANCE, errors
    script = result.script_path.read_text()
    assert "onnx." not in script  # no placeholder for an unconverted node
    if lower_control_flow or kind in (
        "gru",
        "simple_rnn",
    ):  # loops unrolled into straight-line code
        assert "ops.sigmoid" in script or "ops.tanh" in script


def test_sequence_output_and_batch_none_tracing(tmp_path):
    """A model traced with a dynamic batch (the usual export): --shape fixes it, lists stay dense."""
    keras.utils.set_random_seed(3)
    inp = keras.Input((SEQ,), dtype="int32")
    x = keras.layers.Embedding(VOCAB, UNITS)(inp)
    x = keras.layers.SimpleRNN(UNITS, return_sequences=True)(x)
    model = keras.Model(inp, keras.layers.Dense(3)(x))
    pb = tmp_path / "seq.pb"
    _, inputs, outputs = freeze_keras(
        model, [(None, SEQ)], pb, dtypes=[tf.int32], lower_control_flow=True
    )
    feed = np.random.default_rng(1).integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32)
    result, errors = convert_and_compare(pb, inputs, outputs, [feed], tmp_path / "out")
    assert result.unconverted == [], [(u.op_type, u.reason) for u in result.unconverted]
    assert max(errors) < TOLERANCE, errors
