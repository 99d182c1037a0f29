"""Inputs and outputs as the model declares them."""

from __future__ import annotations

import numpy as np
from onnx import helper

from mindconverter.graph.specs import detect_inputs, detect_outputs, static_shapes
from tests.helpers import make_model


def test_declared_inputs_outputs_and_static_shapes():
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [("x", np.float32, ["batch", 3])],
        [("y", np.float32, None)],
    )
    (spec,) = detect_inputs(model)
    assert spec.name == "x" and spec.shape == ["batch", 3] and not spec.is_static
    assert spec.describe() == "x: float32[batch, 3]" and spec.dtype_name == "float32"
    (out,) = detect_outputs(model)
    assert out.shape is None and out.describe() == "y: float32[?]"
    assert static_shapes(model) == {}
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2
    assert static_shapes(model) == {"x": (2, 3)}
