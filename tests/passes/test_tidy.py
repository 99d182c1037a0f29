"""The tidy pass: each no-op disappears from the script and the numbers stay onnxruntime's."""

import numpy as np
import pytest
from onnx import TensorProto, helper

from tests.helpers import assert_matches, make_model

F32 = np.float32


def _construct(result) -> str:
    code = result.script_path.read_text()
    return code[code.index("    def construct(") :]


def _chain(nodes, inputs, out_shape, initializers=None, out_dtype=F32):
    return make_model(nodes, inputs, [("y", out_dtype, out_shape)], initializers)


def test_cast_to_the_same_dtype_is_removed(tmp_path):
    model = _chain(
        [
            helper.make_node("Cast", ["x"], ["c"], to=TensorProto.FLOAT),
            helper.make_node("Relu", ["c"], ["y"]),
        ],
        [("x", F32, [2, 3])],
        [2, 3],
    )
    assert "ops.cast" not in _construct(assert_matches(model, tmp_path))


@pytest.mark.parametrize("op, value", [("Mul", 1.0), ("Div", 1.0), ("Add", 0.0), ("Sub", 0.0)])
def test_neutral_operand_is_removed(tmp_path, op, value):
    model = _chain(
        [helper.make_node(op, ["x", "c"], ["t"]), helper.make_node("Tanh", ["t"], ["y"])],
        [("x", F32, [2, 3])],
        [2, 3],
        {"c": np.full((1, 3), value, F32)},
    )
    body = _construct(assert_matches(model, tmp_path))
    assert not any(sign in body for sign in (" * ", " / ", " + ", " - ")), body


def test_a_no_op_giving_the_network_output_goes_too(tmp_path):
    """Granite's ``logits / logits_scaling`` at its default 1.0: the output keeps its name and
    the layer before writes it."""
    model = _chain(
        [helper.make_node("Tanh", ["x"], ["t"]), helper.make_node("Div", ["t", "c"], ["y"])],
        [("x", F32, [2, 3])],
        [2, 3],
        {"c": np.array(1.0, F32)},
    )
    construct = _construct(assert_matches(model, tmp_path))
    assert "/ 1.0" not in construct and "y = ops.tanh(x)" in construct, construct


def test_neutral_operand_that_broadcasts_is_kept(tmp_path):
    model = _chain(
        [helper.make_node("Add", ["x", "c"], ["y"])],
        [("x", F32, [3])],
        [2, 3],
        {"c": np.zeros((2, 3), F32)},
    )
    assert_matches(model, tmp_path)  # the addition makes the shape: it must stay


def test_and_with_all_true_is_removed(tmp_path):
    model = _chain(
        [
            helper.make_node("Greater", ["a", "b"], ["gt"]),
            helper.make_node("And", ["yes", "gt"], ["mask"]),
            helper.make_node("Where", ["mask", "a", "b"], ["y"]),
        ],
        [("a", F32, [2, 4]), ("b", F32, [2, 4])],
        [2, 4],
        {"yes": np.array(True)},
    )
    assert "logical_and" not in _construct(assert_matches(model, tmp_path))


def test_and_with_arange_at_least_zero_is_removed(tmp_path):
    """``arange(n) >= 0`` is all true: and-ing a mask of the same shape with it does nothing."""
    model = _chain(
        [
            helper.make_node("Shape", ["x"], ["shape"]),
            helper.make_node("Gather", ["shape", "last"], ["n"], axis=0),
            helper.make_node("Range", ["zero", "n", "one"], ["positions"]),
            helper.make_node("GreaterOrEqual", ["positions", "zero"], ["valid"]),
            helper.make_node("Greater", ["x", "zero_f"], ["positive"]),
            helper.make_node("And", ["valid", "positive"], ["mask"]),
            helper.make_node("Cast", ["mask"], ["y"], to=TensorProto.FLOAT),
        ],
        [("x", F32, ["batch", "n"])],
        ["batch", "n"],
        {
            "last": np.array(1, np.int64),
            "zero": np.array(0, np.int64),
            "one": np.array(1, np.int64),
            "zero_f": np.array(0, F32),
        },
    )
    result = assert_matches(model, tmp_path, shape=["2,5"])
    body = _construct(result)
    assert "logical_and" not in body and "arange" not in body, body


