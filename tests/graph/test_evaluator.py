"""The one evaluator: single nodes at the model's opset, and short chains on probe inputs."""

from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

from mindconverter.graph.evaluator import NOT_FOLDABLE, evaluate_chain, evaluate_node


def test_a_node_runs_at_the_models_opset():
    # opset 9 Unsqueeze takes axes as an attribute; at the newest opset this would fail
    node = helper.make_node("Unsqueeze", ["x"], ["y"], axes=[0])
    (result,) = evaluate_node(node, {"": 9}, [np.arange(3, dtype=np.int64)])
    assert result.shape == (1, 3)


def test_a_node_that_cannot_run_gives_none():
    node = helper.make_node("Reshape", ["x", "shape"], ["y"])
    assert evaluate_node(node, {"": 17}, [np.arange(3.0), np.array([2, 2])]) is None


def test_random_and_control_flow_operators_are_never_folded():
    assert {"RandomNormal", "If", "Loop", "Scan"} <= NOT_FOLDABLE


def test_a_chain_runs_on_a_probe_value():
    nodes = [
        helper.make_node("Mul", ["x", "two"], ["m"]),
        helper.make_node("Add", ["m", "one"], ["y"]),
    ]
    inits = [
        numpy_helper.from_array(np.array(2.0, np.float32), "two"),
        numpy_helper.from_array(np.array(1.0, np.float32), "one"),
    ]
    probe = np.array([0.0, 1.5], np.float32)
    np.testing.assert_allclose(evaluate_chain(nodes, "x", probe, "y", inits, 17), [1.0, 4.0])
    assert evaluate_chain(nodes, "x", probe, "y", inits[:1], 17) is None
