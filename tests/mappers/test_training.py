"""Optimizer steps (ai.onnx.preview.training) and training-mode BatchNormalization with running
statistics, against onnx's reference evaluator (onnxruntime's CPU build lacks these)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from tests.helpers import make_model

TRAINING = "ai.onnx.preview.training"
rng = np.random.default_rng(7)


def _run_both(model, feeds, tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    result = convert(path, output=tmp_path / "out")
    assert result.unconverted == []
    names = [value.name for value in model.graph.input]
    got = run_mindspore(result.script_path, result.checkpoint_path, [feeds[n] for n in names])
    want = ReferenceEvaluator(model).run(None, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def _optimizer_model(op, groups, tensors, attrs):
    """``op`` updating ``tensors`` (count) with ``groups`` state groups after X (G, V, H...)."""
    names = [f"{group}{i}" for group in groups for i in range(tensors)]
    node = helper.make_node(
        op,
        ["R", "T", *names],
        [f"{group}{i}_new" for group in [groups[0]] + groups[2:] for i in range(tensors)],
        domain=TRAINING,
        **attrs,
    )
    inputs = [("R", np.float32, ()), ("T", np.int64, ())]
    inputs += [(name, np.float32, (3, 4)) for name in names]
    outputs = [(name, np.float32, None) for name in node.output]
    return make_model([node], inputs, outputs, extra_opsets={TRAINING: 1})


def _feeds(model, step):
    feeds = {"R": np.array(0.1, np.float32), "T": np.array(step, np.int64)}
    for value in model.graph.input[2:]:
        data = rng.standard_normal((3, 4)).astype(np.float32)
        feeds[value.name] = np.abs(data) if value.name.startswith("H") else data
    return feeds


@pytest.mark.parametrize("step", [0, 3])
@pytest.mark.parametrize(
    ("op", "groups", "attrs"),
    [
        (
            "Adagrad",
            ["X", "G", "H"],
            {"decay_factor": 0.1, "epsilon": 1e-6, "norm_coefficient": 0.01},
        ),
        ("Adam", ["X", "G", "V", "H"], {"alpha": 0.9, "beta": 0.99, "epsilon": 1e-6}),
        (
            "Adam",
            ["X", "G", "V", "H"],
            {"norm_coefficient": 0.02, "norm_coefficient_post": 0.05, "epsilon": 1e-4},
        ),
        (
            "Momentum",
            ["X", "G", "V"],
            {"alpha": 0.9, "beta": 0.5, "mode": "standard", "norm_coefficient": 0.0},
        ),
        (
            "Momentum",
            ["X", "G", "V"],
            {"alpha": 0.8, "beta": 0.3, "mode": "nesterov", "norm_coefficient": 0.1},
        ),
    ],
)
def test_optimizer_steps_match_the_reference(op, groups, attrs, step, tmp_path):
    model = _optimizer_model(op, groups, 2, attrs)
    _run_both(model, _feeds(model, step), tmp_path)


def test_momentum_mode_outside_the_spec_is_refused(tmp_path):
    model = _optimizer_model(
        "Momentum", ["X", "G", "V"], 1, {"alpha": 0.9, "beta": 0.5, "mode": "heavy"}
    )
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    result = convert(path, output=tmp_path / "out")
    assert [u.op_type for u in result.unconverted] == ["Momentum"]
    assert "mode 'heavy'" in result.unconverted[0].reason


@pytest.mark.parametrize("rank", [2, 4])
def test_training_mode_batch_norm_returns_updated_running_statistics(rank, tmp_path):
    shape = (4, 3) if rank == 2 else (2, 3, 4, 5)
    node = helper.make_node(
        "BatchNormalization",
        ["x", "scale", "bias", "mean", "var"],
        ["y", "running_mean", "running_var"],
        training_mode=1,
        momentum=0.8,
        epsilon=1e-3,
    )
    inits = {
        "scale": rng.standard_normal(3).astype(np.float32),
        "bias": rng.standard_normal(3).astype(np.float32),
        "mean": rng.standard_normal(3).astype(np.float32),
        "var": rng.random(3).astype(np.float32) + 0.5,
    }
    model = make_model(
        [node],
        [("x", np.float32, shape)],
        [
            ("y", np.float32, None),
            ("running_mean", np.float32, None),
            ("running_var", np.float32, None),
        ],
        inits,
        opset=15,
    )
    _run_both(model, {"x": rng.standard_normal(shape).astype(np.float32)}, tmp_path)
