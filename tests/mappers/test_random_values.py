"""Random generators: the values cannot equal another runtime's, so shapes, dtypes and the
distribution (moments, ranges, frequencies over many draws) are checked."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from tests.helpers import make_model


def _run(model, feeds, tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    result = convert(path, output=tmp_path / "out")
    assert result.unconverted == []
    return run_mindspore(result.script_path, result.checkpoint_path, feeds)


@pytest.mark.parametrize("dtype", [TensorProto.FLOAT, TensorProto.DOUBLE])
def test_random_normal_and_uniform_have_their_moments(dtype, tmp_path):
    nodes = [
        helper.make_node(
            "RandomNormal", [], ["n"], shape=[200, 100], mean=2.0, scale=0.5, dtype=dtype
        ),
        helper.make_node(
            "RandomUniform", [], ["u"], shape=[200, 100], low=-1.0, high=3.0, dtype=dtype
        ),
        helper.make_node("Add", ["x", "x"], ["y"]),
    ]
    np_dtype = helper.tensor_dtype_to_np_dtype(dtype)
    model = make_model(
        nodes,
        [("x", np.float32, (2,))],
        [("n", np_dtype, None), ("u", np_dtype, None), ("y", np.float32, None)],
    )
    normal, uniform, _ = _run(model, [np.ones(2, np.float32)], tmp_path)
    assert normal.shape == uniform.shape == (200, 100)
    assert normal.dtype == uniform.dtype == np_dtype
    assert abs(normal.mean() - 2.0) < 0.02 and abs(normal.std() - 0.5) < 0.02
    assert uniform.min() >= -1.0 and uniform.max() < 3.0 and abs(uniform.mean() - 1.0) < 0.05


def test_like_forms_follow_the_input_shape_and_bernoulli_its_probabilities(tmp_path):
    nodes = [
        helper.make_node("RandomNormalLike", ["x"], ["n"]),
        helper.make_node("RandomUniformLike", ["x"], ["u"], dtype=TensorProto.DOUBLE),
        helper.make_node("Bernoulli", ["p"], ["b"], dtype=TensorProto.INT32),
    ]
    model = make_model(
        nodes,
        [("x", np.float32, (300, 50)), ("p", np.float32, (20000,))],
        [("n", np.float32, None), ("u", np.float64, None), ("b", np.int32, None)],
        opset=17,
    )
    p = np.repeat(np.array([0.0, 0.25, 0.9, 1.0], np.float32), 5000)
    normal, uniform, draws = _run(model, [np.zeros((300, 50), np.float32), p], tmp_path)
    assert normal.shape == (300, 50) and normal.dtype == np.float32 and abs(normal.std() - 1) < 0.03
    assert uniform.dtype == np.float64 and 0.0 <= uniform.min() and uniform.max() < 1.0
    assert draws.dtype == np.int32 and set(np.unique(draws)) <= {0, 1}
    frequencies = draws.reshape(4, 5000).mean(axis=1)
    np.testing.assert_allclose(frequencies, [0.0, 0.25, 0.9, 1.0], atol=0.03)


def test_multinomial_draws_classes_by_their_probabilities(tmp_path):
    node = helper.make_node(
        "Multinomial", ["logits"], ["s"], sample_size=4000, dtype=TensorProto.INT64
    )
    model = make_model([node], [("logits", np.float32, (2, 3))], [("s", np.int64, None)])
    logits = np.log(np.array([[0.2, 0.3, 0.5], [0.9, 0.05, 0.05]], np.float32))
    (samples,) = _run(model, [logits], tmp_path)
    assert samples.shape == (2, 4000) and samples.dtype == np.int64
    counts = np.stack([np.bincount(row, minlength=3) / 4000 for row in samples])
    np.testing.assert_allclose(counts, np.exp(logits), atol=0.04)


def test_verification_compares_only_the_shape_of_random_outputs(tmp_path):
    nodes = [
        helper.make_node("RandomNormalLike", ["x"], ["noise"]),
        helper.make_node("Add", ["x", "noise"], ["noisy"]),
        helper.make_node("Relu", ["x"], ["clean"]),
    ]
    model = make_model(
        nodes,
        [("x", np.float32, ("N", 4))],
        [("noisy", np.float32, None), ("clean", np.float32, None)],
    )
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    result = convert(path, output=tmp_path / "out", shape=[(2, 4)], verify=True)
    rows = {row.name: row for row in result.verification["outputs"]}
    assert rows["noisy"].random and rows["noisy"].ok
    assert not rows["clean"].random and rows["clean"].ok
    report = result.report_path.read_text()
    assert "noisy: drawn by a random generator, only the shape compared -> ok" in report