def test_squeeze_undoing_unsqueeze_is_removed(tmp_path):
    model = _chain(
        [
            helper.make_node("Unsqueeze", ["x", "axes"], ["u"]),
            helper.make_node("Squeeze", ["u", "axes"], ["s"]),
            helper.make_node("Relu", ["s"], ["y"]),
        ],
        [("x", F32, [2, 3])],
        [2, 3],
        {"axes": np.array([1], np.int64)},
    )
    body = _construct(assert_matches(model, tmp_path))
    assert "squeeze" not in body and "expand_dims" not in body, body


def test_transposes_that_cancel_are_removed(tmp_path):
    model = _chain(
        [
            helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
            helper.make_node("Transpose", ["t"], ["u"], perm=[0, 2, 1]),
            helper.make_node("Relu", ["u"], ["y"]),
        ],
        [("x", F32, [2, 3, 4])],
        [2, 3, 4],
    )
    assert "transpose" not in _construct(assert_matches(model, tmp_path))


def test_transpose_of_a_transpose_becomes_one(tmp_path):
    model = _chain(
        [
            helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1, 3]),
            helper.make_node("Transpose", ["t"], ["y"], perm=[0, 1, 3, 2]),
        ],
        [("x", F32, [2, 3, 4, 5])],
        [2, 4, 5, 3],
    )
    assert _construct(assert_matches(model, tmp_path)).count("transpose") == 1


def test_reshape_of_a_reshape_becomes_one(tmp_path):
    model = _chain(
        [
            helper.make_node("Reshape", ["x", "flat"], ["r"]),
            helper.make_node("Reshape", ["r", "grid"], ["y"]),
        ],
        [("x", F32, [2, 3, 4])],
        [4, 6],
        {"flat": np.array([-1], np.int64), "grid": np.array([4, 6], np.int64)},
    )
    assert _construct(assert_matches(model, tmp_path)).count("reshape") == 1


def test_reshape_copying_a_size_keeps_the_inner_reshape(tmp_path):
    model = _chain(
        [
            helper.make_node("Reshape", ["x", "flat"], ["r"]),
            helper.make_node("Reshape", ["r", "copy"], ["y"]),
        ],
        [("x", F32, [2, 3, 4])],
        [6, 4],
        {"flat": np.array([6, 4], np.int64), "copy": np.array([0, -1], np.int64)},
    )
    assert_matches(model, tmp_path)  # 0 copies the inner result's size (6), not x's (2)


def test_repeated_node_is_computed_once(tmp_path):
    model = _chain(
        [
            helper.make_node("Sigmoid", ["x"], ["a"]),
            helper.make_node("Sigmoid", ["x"], ["b"]),
            helper.make_node("Mul", ["a", "b"], ["y"]),
        ],
        [("x", F32, [2, 3])],
        [2, 3],
    )
    assert _construct(assert_matches(model, tmp_path)).count("sigmoid") == 1


def test_true_positions_that_only_widen_an_expanded_mask_are_removed(tmp_path):
    """``expand(and(arange(q)[:, None] >= 0, mask[None, :]), (q, k))``: the expand widens the
    mask the same way, so it reads the mask directly and the arange goes."""
    model = _chain(
        [
            helper.make_node("Shape", ["x"], ["shape"]),
            helper.make_node("Gather", ["shape", "first"], ["q"], axis=0),
            helper.make_node("Range", ["zero", "q", "one"], ["positions"]),
            helper.make_node("Unsqueeze", ["positions", "last_axis"], ["column"]),
            helper.make_node("GreaterOrEqual", ["column", "zero"], ["valid"]),
            helper.make_node("Greater", ["x", "zero_f"], ["positive"]),
            helper.make_node("Unsqueeze", ["positive", "first_axis"], ["row"]),
            helper.make_node("And", ["valid", "row"], ["mask"]),
            helper.make_node("Concat", ["q", "q"], ["square"], axis=0),
            helper.make_node("Expand", ["mask", "square"], ["wide"]),
            helper.make_node("Cast", ["wide"], ["y"], to=TensorProto.FLOAT),
        ],
        [("x", F32, ["n"])],
        ["n", "n"],
        {
            "first": np.array([0], np.int64),
            "first_axis": np.array([0], np.int64),
            "last_axis": np.array([1], np.int64),
            "zero": np.array(0, np.int64),
            "one": np.array(1, np.int64),
            "zero_f": np.array(0, F32),
        },
    )
    feeds = {"x": np.array([1.0, -1.0, 2.0, 0.0], F32)}
    result = assert_matches(model, tmp_path, feeds, shape=["4"])
    body = _construct(result)
    assert "logical_and" not in body and "arange" not in body, body
    assert_matches(model, tmp_path / "other", {"x": np.array([-1.0, 3.0], F32)}, shape=["2"])


