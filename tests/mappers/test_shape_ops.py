"""Shape manipulation operators (and shape arithmetic folding) against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model, single_op_model
from tests.mappers.builders import I64, F, model_of


@pytest.mark.parametrize("axis", [0, 1, 2, 3])
def test_flatten(tmp_path, axis):
    assert_matches(single_op_model("Flatten", {"x": (2, 3, 4, 5)}, axis=axis), tmp_path)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_flatten_of_a_vector(tmp_path, axis):
    assert_matches(single_op_model("Flatten", {"x": (4,)}, axis=axis), tmp_path)


def test_reshape_zero_and_minus_one(tmp_path):
    model = single_op_model(
        "Reshape", {"x": (2, 3, 4)}, initializers={"s": np.array([0, -1], np.int64)}
    )
    assert_matches(model, tmp_path)


def test_transpose(tmp_path):
    assert_matches(single_op_model("Transpose", {"x": (2, 3, 4)}, perm=[1, 2, 0]), tmp_path / "p")
    assert_matches(single_op_model("Transpose", {"x": (2, 3, 4)}), tmp_path / "default")


@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_unsqueeze(tmp_path, opset):
    if opset < 13:
        sq = single_op_model("Squeeze", {"x": (1, 3, 1, 4)}, opset=opset, axes=[0, 2])
        un = single_op_model("Unsqueeze", {"x": (3, 4)}, opset=opset, axes=[0, 3])
    else:
        sq = single_op_model(
            "Squeeze",
            {"x": (1, 3, 1, 4)},
            opset=opset,
            initializers={"a": np.array([0, -2], np.int64)},
        )
        un = single_op_model(
            "Unsqueeze", {"x": (3, 4)}, opset=opset, initializers={"a": np.array([-1], np.int64)}
        )
    assert_matches(sq, tmp_path / "sq")
    assert_matches(un, tmp_path / "un")
    assert_matches(single_op_model("Squeeze", {"x": (1, 3, 1)}, opset=opset), tmp_path / "all")


def _reshape_by_batch_model():
    """``x.reshape(x.shape[0], -1)`` spelled out as exporters write it, with a dynamic batch."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus_one"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ]
    inits = {
        "zero": np.array(0, np.int64),
        "axes": np.array([0], np.int64),
        "minus_one": np.array([-1], np.int64),
    }
    model = make_model(
        nodes, [("x", np.float32, ("batch", 3, 4))], [("y", np.float32, None)], inits
    )
    return model


def test_shape_arithmetic_is_folded_in_a_static_network(tmp_path):
    model = _reshape_by_batch_model()
    result = assert_matches(
        model, tmp_path, feeds={"x": np.ones((2, 3, 4), np.float32)}, shape=["2,3,4"], dynamic=False
    )
    code = result.script_path.read_text()
    assert "ops.reshape(x, (2, -1))" in code
    assert "Shape" not in result.operator_counts.get("onnx::Shape", "Shape") or True
    assert set(result.operator_counts) == {"onnx::Reshape"}


def test_long_chains_of_shape_dependent_reshapes_fold(tmp_path):
    """Each block's reshape target depends on the previous block's shape (ShuffleNet's channel shuffle)."""
    nodes, value = [], "x"
    inits = {"zero": np.array(0, np.int64), "minus_one": np.array([-1], np.int64)}
    for i in range(30):
        nodes += [
            helper.make_node("Relu", [value], [f"r{i}"]),
            helper.make_node("Shape", [f"r{i}"], [f"s{i}"]),
            helper.make_node("Gather", [f"s{i}", "zero"], [f"n{i}"], axis=0),
            helper.make_node("Unsqueeze", [f"n{i}"], [f"u{i}"], axes=[0]),
            helper.make_node("Concat", [f"u{i}", "minus_one"], [f"t{i}"], axis=0),
            helper.make_node("Reshape", [f"r{i}", f"t{i}"], [f"y{i}"]),
        ]
        value = f"y{i}"
    model = make_model(
        nodes, [("x", np.float32, ("batch", 3, 4))], [(value, np.float32, None)], inits, opset=11
    )
    result = assert_matches(
        model, tmp_path, feeds={"x": np.ones((2, 3, 4), np.float32)}, shape=["2,3,4"]
    )
    assert result.unconverted == []


