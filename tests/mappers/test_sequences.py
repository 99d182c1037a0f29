"""Tensor sequences become Python tuples."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model


@pytest.mark.parametrize("split, keepdims", [(np.array(2, np.int64), 1), (None, 0), (None, 1)])
def test_split_to_sequence_then_sequence_at(tmp_path, split, keepdims):
    inputs = ["x", "split"] if split is not None else ["x"]
    nodes = [
        helper.make_node("SplitToSequence", inputs, ["seq"], axis=1, keepdims=keepdims),
        helper.make_node("SequenceAt", ["seq", "first"], ["a"]),
        helper.make_node("SequenceAt", ["seq", "last"], ["b"]),
        helper.make_node("Add", ["a", "b"], ["y"]),
    ]
    inits = {"first": np.array(0, np.int64), "last": np.array(-1, np.int64)}
    if split is not None:
        inits["split"] = split
    model = make_model(nodes, [("x", np.float32, (2, 4, 3))], [("y", np.float32, None)], inits)
    x = np.random.default_rng(0).standard_normal((2, 4, 3)).astype(np.float32)
    assert_matches(model, tmp_path, feeds={"x": x})


@pytest.mark.parametrize("position", [None, 0, 2, -2])
@pytest.mark.parametrize("new_axis", [0, 1])
def test_insert_erase_and_concat_from_sequence(tmp_path, position, new_axis):
    where = ["pos"] if position is not None else []
    nodes = [
        helper.make_node("SplitToSequence", ["x"], ["parts"], axis=0, keepdims=1 - new_axis),
        helper.make_node("SequenceInsert", ["parts", "extra", *where], ["longer"]),
        helper.make_node("SequenceErase", ["longer", *where], ["same"]),
        helper.make_node("SequenceInsert", ["same", "extra", *where], ["again"]),
        helper.make_node("ConcatFromSequence", ["again"], ["y"], axis=0, new_axis=new_axis),
    ]
    inits = {"pos": np.array(position, np.int64)} if position is not None else {}
    extra_shape = (3,) if new_axis else (1, 3)
    model = make_model(
        nodes,
        [("x", np.float32, (4, 3)), ("extra", np.float32, extra_shape)],
        [("y", np.float32, None)],
        inits,
    )
    rng = np.random.default_rng(1)
    feeds = {
        "x": rng.standard_normal((4, 3)).astype(np.float32),
        "extra": rng.standard_normal(extra_shape).astype(np.float32),
    }
    assert_matches(model, tmp_path, feeds=feeds)


def test_empty_sequence_and_optional_values(tmp_path):
    nodes = [
        helper.make_node("SequenceEmpty", [], ["empty"], dtype=1),
        helper.make_node("SequenceInsert", ["empty", "x"], ["one"]),
        helper.make_node("ConcatFromSequence", ["one"], ["y"], axis=0),
        helper.make_node("Optional", ["x"], ["some"]),
        helper.make_node("OptionalHasElement", ["some"], ["has"]),
        helper.make_node("Optional", [], ["none"], type=helper.make_tensor_type_proto(1, None)),
        helper.make_node("OptionalHasElement", ["none"], ["has_not"]),
        helper.make_node("OptionalGetElement", ["some"], ["z"]),
    ]
    model = make_model(
        nodes,
        [("x", np.float32, (2, 3))],
        [
            ("y", np.float32, None),
            ("has", bool, None),
            ("has_not", bool, None),
            ("z", np.float32, None),
        ],
    )
    assert_matches(model, tmp_path)
