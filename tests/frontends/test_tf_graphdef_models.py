"""TensorFlow frozen graphs (.pb) end to end: Keras models built here, frozen, converted, run in
MindSpore and compared with TensorFlow's own outputs on the same inputs."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("tensorflow")
pytest.importorskip("tf2onnx")

import numpy as np

from .tfutil import convert_and_compare, freeze_keras, keras_module, tf

keras = keras_module()
TOLERANCE = 1e-4


def _randomise_batchnorm(model, rng):
    """Non-trivial BatchNorm statistics, so a wrong BN conversion shows."""
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            weights = layer.get_weights()
            new = [rng.normal(0, 0.2, w.shape) for w in weights[:-1]] + [
                rng.uniform(0.5, 1.5, weights[-1].shape)
            ]
            if layer.scale:
                new[0] = rng.uniform(0.5, 1.5, weights[0].shape)
            layer.set_weights(new)


def _transposes(script_path) -> int:
    return len(re.findall(r"ops\.transpose\(", script_path.read_text()))


def test_cnn_keeps_nhwc_input_and_transposes_once(tmp_path):
    keras.utils.set_random_seed(1)
    inp = keras.Input((16, 16, 3))
    x = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(inp)
    x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.Conv2D(8, 3, strides=2, padding="same", activation="relu")(x)
    x = keras.layers.AveragePooling2D(2)(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(10, activation="softmax")(x)
    pb = tmp_path / "cnn.pb"
    _, inputs, outputs = freeze_keras(keras.Model(inp, x), [(2, 16, 16, 3)], pb)
    assert inputs == ["x:0"] and outputs == ["Identity:0"]
    feed = np.random.default_rng(0).standard_normal((2, 16, 16, 3)).astype(np.float32)
    result, errors = convert_and_compare(pb, inputs, outputs, [feed], tmp_path / "out")
    assert result.unconverted == []
    assert max(errors) < TOLERANCE, errors
    # NHWC in (as fed to TF); one transpose at the input and one before the NHWC Flatten.
    assert _transposes(result.script_path) <= 2
    assert [spec.name for spec in result.inputs] == ["x:0"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "cnn.pb",
        "out",
    ]  # nothing beside the input


def test_batchnorm_depthwise_separable_residual(tmp_path):
    keras.utils.set_random_seed(2)
    inp = keras.Input((16, 16, 4))
    x = keras.layers.Conv2D(8, 3, padding="same", use_bias=False)(inp)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.ReLU(6.0)(x)
    y = keras.layers.DepthwiseConv2D(3, padding="same", use_bias=False)(x)
    y = keras.layers.BatchNormalization()(y)
    y = keras.layers.Activation("swish")(y)
    x = keras.layers.Add()([x, y])
    x = keras.layers.SeparableConv2D(12, 3, strides=2, padding="same")(x)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    model = keras.Model(inp, keras.layers.Dense(5)(x))
    _randomise_batchnorm(model, np.random.default_rng(3))
    pb = tmp_path / "bn.pb"
    _, inputs, outputs = freeze_keras(model, [(1, 16, 16, 4)], pb)
    feed = np.random.default_rng(4).standard_normal((1, 16, 16, 4)).astype(np.float32)
    result, errors = convert_and_compare(pb, inputs, outputs, [feed], tmp_path / "out")
    assert result.unconverted == []
    assert max(errors) < TOLERANCE, errors
    assert _transposes(result.script_path) == 1  # only the NHWC input


def test_tf1_style_frozen_graph(tmp_path):
    """TF1: placeholder + variables in a session, frozen with convert_variables_to_constants."""
    rng = np.random.default_rng(5)
    with tf.Graph().as_default() as graph:
        images = tf.compat.v1.placeholder(tf.float32, (None, 8, 8, 3), name="images")
        kernel = tf.Variable(rng.standard_normal((3, 3, 3, 4)).astype(np.float32))
        bias = tf.Variable(rng.standard_normal(4).astype(np.float32))
        x = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(images, kernel, 1, "SAME"), bias))
        x = tf.nn.max_pool2d(x, 2, 2, "VALID")
        x = tf.reshape(x, (-1, 4 * 4 * 4))
        dense = tf.Variable(rng.standard_normal((64, 3)).astype(np.float32))
        tf.nn.softmax(tf.matmul(x, dense), name="probs")
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            frozen = tf.compat.v1.graph_util.convert_variables_to_constants(
                sess, graph.as_graph_def(), ["probs"]
            )
    pb = tmp_path / "tf1.pb"
    pb.write_bytes(frozen.SerializeToString())
    feed = rng.standard_normal((2, 8, 8, 3)).astype(np.float32)
    # bare node names are accepted and mean port 0
    result, errors = convert_and_compare(pb, ["images:0"], ["probs"], [feed], tmp_path / "out")
    assert result.unconverted == []
    assert max(errors) < TOLERANCE, errors
    assert [spec.name for spec in result.outputs] == ["probs:0"]


def _text_model(kind: str):
    keras.utils.set_random_seed(6)
    inp = keras.Input((10,), dtype="int32")
    x = keras.layers.Embedding(40, 12)(inp)
    if kind == "lstm":
        x = keras.layers.LSTM(16, return_sequences=True)(x)
        x = keras.layers.LSTM(8)(x)
    elif kind == "bilstm":
        x = keras.layers.Bidirectional(keras.layers.LSTM(8, return_sequences=True))(x)
        x = keras.layers.GlobalMaxPooling1D()(x)
    elif kind == "gru":
        x = keras.layers.GRU(16, return_sequences=True)(x)
        x = keras.layers.GRU(8)(x)
    elif kind == "transformer":
        attention = keras.layers.MultiHeadAttention(num_heads=2, key_dim=6)(x, x)
        x = keras.layers.LayerNormalization()(x + attention)
        ffn = keras.layers.Dense(24, activation="gelu")(x)  # Keras 3: exact GELU -> TF Erfc
        ffn = keras.layers.Dropout(0.1)(keras.layers.Dense(12)(ffn))
        x = keras.layers.LayerNormalization()(x + ffn)
        x = keras.layers.GlobalAveragePooling1D()(x)
    return keras.Model(inp, keras.layers.Dense(4, activation="softmax")(x))


@pytest.mark.parametrize("kind", ["lstm", "bilstm", "transformer"])
def test_text_models(tmp_path, kind):
    pb = tmp_path / f"{kind}.pb"
    _, inputs, outputs = freeze_keras(_text_model(kind), [(2, 10)], pb, dtypes=[tf.int32])
    feed = np.random.default_rng(7).integers(0, 40, (2, 10)).astype(np.int32)
    result, errors = convert_and_compare(pb, inputs, outputs, [feed], tmp_path / "out")
    assert result.unconverted == [], [(u.op_type, u.reason) for u in result.unconverted]
    assert max(errors) < TOLERANCE, errors
    if kind in ("lstm", "bilstm"):
        assert "LSTM" in result.operator_counts or "onnx::LSTM" in result.operator_counts


def test_grouped_convolution_compiled_by_xla_is_inlined(tmp_path):
    """Keras 3 runs a grouped Conv2D through a function compiled by XLA, which freezing leaves
    as a StatefulPartitionedCall marked not to be inlined; the frontend inlines it."""
    keras.utils.set_random_seed(3)
    inp = keras.Input((8, 8, 4))
    x = keras.layers.Conv2D(8, 3, groups=4, padding="same", activation="relu")(inp)
    x = keras.layers.Conv2D(8, 1)(x)
    model = keras.Model(inp, keras.layers.GlobalAveragePooling2D()(x))
    pb = tmp_path / "grouped.pb"
    _, inputs, outputs = freeze_keras(model, [(2, 8, 8, 4)], pb)
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(pb.read_bytes())
    assert any(node.op == "StatefulPartitionedCall" for node in graph_def.node)
    feed = np.random.default_rng(3).standard_normal((2, 8, 8, 4)).astype(np.float32)
    result, errors = convert_and_compare(pb, inputs, outputs, [feed], tmp_path / "out")
    assert result.unconverted == [], [(u.op_type, u.reason) for u in result.unconverted]
    assert max(errors) < TOLERANCE, errors