def test_opset9_shape_arithmetic_folds_with_old_unsqueeze(tmp_path):
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n"], ["n1"], axes=[0]),
        helper.make_node("Concat", ["n1", "minus_one"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ]
    inits = {"zero": np.array(0, np.int64), "minus_one": np.array([-1], np.int64)}
    model = make_model(
        nodes, [("x", np.float32, ("batch", 3, 4))], [("y", np.float32, None)], inits, opset=9
    )
    result = assert_matches(
        model, tmp_path, feeds={"x": np.ones((2, 3, 4), np.float32)}, shape=["2,3,4"], dynamic=False
    )
    assert set(result.operator_counts) == {"onnx::Reshape"}


@pytest.mark.parametrize("opset, mode", [(9, None), (13, "DCR"), (13, "CRD")])
def test_depth_to_space(tmp_path, opset, mode):
    attrs = {"blocksize": 2} if mode is None else {"blocksize": 2, "mode": mode}
    assert_matches(
        single_op_model("DepthToSpace", {"x": (1, 8, 2, 3)}, opset=opset, **attrs), tmp_path
    )


def test_space_to_depth(tmp_path):
    assert_matches(single_op_model("SpaceToDepth", {"x": (1, 2, 4, 6)}, blocksize=2), tmp_path)


@pytest.mark.parametrize(
    "in_shape, target", [((3, 1), [2, 3, 4]), ((1, 4), [3, 1]), ((2, 3), [1, 1])]
)
def test_expand(tmp_path, in_shape, target):
    model = model_of("Expand", [("x", F, in_shape)], [("y", F, None)], {"s": np.array(target, I64)})
    assert_matches(model, tmp_path)


def test_tile(tmp_path):
    model = model_of("Tile", [("x", F, (2, 3))], [("y", F, None)], {"r": np.array([2, 3], I64)})
    assert_matches(model, tmp_path)


def test_tile_by_a_run_time_size_takes_the_sizes_as_a_tuple(tmp_path):
    """``x.repeat(x.shape[0], 1)`` as exporters write it: the repeats are the sizes themselves,
    never a tensor made of them and indexed back."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
        helper.make_node("Concat", ["n1", "one"], ["repeats"], axis=0),
        helper.make_node("Tile", ["x", "repeats"], ["y"]),
    ]
    inits = {
        "zero": np.array(0, np.int64),
        "axes": np.array([0], np.int64),
        "one": np.array([1], np.int64),
    }
    model = make_model(nodes, [("x", F, ("batch", 3))], [("y", F, None)], inits)
    for batch in (2, 3):
        feeds = {"x": np.arange(batch * 3, dtype=np.float32).reshape(batch, 3)}
        result = assert_matches(model, tmp_path / str(batch), feeds=feeds, shape=["2,3"])
    code = result.script_path.read_text()
    assert "tuple_to_array" not in code and "ops.tile(x, (batch, 1))" in code, code


def test_expand_to_run_time_sizes_passes_them_whole(tmp_path):
    """``x.expand(2 * y.shape[0], y.shape[1])``: every size of the target is read as it is, so
    the target is the sizes tuple itself, not a new tuple of its items."""
    nodes = [
        helper.make_node("Shape", ["y"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["b"], axis=0),
        helper.make_node("Mul", ["b", "two"], ["b2"]),
        helper.make_node("Unsqueeze", ["b2", "axes"], ["b2u"]),
        helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes"], ["nu"]),
        helper.make_node("Concat", ["b2u", "nu"], ["target"], axis=0),
        helper.make_node("Expand", ["x", "target"], ["z"]),
    ]
    inits = {
        "zero": np.array(0, np.int64),
        "one": np.array(1, np.int64),
        "two": np.array(2, np.int64),
        "axes": np.array([0], np.int64),
    }
    model = make_model(
        nodes, [("x", F, (1, "seq")), ("y", F, ("batch", "seq"))], [("z", F, None)], inits
    )
    for batch, seq in (2, 3), (3, 5):
        feeds = {
            "x": np.arange(seq, dtype=np.float32).reshape(1, seq),
            "y": np.zeros((batch, seq), np.float32),
        }
        result = assert_matches(model, tmp_path / str(batch), feeds=feeds, shape=["x=1,3", "y=2,3"])
    code = result.script_path.read_text()
    assert "ops.broadcast_to(x, (2 * batch, seq))" in code, code


def test_size(tmp_path):
    node = helper.make_node("Size", ["x"], ["y"])
    model = make_model([node], [("x", F, (2, 3, 4))], [("y", I64, None)], opset=13)
    assert_matches(model, tmp_path)


def test_shape_arithmetic_on_a_dynamic_batch_reads_the_batch_at_run_time(tmp_path):
    model = _reshape_by_batch_model()
    result = assert_matches(
        model, tmp_path, feeds={"x": np.ones((2, 3, 4), np.float32)}, shape=["2,3,4"]
    )
    code = result.script_path.read_text()
    assert "(2, -1)" not in code and "= x.shape[0]" in code
    for batch in (1, 5):  # the same network serves other batch sizes
        assert_matches(
            model,
            tmp_path / str(batch),
            feeds={"x": np.ones((batch, 3, 4), np.float32)},
            shape=["2,3,4"],
        )


@pytest.mark.parametrize(
    "op, attrs, shape",
    [
        ("SpaceToDepth", {"blocksize": 2}, (2, 1, 2, 2)),
        ("DepthToSpace", {"blocksize": 2}, (2, 4, 1, 2)),
        ("LogSoftmax", {"axis": 0}, (2, 2, 1, 3)),  # opset 11: flattened at the axis
    ],
)
def test_a_dynamic_batch_stays_dynamic(tmp_path, op, attrs, shape):
    """These wrote the dynamic batch into a reshape target: the conversion failed outright."""
    from mindconverter.check.network import run_mindspore
    from mindconverter.check.verify import run_onnxruntime

    model = make_model(
        [helper.make_node(op, ["x"], ["y"], **attrs)],
        [("x", np.float32, ["N", *shape[1:]])],
        [("y", np.float32, None)],
        opset=11,
    )
    feeds = {"x": np.random.default_rng(0).standard_normal(shape).astype(np.float32)}
    result = assert_matches(model, tmp_path, feeds=feeds, shape=[",".join(map(str, shape))])
    grown = np.random.default_rng(1).standard_normal((3, *shape[1:])).astype(np.float32)
    (got,) = run_mindspore(result.script_path, result.checkpoint_path, [grown])
    (want,) = run_onnxruntime(model, {"x": grown}, ["y"])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
