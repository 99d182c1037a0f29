"""Names of the frozen constants a script holds, by what the network does with them.

An exporter folds buffers and tables computed from the configuration into constants with
generated names (``onnx::Add_123``, ``constant_3_output_0``) that never reach the script. The
attribute takes the role instead: ``position_ids`` for a table of positions (HF's buffer of that
name), ``position_bias`` for a bias added to attention scores (Swin's relative position bias),
``causal_mask`` for a boolean table that lets each position see itself and nothing after it,
``mask`` for another boolean table, else ``const``.
"""

from __future__ import annotations

import numpy as np

from ..graph.internal_domain import DOMAIN
from ..graph.node import Node

_ATTENTION = "ScaledDotProductAttention"
_ATTENTION_BIASES = 3  # inputs of the fused attention after q, k and v are added to the scores


def constant_role(array: np.ndarray, name: str, consumer: Node | None) -> str:
    """The attribute name of the frozen constant ``name`` that ``consumer`` reads."""
    array = np.asarray(array)
    if array.dtype == np.bool_:
        return "causal_mask" if _lower_triangular(array) else "mask"
    is_bias = (
        consumer is not None
        and consumer.op_type == _ATTENTION
        and consumer.domain == DOMAIN
        and name in consumer.inputs[_ATTENTION_BIASES:]
    )
    if is_bias and array.dtype.kind == "f":
        return "position_bias"
    if array.dtype.kind in "iu" and array.ndim and _counts_up(array):
        return "position_ids"
    return "const"


def _counts_up(array: np.ndarray) -> bool:
    """Whether every row along the last axis is 0, 1, 2, ... (at least two positions)."""
    length = array.shape[-1]
    if length < 2:
        return False
    return bool((array.reshape(-1, length) == np.arange(length)).all())


def _lower_triangular(array: np.ndarray) -> bool:
    """Whether the last two axes are square, the diagonal True and nothing above it: a causal
    mask, whole or within a window (GPT-Neo's local layers)."""
    if array.ndim < 2 or array.shape[-1] != array.shape[-2] or array.shape[-1] < 2:
        return False
    size = array.shape[-1]
    tables = array.reshape(-1, size, size)
    above = np.triu(np.ones((size, size), dtype=bool), 1)
    return bool(tables[:, np.eye(size, dtype=bool)].all() and not tables[:, above].any())
