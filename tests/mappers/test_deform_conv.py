"""DeformConv equals onnx's reference evaluator (onnxruntime has no CPU kernel): offsets that
move taps outside the input, masks, bias, groups and offset groups, strides, pads, dilations;
PyNative and GRAPH mode."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from tests.helpers import make_model


@pytest.mark.parametrize("graph_mode", [False, True])
@pytest.mark.parametrize(
    "attrs, with_mask",
    [
        ({}, False),
        ({"pads": [1, 1, 1, 1], "strides": [2, 1], "dilations": [1, 2]}, True),
        ({"group": 2, "offset_group": 2, "pads": [0, 1, 0, 1]}, True),
    ],
)
def test_deform_conv_equals_the_reference(tmp_path, attrs, with_mask, graph_mode):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 6, 5)).astype(np.float32)
    weight = rng.standard_normal((6, 4 // attrs.get("group", 1), 3, 2)).astype(np.float32)
    bias = rng.standard_normal(6).astype(np.float32)
    node_inputs = ["x", "w", "offset", "b"] + (["mask"] if with_mask else [])
    node = helper.make_node("DeformConv", node_inputs, ["y"], kernel_shape=[3, 2], **attrs)
    probe = make_model(
        [node],
        [("x", np.float32, x.shape), ("offset", np.float32, None)]
        + ([("mask", np.float32, None)] if with_mask else []),
        [("y", np.float32, None)],
        {"w": weight, "b": bias},
        opset=19,
    )
    # the output size follows from the attributes (ONNX reads it from the offset input)
    groups = attrs.get("offset_group", 1)
    pads, strides = attrs.get("pads", [0] * 4), attrs.get("strides", [1, 1])
    dilations = attrs.get("dilations", [1, 1])
    out_h = (6 + pads[0] + pads[2] - (2 * dilations[0] + 1)) // strides[0] + 1
    out_w = (5 + pads[1] + pads[3] - (1 * dilations[1] + 1)) // strides[1] + 1
    feeds = {
        "x": x,
        "offset": (rng.standard_normal((2, groups * 12, out_h, out_w)) * 1.5).astype(np.float32),
    }
    if with_mask:
        feeds["mask"] = rng.uniform(size=(2, groups * 6, out_h, out_w)).astype(np.float32)
    for value in probe.graph.input[1:]:
        del value.type.tensor_type.shape.dim[:]
        for size in feeds[value.name].shape:
            value.type.tensor_type.shape.dim.add().dim_value = size
    onnx.save(probe, tmp_path / "m.onnx")
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out")
    assert result.unconverted == []
    (got,) = run_mindspore(
        result.script_path, result.checkpoint_path, list(feeds.values()), graph_mode=graph_mode
    )
    (want,) = ReferenceEvaluator(probe).run(None, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
