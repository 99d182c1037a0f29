"""A layer the source applies twice is one layer called twice, never a tied copy."""

from __future__ import annotations

import numpy as np
from onnx import helper

from tests.helpers import assert_matches, make_model


def _projection_applied_twice(bias_copy: bool):
    """``proj(x) + proj(table)`` as the TorchScript exporter writes it: two MatMuls reading one
    weight, the second bias an exporter's copy under a generated name when asked."""
    rng = np.random.default_rng(3)
    weight = rng.standard_normal((4, 4)).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    second_bias = "onnx::Add_7" if bias_copy else "proj.bias"
    nodes = [
        helper.make_node("MatMul", ["x", "onnx::MatMul_5"], ["a"], name="/proj/MatMul"),
        helper.make_node("Add", ["proj.bias", "a"], ["b"], name="/proj/Add"),
        helper.make_node("MatMul", ["table", "onnx::MatMul_5"], ["c"], name="/proj_1/MatMul"),
        helper.make_node("Add", [second_bias, "c"], ["d"], name="/proj_1/Add"),
        helper.make_node("Add", ["b", "d"], ["y"], name="/Add"),
    ]
    inits = {"onnx::MatMul_5": weight, "proj.bias": bias}
    if bias_copy:
        inits["onnx::Add_7"] = bias.copy()
    return make_model(
        nodes, [("x", np.float32, (2, 4)), ("table", np.float32, (2, 4))],
        [("y", np.float32, None)], inits,
    )  # fmt: skip


def test_a_layer_applied_twice_is_called_twice(tmp_path):
    for bias_copy in (False, True):
        result = assert_matches(_projection_applied_twice(bias_copy), tmp_path / str(bias_copy))
        code = result.script_path.read_text()
        assert code.count("nn.Dense(") == 1, code
        assert code.count("self.proj(") == 2 and ".weight = " not in code, code
        with open(result.weight_map_path) as handle:
            assert '"proj.bias"' in handle.read()


def test_layers_with_equal_weights_from_two_named_sources_stay_two():
    """Two named layers that hold equal numbers are two layers of the source (the second would
    train apart from the first): same_layer never merges them."""
    from mindconverter.codegen.applied_layers import same_layer

    first = ("nn.Dense", "[]", (("weight", ("k",), (), "a.weight"),))
    second = ("nn.Dense", "[]", (("weight", ("k",), (), "b.weight"),))
    copy = ("nn.Dense", "[]", (("weight", ("k",), (), "onnx::MatMul_9"),))
    assert same_layer(second, [(first, "a")]) is None
    assert same_layer(copy, [(first, "a")]) == "a"