def _scores_plus_mask(mask_nodes, mask_value: str, initializers=None):
    """``y = scores + where(mask, 0, -1e9)`` after ``mask_nodes`` built ``mask_value``."""
    nodes = list(mask_nodes) + [
        helper.make_node("Where", [mask_value, "zero_f", "minus_big"], ["bias"]),
        helper.make_node("Add", ["scores", "bias"], ["y"]),
    ]
    constants = {"zero_f": np.array(0.0, F32), "minus_big": np.array(-1e9, F32)}
    return _chain(
        nodes,
        [("scores", F32, [2, 2, 4, 4]), ("mask", np.int64, [2, 4])],
        [2, 2, 4, 4],
        {**constants, **(initializers or {})},
    )


def _mask_feeds():
    mask = np.array([[0, 1, 1, 1], [1, 1, 1, 0]], np.int64)
    scores = np.random.default_rng(0).standard_normal((2, 2, 4, 4)).astype(F32)
    return {"scores": scores, "mask": mask}


_PADDING = [
    helper.make_node("Cast", ["mask"], ["mask_bool"], to=TensorProto.BOOL),
    helper.make_node("Unsqueeze", ["mask_bool", "middle"], ["padding"]),
]


# mask4 = and(arange(4)[None, None, :, None] >= 0, padding): all-true positions widen the mask
_TRUE_POSITIONS = [
    helper.make_node("Range", ["zero", "four", "one"], ["positions"]),
    helper.make_node("Unsqueeze", ["positions", "query_axes"], ["query"]),
    helper.make_node("GreaterOrEqual", ["query", "zero"], ["valid"]),
    helper.make_node("And", ["valid", "padding"], ["mask4"]),
]
_POSITION_CONSTANTS = {
    "zero": np.array(0, np.int64),
    "one": np.array(1, np.int64),
    "four": np.array(4, np.int64),
    "middle": np.array([1, 2], np.int64),
    "query_axes": np.array([0, 1, 3], np.int64),
}


def test_true_operand_that_only_widens_what_readers_widen_is_removed(tmp_path):
    """``and(arange(q)[:, None] >= 0, padding)`` is (b, 1, q, k); the scores it is added to
    widen ``padding`` (b, 1, 1, k) the same way, so the ``and`` does nothing."""
    model = _scores_plus_mask(_PADDING + _TRUE_POSITIONS, "mask4", _POSITION_CONSTANTS)
    body = _construct(assert_matches(model, tmp_path, _mask_feeds()))
    assert "logical_and" not in body, body


def test_expand_that_readers_broadcast_anyway_is_removed(tmp_path):
    expand = [helper.make_node("Expand", ["padding", "wide"], ["mask4"])]
    constants = {"middle": np.array([1, 2], np.int64), "wide": np.array([2, 1, 4, 4], np.int64)}
    model = _scores_plus_mask(_PADDING + expand, "mask4", constants)
    body = _construct(assert_matches(model, tmp_path, _mask_feeds()))
    assert "broadcast_to" not in body, body


def test_expand_that_gives_the_result_its_shape_is_kept(tmp_path):
    model = _chain(
        [helper.make_node("Expand", ["x", "wide"], ["y"])],
        [("x", F32, [2, 1])],
        [2, 3],
        {"wide": np.array([2, 3], np.int64)},
    )
    assert "broadcast_to" in _construct(assert_matches(model, tmp_path))


