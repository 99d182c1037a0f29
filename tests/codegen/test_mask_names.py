"""The values that build an attention's mask are named ``causal_mask`` or ``attention_mask``."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from mindconverter.codegen.mask_names import mask_chain_roles
from mindconverter.graph.internal_domain import DOMAIN
from mindconverter.graph.node import Node
from mindconverter.mappers.base import MappedNode

FILLS = {"zero": np.array(0.0, np.float32), "lowest": np.array(-3.4e38, np.float32)}


def _mapped(op: str, inputs: list[str], output: str, domain: str = "") -> MappedNode:
    return MappedNode(Node(output, op, domain, {}, inputs, [output]))


def _graph(inputs=(), constants=FILLS):
    return SimpleNamespace(inputs=list(inputs), outputs=["y"], constant=constants.get)


def _attention(bias: str) -> MappedNode:
    return _mapped("ScaledDotProductAttention", ["q", "k", "v", bias], "y", DOMAIN)


def test_a_causal_mask_from_compared_positions():
    mapped = [
        _mapped("LessOrEqual", ["columns", "rows"], "le"),
        _mapped("Where", ["le", "zero", "lowest"], "bias"),
        _mapped("Unsqueeze", ["bias", "axes"], "mask4d"),
        _attention("mask4d"),
    ]
    roles = mask_chain_roles(_graph(), mapped)
    assert roles == {"le": "causal_mask", "bias": "causal_mask", "mask4d": "causal_mask"}


def test_a_padding_mask_from_a_network_input():
    mapped = [
        _mapped("Cast", ["attention_mask"], "cast"),
        _mapped("Sub", ["one", "cast"], "inverted"),
        _mapped("Mul", ["inverted", "lowest"], "bias"),
        _attention("bias"),
    ]
    constants = {**FILLS, "one": np.array(1.0, np.float32)}
    roles = mask_chain_roles(_graph(["attention_mask"], constants), mapped)
    assert set(roles) == {"cast", "inverted", "bias"} and set(roles.values()) == {"attention_mask"}


def test_a_position_bias_or_a_shared_value_is_no_mask():
    masked_bias = [
        _mapped("Where", ["keep", "position_bias", "lowest"], "bias"),
        _attention("bias"),
    ]
    assert mask_chain_roles(_graph(["keep"]), masked_bias) == {}
    shared = [
        _mapped("LessOrEqual", ["columns", "rows"], "le"),
        _mapped("Where", ["le", "zero", "lowest"], "bias"),
        _mapped("Not", ["le"], "other"),  # the comparison is read elsewhere too
        _attention("bias"),
    ]
    assert mask_chain_roles(_graph(), shared) == {}
