"""Named sizes (codegen/sizes.py): a block's dynamic dimensions read once, at the top of
``construct``, under names that are plain words; numbers stay onnxruntime's at two shapes."""

import re

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model

F32 = np.float32


def _heads_model(batch: str, sequence: str):
    """x (batch, sequence, 8) split into 2 heads of 4, scaled, merged back."""
    nodes = [
        helper.make_node("Reshape", ["x", "heads"], ["split"]),
        helper.make_node("Transpose", ["split"], ["q"], perm=[0, 2, 1, 3]),
        helper.make_node("Mul", ["q", "scale"], ["scaled"]),
        helper.make_node("Transpose", ["scaled"], ["back"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["back", "merged"], ["y"]),
    ]
    constants = {
        "heads": np.array([0, 0, 2, 4], np.int64),
        "merged": np.array([0, 0, 8], np.int64),
        "scale": np.array(0.5, F32),
    }
    return make_model(
        nodes, [("x", F32, [batch, sequence, 8])], [("y", F32, [batch, sequence, 8])], constants
    )


def _construct(result) -> str:
    code = result.script_path.read_text()
    return code[code.index("    def construct(") : code.index("def dynamic_inputs")]


def _feeds(*shape):
    return {"x": np.random.default_rng(0).standard_normal(shape).astype(F32)}


def _converted_at_two_shapes(model, tmp_path) -> str:
    result = assert_matches(model, tmp_path, _feeds(2, 3, 8), shape=["2,3,8"])
    assert_matches(model, tmp_path / "other", _feeds(1, 5, 8), shape=["1,5,8"])
    return _construct(result)


def test_sizes_are_unpacked_once_under_the_exports_names(tmp_path):
    construct = _converted_at_two_shapes(_heads_model("batch", "sequence"), tmp_path)
    assert construct.count("batch, sequence, _ = x.shape") == 1
    assert "ops.shape(" not in construct
    assert "ops.reshape(out.swapaxes(1, 2), (batch, sequence, 8))" in construct  # inline


@pytest.mark.parametrize(
    "batch, sequence",
    [
        ("s0", "s1"),  # dynamo's symbols
        ("unk__3", "LayerNormalizationout_dim_1"),  # made by shape inference
    ],
)
def test_made_up_dimension_names_fall_back_to_names_by_axis(tmp_path, batch, sequence):
    construct = _converted_at_two_shapes(_heads_model(batch, sequence), tmp_path)
    assert "batch_size, seq_len, _ = x.shape" in construct


def test_hostile_dimension_names_become_plain_identifiers(tmp_path):
    model = _heads_model("__import__('os').system('echo owned')", "x; import os")
    construct = _converted_at_two_shapes(model, tmp_path)
    unpack = construct.splitlines()[1].strip()
    assert re.fullmatch(r"\w+, \w+, _ = x\.shape", unpack), unpack
    assert "(" not in unpack and ";" not in construct and "'" not in construct


def test_a_size_nothing_reads_is_not_unpacked(tmp_path):
    """Only the batch is dynamic where the merge reads it: one name, no unpacking."""
    nodes = [
        helper.make_node("Shape", ["x"], ["sizes"], end=1),
        helper.make_node("Concat", ["sizes", "rest"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    model = make_model(
        nodes,
        [("x", F32, ["batch", "sequence", 8])],
        [("y", F32, ["batch", None])],
        {"rest": np.array([-1], np.int64)},
    )
    construct = _converted_at_two_shapes(model, tmp_path)
    assert "batch = x.shape[0]" in construct
    assert "sequence" not in construct and "_ =" not in construct


def test_a_value_a_returned_expression_reads_is_kept():
    """``return x, hidden_states[0]`` reads ``hidden_states``: its line is not dead."""
    from mindconverter.codegen.scope import BlockScope
    from mindconverter.codegen.sizes import drop_size_only_values

    scope = BlockScope()
    scope.cls.body = ["hidden_states = ops.cast(hidden_states, ms.bool_)", "y = x * 2"]
    drop_size_only_values(scope, ["x", "hidden_states[0]"])
    assert scope.cls.body == ["hidden_states = ops.cast(hidden_states, ms.bool_)"]


def test_an_item_of_a_named_sizes_tuple_is_the_size_itself(tmp_path):
    """DeiT's two tokens expanded over the batch read ``batch``, not ``shape[0]``."""
    nodes = [
        helper.make_node("Shape", ["x"], ["sizes"], start=0, end=1),
        helper.make_node("Concat", ["sizes", "one", "one"], ["target"], axis=0),
        helper.make_node("Expand", ["cls", "target"], ["cls_b"]),
        helper.make_node("Expand", ["dist", "target"], ["dist_b"]),
        helper.make_node("Concat", ["cls_b", "dist_b", "x"], ["y"], axis=1),
    ]
    constants = {
        "one": np.array([1], np.int64),
        "cls": np.random.default_rng(1).standard_normal((1, 1, 8)).astype(F32),
        "dist": np.random.default_rng(2).standard_normal((1, 1, 8)).astype(F32),
    }
    model = make_model(nodes, [("x", F32, ["batch", "sequence", 8])], [("y", F32, None)], constants)
    construct = _converted_at_two_shapes(model, tmp_path)
    assert "(shape[0]" not in construct and construct.count("(batch, -1, -1)") == 2
