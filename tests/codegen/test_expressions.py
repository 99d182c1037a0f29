"""Attribute names of parameters read from their source names (codegen/expressions.py)."""

from __future__ import annotations

import numpy as np
import pytest

from mindconverter.codegen.expressions import _relative_to, _renamed_parameter
from mindconverter.graph.node import Node
from mindconverter.mappers.base import MappedNode


@pytest.mark.parametrize(
    "block, source, name",
    [
        ("m.layers.0", "m.layers.0.lambda_1", "lambda_1"),
        # the exporter kept layer 0's tensor for an identical one of layer 1 (BEiT's layer
        # scales at their initial value): named as layer 1's own, so both layers share a class
        ("m.layers.1", "m.layers.0.lambda_1", "lambda_1"),
        ("m.layers.1.attention", "m.layers.0.attention.bias", "bias"),
        ("m.encoder", "m.decoder.scale", "m.decoder.scale"),
        ("", "m.cls_token", "m.cls_token"),
        ("m.layers.1", "m.layers.1", "m.layers.1"),
    ],
)
def test_a_source_name_relative_to_its_block(block, source, name):
    assert _relative_to(block, source) == name


def test_a_value_the_exporter_computed_names_no_layer():
    """TorchScript's GroupNorm takes its unit scale from ``.../layer_norm/Constant_1_output_0``:
    not a module's weight, so the node's own scope names the layer."""
    import numpy as np

    from mindconverter.codegen.expressions import _weight_hint
    from mindconverter.mappers.base import Weight

    computed = Weight(np.ones(2, np.float32), "/m/conv_layers.0/layer_norm/Constant_1_output_0")
    assert _weight_hint({"gamma": computed}) == ""
    held = Weight(np.ones(2, np.float32), "m.conv_layers.0.layer_norm.weight")
    assert _weight_hint({"gamma": held}) == "m.conv_layers.0.layer_norm"


@pytest.mark.parametrize(
    "source, computed",
    [
        ("val_376", True),  # dynamo's name for a tensor it folded (Mixtral's stacked experts)
        ("unsqueeze_14", True),
        ("/m/Constant_output_0", True),
        ("val", False),  # a module's own buffer may be called that
        ("m.layers.0.valve", False),
        ("m.layers.0.mlp.weight", False),
    ],
)
def test_values_the_exporter_named_are_told_from_parameters(source, computed):
    from mindconverter.codegen.expressions import _exporter_value_name

    assert _exporter_value_name(source) is computed


def _read_by(op_type: str, fx_node: str) -> MappedNode:
    scopes = "['', 'head', 'repeat']"
    metadata = {"pkg.torch.onnx.name_scopes": scopes, "pkg.torch.onnx.fx_node": fx_node}
    node = Node("n", op_type, "", {}, ["val_4", "val_9"], ["y"], metadata)
    return MappedNode(node)


class _Graph:
    constants = {
        "val_4": np.ones((1, 1, 8), np.float32),
        "val_9": np.array([2, 1, 1], np.int64),
        "head.scale": np.ones(8, np.float32),
    }
    source_parameters = frozenset({"head.scale"})


@pytest.mark.parametrize(
    "op_type, fx_node, source",
    [
        ("Tile", "%repeat = call_function[...](args = (%p_head_probe, [%s0, 1, 1]))", "head.probe"),
        # aten.linear's MatMul reads its weight transposed: never taken for the parameter
        ("MatMul", "%linear = call_function[...](args = (%x, %p_head_probe))", ""),
        # two parameters named, or one of another module, or one the graph holds by name
        ("Tile", "%r = call_function[...](args = (%p_head_probe, %p_head_other))", ""),
        ("Tile", "%r = call_function[...](args = (%p_body_probe, [1, 1]))", ""),
        ("Mul", "%mul = call_function[...](args = (%x, %p_head_scale))", ""),
    ],
)
def test_a_parameter_the_dynamo_exporter_renamed_is_found_by_its_fx_node(op_type, fx_node, source):
    assert _renamed_parameter(_Graph(), _read_by(op_type, fx_node), "val_4") == source
