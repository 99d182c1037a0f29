"""Verification at a second set of sizes that the source model itself can run at."""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from mindconverter import convert
from mindconverter.check.verify import verification_shapes
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
