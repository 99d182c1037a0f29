"""Symbolic shapes through onnxruntime operators its own inference has no rule for."""

from __future__ import annotations

import numpy as np
from onnx import helper

from mindconverter.graph.symbolic import infer_symbolic
from tests.helpers import make_model

MS = "com.microsoft"


def output_dims(model, name):
    inferred = infer_symbolic(model)
    assert inferred is not None
    infos = list(inferred.model.graph.value_info) + list(inferred.model.graph.output)
    info = next(i for i in infos if i.name == name)
    return [d.dim_param or d.dim_value for d in info.type.tensor_type.shape.dim]


def test_fused_matmul_keeps_named_dimensions():
    node = helper.make_node("FusedMatMul", ["a", "b"], ["y"], domain=MS, transB=1)
    relu = helper.make_node("Relu", ["y"], ["z"])
    model = make_model(
        [node, relu],
        [("a", np.float32, ["batch", "seq", 8]), ("b", np.float32, [6, 8])],
        [("z", np.float32, None)],
        extra_opsets={MS: 1},
    )
    assert output_dims(model, "y") == ["batch", "seq", 6]
    assert output_dims(model, "z") == ["batch", "seq", 6]


def test_quantized_operators_have_shapes_and_types():
    nodes = [
        helper.make_node("QLinearSigmoid", ["x", "s", "z", "s", "z"], ["sig"], domain=MS),
        helper.make_node("QLinearGlobalAveragePool", ["x", "s", "z", "s", "z"], ["gap"], domain=MS),
        helper.make_node("QLinearConcat", ["s", "z", "x", "s", "z", "x", "s", "z"], ["cat"],
                         domain=MS, axis=1),
    ]  # fmt: skip
    model = make_model(
        nodes,
        [("x", np.uint8, ["batch", 3, 4, 4])],
        [("sig", np.uint8, None), ("gap", np.uint8, None), ("cat", np.uint8, None)],
        {"s": np.array(0.1, np.float32), "z": np.array(128, np.uint8)},
        extra_opsets={MS: 1},
    )
    assert output_dims(model, "sig") == ["batch", 3, 4, 4]
    assert output_dims(model, "gap") == ["batch", 3, 1, 1]
    assert output_dims(model, "cat") == ["batch", 6, 4, 4]
