"""Attribute names of parameters read from their source names (codegen/expressions.py)."""

from __future__ import annotations

import pytest

from mindconverter.codegen.expressions import _relative_to


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
