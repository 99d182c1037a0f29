"""Helpers for the TensorFlow tests: freeze Keras models to .pb, convert, compare with TF."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

from mindconverter import convert
from mindconverter.check.network import run_mindspore


def freeze_keras(
    model, shapes: Sequence[Sequence[int]], path: Path, dtypes=None, lower_control_flow=False
):
    """TF2 style: trace ``model`` with static input specs and freeze it; returns (frozen fn, in, out names)."""
    dtypes = dtypes or [tf.float32] * len(shapes)
    names = [f"x{i}" if len(shapes) > 1 else "x" for i in range(len(shapes))]
    specs = [
        tf.TensorSpec(shape, dtype, name=name) for shape, dtype, name in zip(shapes, dtypes, names)
    ]
    if len(specs) == 1:
        fn = tf.function(lambda x: model(x, training=False))
    else:
        fn = tf.function(lambda *xs: model(list(xs), training=False))
    concrete = fn.get_concrete_function(*specs)
    frozen = convert_variables_to_constants_v2(concrete, lower_control_flow=lower_control_flow)
    Path(path).write_bytes(frozen.graph.as_graph_def().SerializeToString())
    return frozen, [t.name for t in frozen.inputs], [t.name for t in frozen.outputs]


def run_graphdef(
    path: Path, inputs: Sequence[str], outputs: Sequence[str], feeds: Sequence[np.ndarray]
):
    """Run the frozen graph in TensorFlow itself (the reference)."""
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(Path(path).read_bytes())
    with tf.Graph().as_default() as graph:
        tf.graph_util.import_graph_def(graph_def, name="")
        with tf.compat.v1.Session(graph=graph) as sess:
            return sess.run(list(outputs), dict(zip(inputs, feeds)))


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """max |got - want| relative to the output's scale (max |want|, at least 1e-6)."""
    scale = max(float(np.max(np.abs(want))), 1e-6)
    return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) / scale


def convert_and_compare(
    pb: Path,
    inputs: Sequence[str],
    outputs: Sequence[str],
    feeds: Sequence[np.ndarray],
    out_dir: Path,
    graph_mode: bool = False,
    **kwargs,
):
    """Convert ``pb`` through the real pipeline, run the script in MindSpore; returns (result, errors)."""
    shapes = [",".join(map(str, feed.shape)) for feed in feeds]
    result = convert(
        pb,
        shape=shapes,
        input_nodes=list(inputs),
        output_nodes=list(outputs),
        output=out_dir,
        **kwargs,
    )
    # TensorFlow runs the tensors the conversion resolved ('probs' -> 'probs:0')
    want = run_graphdef(
        pb, [s.name for s in result.inputs], [s.name for s in result.outputs], feeds
    )
    got = run_mindspore(
        result.script_path, result.checkpoint_path, list(feeds), graph_mode=graph_mode
    )
    assert len(got) == len(want)
    errors = []
    for g, w in zip(got, want):
        assert g.shape == w.shape, (g.shape, w.shape)
        errors.append(relative_error(g, w))
    return result, errors


def keras_module():
    """Keras as shipped with TensorFlow (Keras 3 for TF >= 2.16)."""
    import keras

    return keras
