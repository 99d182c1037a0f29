"""Which initializers are the source's trainable parameters."""

from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

from mindconverter.graph.weight_roles import (
    is_generated_name,
    trainable_initializers,
)
from tests.helpers import make_model

KIND = "pkg.torch.export.graph_signature.InputSpec.kind"


def _values(model):
    return {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}


def _model(initializers, nodes):
    return make_model(nodes, [("x", np.float32, (2, 4))], [("y", np.float32, None)], initializers)


def test_a_dynamo_export_says_which_are_parameters():
    rng = np.random.default_rng(0)
    model = _model(
        {
            "fc.weight": rng.standard_normal((4, 4)).astype(np.float32),
            "mask": rng.standard_normal((2, 4)).astype(np.float32),
        },
        [
            helper.make_node("MatMul", ["x", "fc.weight"], ["h"]),
            helper.make_node("Add", ["h", "mask"], ["y"]),
        ],
    )
    for name, kind in (("fc.weight", "PARAMETER"), ("mask", "BUFFER")):
        info = model.graph.value_info.add(name=name)
        entry = info.metadata_props.add()
        entry.key, entry.value = KIND, kind
    assert trainable_initializers(model, _values(model)) == {"fc.weight"}


def test_evidence_decides_for_other_exports():
    rng = np.random.default_rng(0)
    mask = np.triu(np.full((2, 4), -np.inf, np.float32), 1)
    model = _model(
        {
            "onnx::MatMul_7": rng.standard_normal((4, 4)).astype(np.float32),  # read as a weight
            "onnx::Add_8": rng.standard_normal((4,)).astype(np.float32),  # made-up constant
            "pos.weight": rng.standard_normal((2, 4)).astype(np.float32),  # a named tensor
            "causal": mask,  # infinities: a mask
            "bn.running_mean": rng.standard_normal((4,)).astype(np.float32),
            "steps": np.arange(4, dtype=np.int64),
        },
        [
            helper.make_node("MatMul", ["x", "onnx::MatMul_7"], ["a"]),
            helper.make_node("Add", ["a", "onnx::Add_8"], ["b"]),
            helper.make_node("Add", ["b", "pos.weight"], ["c"]),
            helper.make_node("Add", ["c", "causal"], ["d"]),
            helper.make_node("Sub", ["d", "bn.running_mean"], ["y"]),
        ],
    )
    assert trainable_initializers(model, _values(model)) == {"onnx::MatMul_7", "pos.weight"}


def test_generated_names():
    assert is_generated_name("onnx::Conv_57") and is_generated_name("val_12")
    assert not is_generated_name("layer1.0.conv1.weight")
