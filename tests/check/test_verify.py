"""Verification at a second set of sizes that the source model itself can run at."""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from mindconverter import convert
from mindconverter.check.verify import compared_values, random_inputs, verification_shapes
from mindconverter.graph import Graph


def _cache_like_model() -> onnx.ModelProto:
    """``concat(past, new) + mask``: runs only when ``total == past + sequence``, a tie the
    model does not declare (as a KV-cache decoder's attention mask)."""
    inputs = [
        helper.make_tensor_value_info("past", TensorProto.FLOAT, ["batch", "past"]),
        helper.make_tensor_value_info("new", TensorProto.FLOAT, ["batch", "sequence"]),
        helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "total"]),
    ]
    output = helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", "total"])
    nodes = [
        helper.make_node("Concat", ["past", "new"], ["grown"], axis=1),
        helper.make_node("Add", ["grown", "mask"], ["out"]),
    ]
    graph = helper.make_graph(nodes, "cache_like", inputs, [output])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_candidates_grow_each_named_size_then_double_it():
    graph = Graph(_cache_like_model())
    example = {"past": (1, 3), "new": (1, 2), "mask": (1, 5)}
    shapes = verification_shapes(graph, example)
    assert shapes == [
        example,
        {"past": (2, 4), "new": (2, 3), "mask": (2, 6)},
        {"past": (2, 6), "new": (2, 4), "mask": (2, 10)},
    ]


def test_a_second_size_the_source_cannot_run_at_gives_way_to_the_next(tmp_path):
    model_file = tmp_path / "cache_like.onnx"
    onnx.save(_cache_like_model(), model_file)
    result = convert(
        model_file,
        shape=["past=1,3", "new=1,2", "mask=1,5"],
        output=tmp_path / "out",
        verify=True,
    )
    assert result.verification["ok"]
    assert result.verification["shapes"][1]["mask"] == (2, 10)
    assert result.verification["skipped_shapes"] == [
        {"past": (2, 4), "new": (2, 3), "mask": (2, 6)}
    ]


def test_an_integer_input_tested_for_equality_takes_the_constant_it_is_tested_against():
    """``sr == 16000`` choosing a branch: random integers (0 or 1) would never take it."""
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
        helper.make_tensor_value_info("sr", TensorProto.INT64, []),
        helper.make_tensor_value_info("ids", TensorProto.INT64, [3]),
    ]
    nodes = [
        helper.make_node("Equal", ["wide", "sr"], ["is_wide"]),
        helper.make_node("Cast", ["is_wide"], ["flag"], to=TensorProto.FLOAT),
        helper.make_node("Equal", ["ids", "wide"], ["padding"]),  # a tensor: stays random
        helper.make_node("Cast", ["ids"], ["float_ids"], to=TensorProto.FLOAT),
        helper.make_node("ReduceSum", ["float_ids"], ["total"], keepdims=0),
        helper.make_node("Add", ["flag", "total"], ["bias"]),
        helper.make_node("Add", ["x", "bias"], ["out"]),
    ]
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, [2])
    model = helper.make_model(
        helper.make_graph(
            nodes,
            "rate",
            inputs,
            [out],
            [helper.make_tensor("wide", TensorProto.INT64, [], [16000])],
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    graph = Graph(model)
    assert compared_values(graph) == {"sr": 16000}
    x, sr, ids = random_inputs(graph)
    assert sr.dtype == "int64" and sr.shape == () and int(sr) == 16000
    assert ids.shape == (3,) and set(ids.tolist()) <= {0, 1}
