"""Graph handling that real exports need (found by the model corpus, tools/corpus/)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from tests.helpers import assert_matches, make_model

F32 = np.float32


def _const(name, value, dtype):
    return helper.make_node(
        "Constant", [], [name], value=onnx.numpy_helper.from_array(np.asarray(value, dtype), name)
    )


def _first_dim_is_one(x, prefix):
    """Nodes computing ``x.shape[0] == 1`` (how exporters guard squeezes), output ``{prefix}cond``."""
    return [
        helper.make_node("Shape", [x], [f"{prefix}shape"]),
        _const(f"{prefix}zero", 0, np.int64),
        helper.make_node("Gather", [f"{prefix}shape", f"{prefix}zero"], [f"{prefix}dim"]),
        _const(f"{prefix}one", 1, np.int64),
        helper.make_node("Equal", [f"{prefix}dim", f"{prefix}one"], [f"{prefix}cond"]),
    ]


def test_nested_if_on_static_shapes_is_inlined_keeping_outer_names(tmp_path):
    """silero-vad: a branch defines a value that a nested If's branches read from the outer scope."""
    out = helper.make_tensor_value_info
    inner_then = helper.make_graph(
        [helper.make_node("Identity", ["a"], ["b1"])],
        "inner_then",
        [],
        [out("b1", TensorProto.FLOAT, None)],
    )
    inner_else = helper.make_graph(
        [helper.make_node("Relu", ["a"], ["b2"])],
        "inner_else",
        [],
        [out("b2", TensorProto.FLOAT, None)],
    )
    then_nodes = (
        [helper.make_node("Neg", ["x"], ["a"])]
        + _first_dim_is_one("a", "in_")
        + [
            helper.make_node(
                "If", ["in_cond"], ["inner"], then_branch=inner_then, else_branch=inner_else
            )
        ]
    )
    then_branch = helper.make_graph(then_nodes, "then", [], [out("inner", TensorProto.FLOAT, None)])
    else_branch = helper.make_graph(
        [helper.make_node("Sigmoid", ["x"], ["s"])], "else", [], [out("s", TensorProto.FLOAT, None)]
    )
    nodes = _first_dim_is_one("x", "top_") + [
        helper.make_node(
            "If", ["top_cond"], ["y"], then_branch=then_branch, else_branch=else_branch
        )
    ]
    model = make_model(nodes, [("x", F32, [1, 4])], [("y", F32, None)], opset=15)
    result = assert_matches(model, tmp_path)
    script = result.script_path.read_text()
    assert "ops.neg" in script or "-x" in script.replace(" ", "")
    assert "If" not in script and "sigmoid" not in script


def test_paddle_minus_one_dimension_is_dynamic(tmp_path):
    """Paddle2ONNX declares dynamic dimensions as -1; --shape fills them."""
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])], [("x", F32, [-1, 3])], [("y", F32, None)]
    )
    feeds = {"x": np.random.default_rng(0).standard_normal((2, 3)).astype(F32)}
    assert_matches(model, tmp_path, feeds=feeds, shape=[(2, 3)])


def test_scalar_input_takes_an_empty_shape(tmp_path):
    """A rank-0 input (e.g. silero-vad's sample rate) next to dynamic ones: shape ``()``."""
    nodes = [
        helper.make_node("Cast", ["sr"], ["srf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["x", "srf"], ["y"]),
    ]
    model = make_model(nodes, [("x", F32, ["batch", 4]), ("sr", np.int64, [])], [("y", F32, None)])
    feeds = {"x": np.ones((2, 4), F32), "sr": np.array(3, np.int64)}
    assert_matches(model, tmp_path, feeds=feeds, shape=[(2, 4), ()])