def test_ones_cast_to_bool_are_an_all_true_mask(tmp_path):
    ones = [
        helper.make_node("Shape", ["mask"], ["size"]),
        helper.make_node(
            "ConstantOfShape",
            ["size"],
            ["ones"],
            value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0]),
        ),
        helper.make_node("Cast", ["ones"], ["everything"], to=TensorProto.BOOL),
        helper.make_node("Unsqueeze", ["everything", "middle"], ["everything4"]),
        helper.make_node("And", ["everything4", "padding"], ["mask4"]),
    ]
    model = _scores_plus_mask(_PADDING + ones, "mask4", {"middle": np.array([1, 2], np.int64)})
    body = _construct(assert_matches(model, tmp_path, _mask_feeds()))
    assert "logical_and" not in body and "ops.fill" not in body, body


def test_a_value_an_if_body_reads_keeps_its_shape(tmp_path):
    """The ``and`` widens the mask that ``bias`` is made from; an If body reads ``bias`` as it
    is, so the ``and`` stays (narrowing it would change what the body sees)."""
    positions = _TRUE_POSITIONS + [
        helper.make_node("Where", ["mask4", "zero_f", "minus_big"], ["bias"]),
        helper.make_node("Add", ["scores", "bias"], ["y"]),
    ]
    branch_out = helper.make_tensor_value_info("branch", TensorProto.FLOAT, None)
    then_body = helper.make_graph(
        [helper.make_node("Identity", ["bias"], ["branch"])], "then", [], [branch_out]
    )
    else_body = helper.make_graph(
        [helper.make_node("Neg", ["bias"], ["branch"])], "else", [], [branch_out]
    )
    nodes = _PADDING + positions
    nodes.append(
        helper.make_node("If", ["flag"], ["z"], then_branch=then_body, else_branch=else_body)
    )
    constants = {
        **_POSITION_CONSTANTS,
        "zero_f": np.array(0.0, F32),
        "minus_big": np.array(-1e9, F32),
    }
    model = make_model(
        nodes,
        [("scores", F32, [2, 2, 4, 4]), ("mask", np.int64, [2, 4]), ("flag", np.bool_, [])],
        [("y", F32, [2, 2, 4, 4]), ("z", F32, None)],
        constants,
    )
    assert_matches(model, tmp_path, {**_mask_feeds(), "flag": np.array(True)})


def test_a_slice_to_a_size_the_value_has_and_an_empty_rest_are_removed(tmp_path):
    """Phi-3's rotary over a whole head: ``x[..., :cos.shape[-1]]`` keeps everything and
    ``x[..., cos.shape[-1]:]`` is empty; both go with the concat putting them together."""
    nodes = [
        helper.make_node("Shape", ["cos"], ["cos_shape"], start=-1),
        helper.make_node("Slice", ["x", "zero", "cos_shape", "last"], ["turned"]),
        helper.make_node("Slice", ["x", "cos_shape", "big", "last"], ["rest"]),
        helper.make_node("Mul", ["turned", "cos"], ["scaled"]),
        helper.make_node("Concat", ["scaled", "rest"], ["y"], axis=-1),
    ]
    constants = {
        "zero": np.array([0], np.int64),
        "last": np.array([-1], np.int64),
        "big": np.array([2**62], np.int64),
    }
    model = _chain(nodes, [("x", F32, ["n", 8]), ("cos", F32, ["n", 8])], ["n", 8], constants)
    feeds = {
        n: np.random.default_rng(0).standard_normal((3, 8)).astype(F32) for n in "x cos".split()
    }
    construct = _construct(assert_matches(model, tmp_path, feeds, shape=["3,8", "3,8"]))
    assert "ops.concat" not in construct and "[:" not in construct, construct


def test_a_slice_to_a_size_computed_at_run_time_stays(tmp_path):
    """``x[:, :m]`` with ``m`` another input's length: kept, whatever shapes inference says."""
    nodes = [
        helper.make_node("Shape", ["other"], ["m"], start=1, end=2),
        helper.make_node("Slice", ["x", "zero", "m", "one"], ["y"]),
    ]
    constants = {"zero": np.array([0], np.int64), "one": np.array([1], np.int64)}
    model = _chain(nodes, [("x", F32, ["n", 8]), ("other", F32, ["n", "m"])], None, constants)
    rng = np.random.default_rng(0)
    for width in (8, 5):
        feeds = {"x": rng.standard_normal((2, 8)).astype(F32)}
        feeds["other"] = rng.standard_normal((2, width)).astype(F32)
        construct = _construct(
            assert_matches(model, tmp_path / str(width), feeds, shape=["2,8", f"2,{width}"])
        )
        assert "x[:" in construct, construct
