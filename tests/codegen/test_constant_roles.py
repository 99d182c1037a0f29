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


def test_a_static_cache_puts_the_queries_at_the_last_keys():
    # two new tokens after three cached ones: query i sees keys 0 .. i + 3
    ahead = np.tril(np.ones((2, 5), dtype=bool), 3)[None, None]
    assert constant_role(ahead, "c", None) == "causal_mask"
    assert constant_role(np.tril(np.ones((2, 5), dtype=bool), 2), "c", None) == "mask"
    assert constant_role(np.tril(np.ones((5, 2), dtype=bool)), "c", None) == "mask"


def test_an_additive_table_is_a_mask_by_where_it_hides():
    triangle = np.tril(np.ones((4, 4), dtype=bool))
    for hidden in (-np.inf, np.finfo(np.float32).min, -100.0):
        additive = np.where(triangle, 0.0, hidden).astype(np.float32)
        assert constant_role(additive, "c", None) == "causal_mask"
        assert constant_role(additive.T.copy(), "c", None) == "mask"
    # a bias of many values, or of numbers too small to hide anything, is no mask
    assert constant_role(np.where(triangle, 0.0, -1.0).astype(np.float32), "c", None) == "const"
    ramp = -np.abs(np.subtract.outer(np.arange(4.0), np.arange(4.0))).astype(np.float32) * 200
    assert constant_role(ramp, "c", None) == "const"


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
