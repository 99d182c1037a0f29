"""Networks that keep the model's dynamic dimensions (``dynamic=True``) run at other sizes.

Each fixture is converted once at one shape and then run by MindSpore at several batch sizes and
sequence lengths, against onnxruntime on the same inputs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from mindconverter import convert
from mindconverter.check.network import run_mindspore

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _feeds(model: Path, shapes, seed: int):
    rng = np.random.default_rng(seed)
    session = ort.InferenceSession(str(model))
    feeds = []
    for spec, shape in zip(session.get_inputs(), shapes):
        if "int64" in spec.type:
            feeds.append(
                np.ones(shape, np.int64) if "mask" in spec.name else rng.integers(0, 50, shape)
            )
        else:
            feeds.append(rng.standard_normal(shape).astype(np.float32))
    expected = session.run(None, {spec.name: f for spec, f in zip(session.get_inputs(), feeds)})
    return feeds, expected


@pytest.mark.parametrize(
    "fixture,convert_at,run_at",
    [
        ("tiny_resnet_torchscript.onnx", ["2,3,32,32"], [[(3, 3, 32, 32)], [(1, 3, 32, 32)]]),
        ("tiny_resnet_dynamo.onnx", ["2,3,32,32"], [[(3, 3, 32, 32)]]),
        ("tiny_bert_torchscript.onnx", ["2,8", "2,8"], [[(3, 5), (3, 5)], [(1, 11), (1, 11)]]),
        ("tiny_bert_dynamo.onnx", ["2,8", "2,8"], [[(3, 5), (3, 5)], [(1, 11), (1, 11)]]),
    ],
)
def test_one_conversion_serves_other_sizes(tmp_path, fixture, convert_at, run_at):
    result = convert(FIXTURES / fixture, shape=convert_at, output=tmp_path, dynamic=True)
    assert result.fully_converted
    for seed, shapes in enumerate(run_at):
        feeds, expected = _feeds(FIXTURES / fixture, shapes, seed)
        actual = run_mindspore(result.script_path, result.checkpoint_path, feeds)
        for got, want in zip(actual, expected):
            assert got.shape == want.shape
            scale = max(float(np.abs(want).max()), 1e-6)
            assert float(np.abs(got - want).max()) / scale < 1e-4


def test_graph_mode_runs_the_dynamic_network_at_two_sizes(tmp_path):
    fixture = FIXTURES / "tiny_bert_dynamo.onnx"
    result = convert(fixture, shape=["2,8", "2,8"], output=tmp_path, dynamic=True)
    for seed, shapes in enumerate(([(2, 8), (2, 8)], [(3, 6), (3, 6)])):
        feeds, expected = _feeds(fixture, shapes, seed)
        actual = run_mindspore(result.script_path, result.checkpoint_path, feeds, graph_mode=True)
        assert len(actual) == len(expected) == 2
        for got, want in zip(actual, expected):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_verification_checks_a_second_size(tmp_path):
    result = convert(
        FIXTURES / "tiny_resnet_dynamo.onnx",
        shape=["2,3,32,32"],
        output=tmp_path,
        dynamic=True,
        verify=True,
    )
    assert result.verification["ok"]
    shapes = [list(s.values())[0] for s in result.verification["shapes"]]
    assert shapes == [(2, 3, 32, 32), (3, 3, 32, 32)]
    assert "at input shapes" in result.report_path.read_text()
