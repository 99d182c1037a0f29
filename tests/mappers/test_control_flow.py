"""Control flow: an If with a constant condition is inlined and converts; the rest is reported."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from mindconverter import convert
from tests.helpers import assert_matches, make_model


def _branch(name, op, output="out"):
    """A branch graph reading the outer value ``x`` (outer-scope reference, as exporters write it)."""
    node = helper.make_node(op, ["x"], [output])
    return helper.make_graph(
        [node], name, [], [helper.make_tensor_value_info(output, TensorProto.FLOAT, [2, 3])]
    )


def _if_model(cond_nodes, cond_inits=None, then_op="Relu", else_op="Neg"):
    if_node = helper.make_node(
        "If",
        ["cond"],
        ["y"],
        then_branch=_branch("then", then_op, "t_out"),
        else_branch=_branch("else", else_op, "e_out"),
    )
    tail = helper.make_node("Sigmoid", ["y"], ["z"])
    return make_model(
        cond_nodes + [if_node, tail],
        [("x", np.float32, (2, 3))],
        [("z", np.float32, (2, 3))],
        cond_inits,
        opset=13,
    )


@pytest.mark.parametrize("value, op", [(True, "Relu"), (False, "Neg")])
def test_if_constant_initializer_condition(tmp_path, value, op):
    model = _if_model([], {"cond": np.array(value)})
    result = assert_matches(model, tmp_path)
    text = result.script_path.read_text()
    assert f"ops.{op.lower()}(" in text or ("-x" in text and op == "Neg")


def test_if_constant_node_condition(tmp_path):
    const = helper.make_node(
        "Constant", [], ["cond"], value=helper.make_tensor("c", TensorProto.BOOL, [], [True])
    )
    assert_matches(_if_model([const]), tmp_path)


def test_if_condition_folded_from_shape(tmp_path):
    """A shape test (typical of traced exports) folds to a constant, then the If is inlined."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["batch"], axis=0),
        helper.make_node("Equal", ["batch", "two"], ["cond"]),
    ]
    inits = {"zero": np.array(0, np.int64), "two": np.array(2, np.int64)}
    result = assert_matches(_if_model(nodes, inits, then_op="Tanh", else_op="Relu"), tmp_path)
    assert "ops.tanh(" in result.script_path.read_text()


def _convert(model, tmp_path):
    onnx.save(model, str(tmp_path / "m.onnx"))
    return convert(tmp_path / "m.onnx", output=tmp_path / "out")


def test_if_runtime_condition_is_reported(tmp_path):
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
        helper.make_node("Greater", ["total", "zero"], ["cond"]),
    ]
    result = _convert(_if_model(nodes, {"zero": np.array(0, np.float32)}), tmp_path)
    assert [u.op_type for u in result.unconverted] == ["If"]
    assert "run time" in result.unconverted[0].reason


def test_loop_is_reported(tmp_path):
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Add", ["v_in", "v_in"], ["v_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [2, 3]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [2, 3]),
        ],
    )
    # the condition depends on the input data, so the loop cannot be unrolled (mindconverter/unroll.py)
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
        helper.make_node("Greater", ["total", "zero"], ["go"]),
        helper.make_node("Loop", ["trip", "go", "x"], ["y"], body=body),
    ]
    model = make_model(
        nodes,
        [("x", np.float32, (2, 3))],
        [("y", np.float32, (2, 3))],
        {"trip": np.array(3, np.int64), "zero": np.array(0, np.float32)},
        opset=13,
    )
    result = _convert(model, tmp_path)
    assert [u.op_type for u in result.unconverted] == ["Loop"]
    assert "Loop (3 iterations)" in result.unconverted[0].reason
