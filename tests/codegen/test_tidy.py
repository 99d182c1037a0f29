"""Expressions tidied before rendering: Python numbers, indexing, rank-free LayerNorm; the numbers
stay onnxruntime's."""

import numpy as np
import pytest
from onnx import TensorProto, helper

from tests.helpers import assert_matches, make_model

F32 = np.float32


def _construct(result) -> str:
    code = result.script_path.read_text()
    return code[code.index("class MindSporeModel") :]


@pytest.mark.parametrize(
    "op, value, dtype",
    [("Mul", 0.5, F32), ("Add", 3, np.int64), ("Sub", 2.0, F32), ("Div", 4.0, F32)],
)
def test_scalar_constant_operand_is_a_python_number(tmp_path, op, value, dtype):
    model = make_model(
        [helper.make_node(op, ["c", "x"], ["y"])],
        [("x", dtype, [2, 3])],
        [("y", dtype, [2, 3])],
        {"c": np.array(value, dtype)},
    )
    body = _construct(assert_matches(model, tmp_path))
    assert "ms.Tensor(" not in body.split("def construct")[1], body


def test_one_element_constant_keeps_the_rank_it_gives(tmp_path):
    """``x[()] + c[1]`` is rank 1: the constant stays a tensor."""
    model = make_model(
        [helper.make_node("Add", ["x", "c"], ["y"])],
        [("x", F32, [])],
        [("y", F32, [1])],
        {"c": np.array([2.0], F32)},
    )
    assert_matches(model, tmp_path)


def test_where_branches_are_numbers(tmp_path):
    model = make_model(
        [
            helper.make_node("Greater", ["x", "zero"], ["mask"]),
            helper.make_node("Where", ["mask", "zero", "low"], ["y"]),
        ],
        [("x", F32, [2, 4])],
        [("y", F32, [2, 4])],
        {"zero": np.array(0.0, F32), "low": np.array(-3.4e38, F32)},
    )
    body = _construct(assert_matches(model, tmp_path)).split("def construct")[1]
    assert "ms.Tensor(" not in body, body


def test_gather_of_one_constant_index_is_indexing(tmp_path):
    model = make_model(
        [helper.make_node("Gather", ["x", "i"], ["y"], axis=1)],
        [("x", F32, [2, 5, 3])],
        [("y", F32, [2, 3])],
        {"i": np.array(-1, np.int64)},
    )
    body = _construct(assert_matches(model, tmp_path))
    assert "ops.gather" not in body and "x[:, " in body, body


def test_gather_of_a_negative_index_into_a_dynamic_axis_is_indexing(tmp_path):
    """The last token (``x[:, -1]``): not ``ops.gather(x, ms.Tensor(-1) % seq_len, 1)``."""
    model = make_model(
        [helper.make_node("Gather", ["x", "i"], ["y"], axis=1)],
        [("x", F32, ["batch", "seq", 3])],
        [("y", F32, ["batch", 3])],
        {"i": np.array(-1, np.int64)},
    )
    rng = np.random.default_rng(0)
    for batch, seq in ((2, 5), (3, 2)):
        feeds = {"x": rng.standard_normal((batch, seq, 3)).astype(F32)}
        result = assert_matches(model, tmp_path / str(seq), feeds, shape=[f"{batch},{seq},3"])
    body = _construct(result)
    assert "ops.gather" not in body and "x[:, -1]" in body, body


@pytest.mark.parametrize(
    "indices, written",
    [([2], "x[:, 2:3]"), ([1, 2, 3], "x[:, 1:4]"), ([-2, -1], "x[:, 3:5]"), ([0], "x[:, :1]")],
)
def test_gather_of_consecutive_constant_indices_is_a_slice(tmp_path, indices, written):
    """Falcon takes its key head out of the fused projection with ``[2]``: ``x[:, 2:3]``."""
    model = make_model(
        [helper.make_node("Gather", ["x", "i"], ["y"], axis=1)],
        [("x", F32, [2, 5, 3])],
        [("y", F32, [2, len(indices), 3])],
        {"i": np.array(indices, np.int64)},
    )
    body = _construct(assert_matches(model, tmp_path))
    assert "ops.gather" not in body and written in body, body


def test_gather_of_scattered_constant_indices_stays_a_gather(tmp_path):
    model = make_model(
        [helper.make_node("Gather", ["x", "i"], ["y"], axis=1)],
        [("x", F32, [2, 5, 3])],
        [("y", F32, [2, 2, 3])],
        {"i": np.array([0, 2], np.int64)},
    )
    assert "ops.gather" in _construct(assert_matches(model, tmp_path))


def test_gather_nd_of_leading_constant_indices_is_a_slice(tmp_path):
    """Dynamo's ``x[:, :, [2]]`` with the axis moved first: ``ops.gather_nd(t, [[2]])``."""
    model = make_model(
        [helper.make_node("GatherND", ["x", "i"], ["y"])],
        [("x", F32, [4, 2, 3])],
        [("y", F32, [1, 2, 3])],
        {"i": np.array([[2]], np.int64)},
    )
    body = _construct(assert_matches(model, tmp_path))
    assert "ops.gather_nd" not in body and "x[2:3]" in body, body


def test_layer_norm_over_the_last_axis_takes_any_rank(tmp_path):
    model = make_model(
        [helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1, epsilon=1e-5)],
        [("x", F32, [2, 3, 4])],
        [("y", F32, [2, 3, 4])],
        {"g": np.linspace(0.5, 1.5, 4).astype(F32), "b": np.linspace(-1, 1, 4).astype(F32)},
        opset=17,
    )
    code = assert_matches(model, tmp_path).script_path.read_text()
    assert "begin_norm_axis" not in code and "nn.LayerNorm(" in code, code


def test_cast_of_a_different_dtype_is_kept(tmp_path):
    model = make_model(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT32)],
        [("x", F32, [3])],
        [("y", np.int32, [3])],
    )
    assert "ops.cast" in _construct(assert_matches(model, tmp_path))


@pytest.mark.parametrize("read_twice", [False, True])
def test_an_lstm_output_squeezed_at_once_is_the_cells_output(tmp_path, read_twice):
    """ONNX's LSTM gives its directions an axis, which the exporters squeeze away right after:
    the cell's own output is written, with no expand_dims/squeeze pair (unless the 4-D output
    is read too)."""
    hidden, rng = 3, np.random.default_rng(0)
    nodes = [
        helper.make_node("LSTM", ["x", "w", "r"], ["y"], hidden_size=hidden),
        helper.make_node("Squeeze", ["y", "axis"], ["out"]),
    ]
    outputs = [("out", F32, [5, 2, hidden])]
    if read_twice:
        nodes.append(helper.make_node("Relu", ["y"], ["also"]))
        outputs.append(("also", F32, [5, 1, 2, hidden]))
    model = make_model(
        nodes,
        [("x", F32, [5, 2, 4])],
        outputs,
        {
            "w": rng.standard_normal((1, 4 * hidden, 4)).astype(F32),
            "r": rng.standard_normal((1, 4 * hidden, hidden)).astype(F32),
            "axis": np.array([1], np.int64),
        },
    )
    body = _construct(assert_matches(model, tmp_path))
    assert ("ops.squeeze" in body) is read_twice and ("expand_dims" in body) is read_twice, body
