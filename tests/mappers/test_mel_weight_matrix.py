"""MelWeightMatrix with constant inputs (as exporters write it) is computed at conversion time
and equals onnx's reference evaluator."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper
from onnx.reference import ReferenceEvaluator

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from tests.helpers import make_model


def test_mel_weight_matrix_of_constants(tmp_path):
    consts = {
        "bins": np.array(8, np.int64),
        "dft": np.array(64, np.int64),
        "rate": np.array(8000, np.int64),
        "low": np.array(0.0, np.float32),
        "high": np.array(3000.0, np.float32),
    }
    nodes = [
        helper.make_node("MelWeightMatrix", list(consts), ["matrix"]),
        helper.make_node("MatMul", ["spectrum", "matrix"], ["mel"]),
    ]
    model = make_model(
        nodes, [("spectrum", np.float32, [3, 33])], [("mel", np.float32, None)], consts, opset=17
    )
    onnx.save(model, tmp_path / "m.onnx")
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out")
    assert result.unconverted == []
    spectrum = np.random.default_rng(0).uniform(size=(3, 33)).astype(np.float32)
    (got,) = run_mindspore(result.script_path, result.checkpoint_path, [spectrum])
    (want,) = ReferenceEvaluator(model).run(None, {"spectrum": spectrum})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
