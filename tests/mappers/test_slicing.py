"""Concat, Split, Slice, Pad and ReverseSequence against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from mindconverter.check.verify import run_onnxruntime
from tests.helpers import assert_matches, convert_and_run, make_model, single_op_model
from tests.mappers.builders import I64, F, model_of, randn


def test_concat(tmp_path):
    assert_matches(single_op_model("Concat", {"a": (2, 3), "b": (2, 5)}, axis=-1), tmp_path)


@pytest.mark.parametrize(
    "opset, kwargs, inits, outputs",
    [
        (11, {"axis": 1}, {}, 3),
        (11, {"axis": 1, "split": [1, 2, 3]}, {}, 3),
        (13, {"axis": 1}, {"s": np.array([2, 4], np.int64)}, 2),
        (18, {"axis": 1, "num_outputs": 3}, {}, 3),
    ],
)
def test_split(tmp_path, opset, kwargs, inits, outputs):
    model = single_op_model(
        "Split", {"x": (2, 6)}, output_count=outputs, initializers=inits, opset=opset, **kwargs
    )
    assert_matches(model, tmp_path)


@pytest.mark.parametrize(
    "starts, ends, axes, steps",
    [
        ([1], [3], [1], [1]),
        ([0, 1], [-1, 1000], [0, 2], [1, 2]),
        ([-1], [-1000], [2], [-1]),
        ([3], [0], [1], [-2]),
        ([0], [2**63 - 1], [0], [1]),
        ([-10], [-10], [1], [-1]),  # a start before the first element is clamped to it
        ([-7], [-(2**63)], [2], [-2]),
        # a whole axis reversed while another is sliced: MindSpore's indexing dropped the reversal
        ([-1, 0], [-(2**63), 2], [1, 2], [-1, 1]),
        ([2, 1], [-5, 4], [1, 0], [-1, 1]),
    ],
)
def test_slice(tmp_path, starts, ends, axes, steps):
    inits = {
        "s": np.array(starts, np.int64),
        "e": np.array(ends, np.int64),
        "a": np.array(axes, np.int64),
        "st": np.array(steps, np.int64),
    }
    assert_matches(single_op_model("Slice", {"x": (3, 4, 5)}, initializers=inits), tmp_path)


def test_slice_opset9_attributes(tmp_path):
    assert_matches(
        single_op_model("Slice", {"x": (3, 4)}, opset=9, starts=[1], ends=[3], axes=[1]), tmp_path
    )


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad(tmp_path, mode):
    inits = {"p": np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64), "v": np.array(0.5, np.float32)}
    names = ["x", "p", "v"] if mode == "constant" else ["x", "p"]
    model = single_op_model(
        "Pad",
        {"x": (1, 2, 4, 4)},
        initializers={k: inits[k] for k in names[1:]},
        input_names=names,
        mode=mode,
    )
    assert_matches(model, tmp_path)


def test_pad_opset2_attributes(tmp_path):
    model = single_op_model("Pad", {"x": (1, 2, 4)}, opset=9, pads=[0, 0, 1, 0, 0, 2], value=1.0)
    assert_matches(model, tmp_path)


@pytest.mark.parametrize("time_axis, batch_axis", [(0, 1), (1, 0)])
def test_reverse_sequence(tmp_path, time_axis, batch_axis):
    shape = (4, 3) if time_axis == 0 else (3, 4)
    model = model_of(
        "ReverseSequence",
        [("x", F, shape), ("l", I64, (3,))],
        [("y", F, None)],
        opset=10,
        time_axis=time_axis,
        batch_axis=batch_axis,
    )
    assert_matches(model, tmp_path, feeds={"x": randn(*shape), "l": np.array([1, 4, 2], I64)})


@pytest.mark.parametrize(
    "shape, pads, mode",
    [
        ((5,), [2, 1], "reflect"),  # 1-D: ops.pad runs no reflect/edge/wrap on it
        ((2, 3, 4, 4), [1, 0, 0, 0, 0, 1, 0, 0], "edge"),  # batch and channel axes
        ((1, 2, 3, 3, 3), [0, 0, 1, 1, 1, 0, 0, 1, 1, 1], "reflect"),  # 3 axes of a 5-D input
        ((2, 3), [0, 5, 0, 4], "wrap"),  # wider than the axis
        ((2, 3), [1, 0, 1, 0], "reflect"),  # both axes of a 2-D input
        ((3, 4), [0, -1, 0, 2], "wrap"),  # cropped first, then wrapped
        ((3, 4), [-1, 1, 1, 0], "edge"),
    ],
)
def test_pad_modes_ops_pad_cannot_run(tmp_path, shape, pads, mode):
    model = single_op_model(
        "Pad",
        {"x": shape},
        initializers={"p": np.array(pads, np.int64)},
        opset=19,
        mode=mode,
    )
    assert_matches(model, tmp_path)


def test_pad_with_negative_pads_is_right_on_every_call(tmp_path):
    """ops.pad with negative widths is right on its first call and wrong on the next ones."""
    from mindconverter.check.network import run_mindspore

    inits = {"p": np.array([1, -1, -1, 0, -1, 0], np.int64), "v": np.array(2.0, np.float32)}
    model = single_op_model(
        "Pad", {"x": (1, 3, 3)}, initializers=inits, input_names=["x", "p", "v"], opset=18
    )
    x = randn(1, 3, 3)
    result, _, (want,) = convert_and_run(model, tmp_path, feeds={"x": x})
    for _ in range(2):
        (got,) = run_mindspore(result.script_path, result.checkpoint_path, [x])
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("graph_mode", [False, True])
def test_pad_by_a_run_time_amount_on_one_side_reads_only_that_side(tmp_path, graph_mode):
    """SEW pads the end of its time axis to another tensor's length (pads computed from two
    dynamic sizes, the others zeros): only that axis is gathered, without testing positions
    before the start; a shorter target crops. Right in both modes at three lengths."""
    nodes = [
        helper.make_node("Shape", ["x"], ["x_len"], start=1, end=2),
        helper.make_node("Shape", ["target"], ["target_len"], start=1, end=2),
        helper.make_node("Sub", ["target_len", "x_len"], ["missing"]),
        helper.make_node("Concat", ["zeros", "missing", "zero"], ["pads"], axis=0),
        helper.make_node("Pad", ["x", "pads"], ["y"]),
    ]
    inits = {"zeros": np.zeros(4, np.int64), "zero": np.zeros(1, np.int64)}
    model = make_model(
        nodes,
        [("x", np.float32, [1, "t", 4]), ("target", np.float32, [1, "u", 4])],
        [("y", np.float32, None)],
        inits,
        opset=18,
    )
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    result = convert(path, output=tmp_path / "out", shape=["x=1,5,4", "target=1,7,4"])
    code = result.script_path.read_text()
    assert code.count("ops.arange(") == 1 and ">= 0" not in code, code
    for t, u in ((5, 7), (6, 4), (3, 3)):
        feeds = {"x": randn(1, t, 4), "target": randn(1, u, 4)}
        (want,) = run_onnxruntime(model, feeds, ["y"])
        (got,) = run_mindspore(
            result.script_path, result.checkpoint_path, list(feeds.values()), graph_mode=graph_mode
        )
        np.testing.assert_array_equal(got, want)
