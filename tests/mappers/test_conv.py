"""Conv and ConvTranspose against onnxruntime."""

from __future__ import annotations

import pytest

from tests.helpers import assert_matches, single_op_model
from tests.mappers.builders import randn


@pytest.mark.parametrize(
    "attrs, x_shape, w_shape",
    [
        ({}, (1, 3, 8, 8), (4, 3, 3, 3)),
        ({"pads": [1, 1, 1, 1], "strides": [2, 2]}, (1, 3, 9, 9), (4, 3, 3, 3)),
        ({"pads": [0, 1, 2, 1]}, (1, 3, 8, 8), (4, 3, 3, 3)),
        ({"dilations": [2, 2], "pads": [2, 2, 2, 2]}, (1, 3, 10, 10), (4, 3, 3, 3)),
        ({"group": 3}, (1, 6, 8, 8), (6, 2, 3, 3)),
        ({"group": 6, "pads": [1, 1, 1, 1]}, (1, 6, 8, 8), (6, 1, 3, 3)),
        ({"auto_pad": "SAME_UPPER", "strides": [2, 2]}, (1, 3, 9, 9), (4, 3, 3, 3)),
        ({"auto_pad": "SAME_LOWER"}, (1, 3, 8, 8), (4, 3, 2, 2)),
        ({"auto_pad": "VALID"}, (1, 3, 8, 8), (4, 3, 3, 3)),
        ({"pads": [1, 1]}, (1, 3, 10), (4, 3, 3)),
        ({"pads": [0, 2], "strides": [2]}, (1, 3, 10), (4, 3, 3)),
        ({"pads": [1, 1, 1, 1, 1, 1]}, (1, 2, 5, 5, 5), (3, 2, 3, 3, 3)),
    ],
)
@pytest.mark.parametrize("bias", [True, False])
def test_conv(tmp_path, attrs, x_shape, w_shape, bias):
    inits = {"W": randn(*w_shape)}
    if bias:
        inits["B"] = randn(w_shape[0])
    model = single_op_model("Conv", {"x": x_shape}, initializers=inits, **attrs)
    assert_matches(model, tmp_path)


@pytest.mark.parametrize(
    "attrs, x_shape, w_shape",
    [
        ({"strides": [2, 2]}, (1, 4, 5, 5), (4, 3, 3, 3)),
        ({"strides": [2, 2], "pads": [1, 1, 1, 1]}, (1, 4, 5, 5), (4, 3, 3, 3)),
        (
            {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]},
            (1, 4, 5, 5),
            (4, 3, 3, 3),
        ),
        ({"strides": [2, 2], "pads": [0, 1, 1, 0]}, (1, 4, 5, 5), (4, 3, 3, 3)),
        ({"group": 2}, (1, 4, 5, 5), (4, 2, 3, 3)),
        ({"strides": [2, 2], "output_shape": [10, 10]}, (1, 4, 5, 5), (4, 3, 3, 3)),
        ({"strides": [2, 2], "auto_pad": "SAME_UPPER"}, (1, 4, 5, 5), (4, 3, 3, 3)),
        ({"strides": [2], "pads": [1, 1]}, (1, 4, 5), (4, 3, 3)),
        ({"strides": [2, 2, 2]}, (1, 4, 3, 3, 3), (4, 3, 2, 2, 2)),
        # strides longer than the kernel: MindSpore's result has trailing bias-only cells
        ({"strides": [2]}, (3, 4, 2), (4, 1, 1)),
        ({"strides": [1, 3]}, (1, 2, 3, 3), (2, 3, 2, 2)),
        ({"strides": [3, 3], "pads": [1, 1, 1, 1]}, (1, 2, 3, 3), (2, 1, 2, 2)),
        ({"strides": [3], "output_padding": [2]}, (1, 2, 3), (2, 1, 1)),
    ],
)
def test_conv_transpose(tmp_path, attrs, x_shape, w_shape):
    model = single_op_model(
        "ConvTranspose",
        {"x": x_shape},
        initializers={"W": randn(*w_shape), "B": randn(w_shape[1] * attrs.get("group", 1))},
        **attrs,
    )
    assert_matches(model, tmp_path)


@pytest.mark.parametrize(
    "op, attrs",
    [
        ("Conv", {"strides": [0, 1]}),
        ("Conv", {"pads": [-1, 0, 0, 0]}),
        ("Conv", {"kernel_shape": [1, 2]}),  # the weight's kernel is 3x3
        ("ConvTranspose", {"dilations": [1, 1, 1]}),
        ("MaxPool", {"kernel_shape": [2, 2], "strides": [2, 1, 1]}),
        ("AveragePool", {"kernel_shape": [2, 0]}),
    ],
)
def test_impossible_window_attributes_leave_a_placeholder(tmp_path, op, attrs):
    """Such attributes (a mutated model) made layers MindSporeModel() could not build."""
    import onnx

    from mindconverter import convert
    from mindconverter.check.network import build_network

    inits = {"W": randn(3, 3, 3, 3)} if op.startswith("Conv") else {}
    model = single_op_model(op, {"x": (1, 3, 6, 6)}, initializers=inits, **attrs)
    onnx.save(model, str(tmp_path / "m.onnx"))
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out")
    assert [site.op_type for site in result.unconverted] == [op]
    build_network(result.script_path, result.checkpoint_path)
