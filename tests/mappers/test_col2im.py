"""Col2Im: 2-D images through ops.fold, other ranks and asymmetric pads through a constant
placement matrix; compared with the ONNX reference implementation (and onnxruntime for 2-D)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

from mindconverter.check.network import run_mindspore
from tests.helpers import assert_outputs_match, convert_fully, make_model

pytestmark = pytest.mark.slow


def _col2im_model(x_shape, image, block, **attrs):
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], **attrs)
    inits = {"image": np.array(image, np.int64), "block": np.array(block, np.int64)}
    return make_model(
        [node], [("x", np.float32, x_shape)], [("y", np.float32, None)], inits, opset=18
    )


@pytest.mark.parametrize(
    "x_shape, image, block, attrs",
    [
        ((1, 10, 12), [3, 4, 5], [1, 1, 5], {}),
        ((2, 16, 8), [3, 4, 4], [2, 2, 2], {"strides": [1, 2, 2]}),
        ((1, 6, 36), [5, 5, 4], [1, 3, 2], {"dilations": [1, 2, 1], "pads": [0, 1, 0, 1, 0, 0]}),
        ((1, 4, 20), [4, 5], [2, 2], {"pads": [1, 0, 0, 1]}),
        ((1, 3, 4), [9], [3], {"strides": [2]}),
    ],
)
def test_col2im_like_the_reference(tmp_path, x_shape, image, block, attrs):
    model = _col2im_model(x_shape, image, block, **attrs)
    x = np.random.default_rng(0).standard_normal(x_shape).astype(np.float32)
    want = ReferenceEvaluator(model).run(None, {"x": x})
    result = convert_fully(model, tmp_path)
    got = run_mindspore(result.script_path, result.checkpoint_path, [x])
    assert_outputs_match(got, want)
