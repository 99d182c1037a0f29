"""Typed weight steps: prose and JSON forms agree, and each step does what it describes."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from mindconverter.graph.weight_steps import (
    BatchNormFold,
    Computed,
    GateReorder,
    Index,
    Transpose,
    folded_batchnorm,
    parse_steps,
    steps_from_json,
)

RNG = np.random.default_rng(1)


@pytest.mark.parametrize(
    "prose",
    [
        "transpose(1, 0)",
        "[0, 20:]; gates i,o,f,c -> i,f,c,o",
        "Identity(); Transpose(perm=[0, 2, 1])",
        "Cast(to=10)",
        "BatchNorm folded into the convolution by the exporter",
        "Mul()",
    ],
)
def test_json_round_trip_keeps_the_steps(prose):
    steps = parse_steps(prose)
    text = json.dumps([step.to_json() for step in steps])
    again = steps_from_json(json.loads(text))
    assert [step.to_json() for step in again] == [step.to_json() for step in steps]


def test_steps_do_what_they_describe():
    array = RNG.standard_normal((1, 8, 3)).astype(np.float32)
    index, gates = parse_steps("[0]; gates a,b -> b,a")
    assert isinstance(index, Index) and isinstance(gates, GateReorder)
    assert gates.describe() == "gates a,b -> b,a"
    picked = index.apply(array)
    np.testing.assert_array_equal(gates.apply(picked), np.concatenate([picked[4:], picked[:4]]))
    assert parse_steps("transpose(1, 0)") == [Transpose((1, 0))]
    assert isinstance(parse_steps("DequantizeLinear()")[0], Computed)


def test_batchnorm_fold_formula():
    weight = RNG.standard_normal((3, 2, 1, 1))
    bias, gamma, beta, mean = (RNG.standard_normal(3) for _ in range(4))
    var = RNG.random(3) + 0.5
    scale = gamma / np.sqrt(var + 1e-3)
    args = (weight, bias, gamma, beta, mean, var, 1e-3)
    folded = BatchNormFold("weight").fold(*args)
    np.testing.assert_allclose(folded, weight * scale[:, None, None, None])
    np.testing.assert_allclose(BatchNormFold("bias").fold(*args), (bias - mean) * scale + beta)


@pytest.mark.parametrize(
    "entry",
    [
        {"op": "transpose", "perm": ["1", 0]},
        {"op": "index", "items": [[1, 2, 3]]},
        {"op": "gates", "source": ["i", "f"], "target": ["i", "o"]},
        {"op": "batchnorm_fold", "part": "running_var"},
        {"op": "batchnorm_fold", "part": "weight", "eps": 1e9},
        {"op": "cast", "dtype": "no-such-type"},
        ["transpose"],
    ],
)
def test_malformed_steps_are_refused(entry):
    with pytest.raises(ValueError):
        steps_from_json([entry])


def test_a_dynamo_fold_records_its_batchnorm_and_epsilon():
    node = SimpleNamespace(
        name="node_Conv_63",
        metadata={
            "pkg.torch.onnx.name_scopes": "['', 'layer1', 'layer1.0.bn1', '_native_batch_norm']",
            "pkg.torch.onnx.class_hierarchy": "['Net', 'Sequential', 'torch.nn.BatchNorm2d', 'x']",
            "pkg.torch.onnx.fx_node": "%b = call_function[target=torch.ops.aten._native_batch_norm"
            "_legit_no_training.default](args = (%c, %w, %b, %m, %v, 0.1, 0.001), kwargs = {})",
        },
    )
    assert folded_batchnorm(node) == ("layer1.0.bn1", 0.001)
    assert folded_batchnorm(SimpleNamespace(name="/conv1/Conv", metadata={})) == ("", None)
