"""Sizes bounded by the table they index: ``min(8, seq)`` is ``seq`` when ``arange(seq)`` looks
rows of an 8-row table up (GPT-Neo through dynamo), and stays ``min`` otherwise."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_runs_like_onnxruntime, convert_fully, make_model

F32, I64 = np.float32, np.int64


def _positions_and_buffer(rows: int):
    """Position vectors ``table[arange(seq)]`` of a ``rows``-row table, and ``buffer[:seq]`` of
    an 8-row buffer flattened through the slice's own (symbolic) length."""
    nodes = [
        helper.make_node("Shape", ["ids"], ["ids_shape"]),
        helper.make_node("Gather", ["ids_shape", "one"], ["seq"], axis=0),
        helper.make_node("Range", ["zero", "seq", "one"], ["positions"]),
        helper.make_node("Gather", ["table", "positions"], ["pos"], axis=0),
        helper.make_node("Unsqueeze", ["seq", "axis0"], ["seq_1d"]),
        helper.make_node("Slice", ["buffer", "zero_1d", "seq_1d", "axis0"], ["window"]),
        helper.make_node("Shape", ["window"], ["window_shape"]),
        helper.make_node("Gather", ["window_shape", "zero"], ["length"], axis=0),
        helper.make_node("Mul", ["length", "four"], ["flat_length"]),
        helper.make_node("Unsqueeze", ["flat_length", "axis0"], ["flat"]),
        helper.make_node("Reshape", ["window", "flat"], ["y"]),
    ]
    rng = np.random.default_rng(0)
    constants = {
        "zero": np.array(0, I64),
        "one": np.array(1, I64),
        "four": np.array(4, I64),
        "axis0": np.array([0], I64),
        "zero_1d": np.array([0], I64),
        "table": rng.standard_normal((rows, 4)).astype(F32),
        "buffer": rng.standard_normal((8, 4)).astype(F32),
    }
    return make_model(
        nodes, [("ids", I64, ["batch", "seq"])], [("y", F32, None), ("pos", F32, None)], constants
    )


@pytest.mark.parametrize(("rows", "has_min"), [(8, False), (6, False), (12, True)])
def test_min_with_the_buffer_length_goes_when_positions_bound_the_length(tmp_path, rows, has_min):
    model = _positions_and_buffer(rows)
    result = convert_fully(model, tmp_path, shape=["ids=1,5"])
    code = result.script_path.read_text()
    assert ("min(" in code) == has_min, code
    for seq in (5, 3):
        feeds = {"ids": np.zeros((1, seq), I64)}
        assert_runs_like_onnxruntime(model, result, feeds)


def test_a_float_range_bounds_nothing_and_raises_nothing(tmp_path):
    """Range over floats (a NaN start in a hostile file) is no position lookup."""
    nodes = [
        helper.make_node("Range", ["start", "limit", "delta"], ["values"]),
        helper.make_node("Add", ["x", "values"], ["y"]),
    ]
    constants = {
        "start": np.array(np.nan, F32),
        "limit": np.array(4.0, F32),
        "delta": np.array(1.0, F32),
    }
    model = make_model(nodes, [("x", F32, [4])], [("y", F32, None)], constants)
    from mindconverter.graph import Graph
    from mindconverter.mappers import default_registry
    from mindconverter.passes.bounded_sizes import run
    from mindconverter.passes.context import PassContext

    graph = Graph(model)
    graph.symbolic_values = {"values": ("n",)}
    assert run(graph, PassContext(registry=default_registry())) is False
