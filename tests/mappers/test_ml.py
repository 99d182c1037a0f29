"""ai.onnx.ml operators on numeric tensors against onnxruntime and onnx's reference evaluator."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from tests.helpers import assert_matches, make_model

ML = {"ai.onnx.ml": 5}


def test_binarizer(tmp_path):
    node = helper.make_node("Binarizer", ["x"], ["y"], domain="ai.onnx.ml", threshold=0.25)
    model = make_model(
        [node],
        [("x", np.float32, (3, 4))],
        [("y", np.float32, None)],
        extra_opsets={"ai.onnx.ml": 1},
    )
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("shape", [(2, 3, 5), (5,)])
def test_array_feature_extractor(shape, tmp_path):
    node = helper.make_node("ArrayFeatureExtractor", ["x", "i"], ["y"], domain="ai.onnx.ml")
    model = make_model(
        [node],
        [("x", np.float32, shape), ("i", np.int64, (3,))],
        [("y", np.float32, None)],
        extra_opsets={"ai.onnx.ml": 1},
    )
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    assert_matches(model, tmp_path, feeds={"x": x, "i": np.array([4, 0, 2], np.int64)})


def _random_forest(rng, trees, features, targets, modes):
    """TreeEnsemble attributes of ``trees`` random full trees of depth 1-3."""
    attrs = {k: [] for k in ("splits", "features", "modes", "true", "false", "tleaf", "fleaf")}
    leaf_targets, leaf_weights, roots, members = [], [], [], []

    def grow(depth):
        node = len(attrs["splits"])
        mode = int(rng.choice(modes))
        attrs["modes"].append(mode)
        attrs["features"].append(int(rng.integers(features)))
        attrs["splits"].append(float(rng.integers(-2, 3)) / 2)
        if mode == 6:
            members.extend([float(v) for v in rng.choice([-1.0, 0.5, 1.0, 1.5], 2, replace=False)])
            members.append(np.nan)
        for key, leaf_key in (("true", "tleaf"), ("false", "fleaf")):
            attrs[key].append(None)
            attrs[leaf_key].append(None)
        for key, leaf_key in (("true", "tleaf"), ("false", "fleaf")):
            if depth == 0 or rng.random() < 0.3:
                attrs[key][node] = len(leaf_weights)
                attrs[leaf_key][node] = 1
                leaf_targets.append(int(rng.integers(targets)))
                leaf_weights.append(float(rng.standard_normal()))
            else:
                attrs[leaf_key][node] = 0
                attrs[key][node] = grow(depth - 1)
        return node

    for _ in range(trees):
        roots.append(grow(int(rng.integers(1, 4))))
    result = dict(
        nodes_splits=numpy_helper.from_array(np.array(attrs["splits"], np.float32)),
        nodes_featureids=attrs["features"],
        nodes_modes=numpy_helper.from_array(np.array(attrs["modes"], np.uint8)),
        nodes_truenodeids=attrs["true"],
        nodes_falsenodeids=attrs["false"],
        nodes_trueleafs=attrs["tleaf"],
        nodes_falseleafs=attrs["fleaf"],
        leaf_targetids=leaf_targets,
        leaf_weights=numpy_helper.from_array(np.array(leaf_weights, np.float32)),
        tree_roots=roots,
        n_targets=targets,
    )
    if members:
        result["membership_values"] = numpy_helper.from_array(np.array(members, np.float32))
    return result


@pytest.mark.parametrize("aggregate", [0, 1, 2, 3])
@pytest.mark.parametrize("modes", [[0], [0, 1, 2, 3, 4, 5], [0, 6]])
def test_tree_ensemble_matches_the_reference(aggregate, modes, tmp_path):
    rng = np.random.default_rng(aggregate * 10 + len(modes))
    attrs = _random_forest(rng, trees=4, features=3, targets=2, modes=modes)
    node = helper.make_node(
        "TreeEnsemble", ["x"], ["y"], domain="ai.onnx.ml", aggregate_function=aggregate, **attrs
    )
    model = make_model(
        [node], [("x", np.float32, (16, 3))], [("y", np.float32, None)], extra_opsets=ML
    )
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    result = convert(path, output=tmp_path / "out")
    assert result.unconverted == []
    x = (rng.integers(-3, 4, (16, 3)) / 2).astype(np.float32)  # values on the split grid
    got = run_mindspore(result.script_path, result.checkpoint_path, [x])[0]
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
