"""Frozen constants are named by their role (issue 26 item 4: names by role, never the
exporter's value names)."""

from __future__ import annotations

import numpy as np

from mindconverter.codegen.constant_roles import constant_role
from mindconverter.graph.internal_domain import DOMAIN
from mindconverter.graph.node import Node


def _node(op_type: str, inputs: list[str], domain: str = "") -> Node:
    return Node(name="n", op_type=op_type, domain=domain, inputs=inputs, outputs=["y"], attrs={})


def test_a_boolean_lower_triangle_is_a_causal_mask():
    triangle = np.tril(np.ones((1, 1, 4, 4), dtype=bool))
    assert constant_role(triangle, "c", None) == "causal_mask"
    window = triangle & ~np.tril(triangle, -2)  # GPT-Neo's local layers: the last two positions
    assert constant_role(window, "c", None) == "causal_mask"
    assert constant_role(~triangle, "c", None) == "mask"
    assert constant_role(np.ones((4, 4), dtype=bool), "c", None) == "mask"


def test_rows_counting_up_are_position_ids():
    assert constant_role(np.arange(8, dtype=np.int64)[None], "c", None) == "position_ids"
    assert constant_role(np.array([[0, 2, 4]], np.int64), "c", None) == "const"
    assert constant_role(np.arange(8, dtype=np.float32), "c", None) == "const"


def test_a_bias_of_the_fused_attention_is_a_position_bias():
    attention = _node("ScaledDotProductAttention", ["q", "k", "v", "c"], DOMAIN)
    bias = np.zeros((1, 2, 4, 4), np.float32)
    assert constant_role(bias, "c", attention) == "position_bias"
    assert constant_role(bias, "q", attention) == "const"  # not one of its biases
    assert constant_role(bias, "c", _node("Add", ["x", "c"])) == "const"
