"""Names of the frozen constants a script holds, by what the network does with them.

An exporter folds buffers and tables computed from the configuration into constants with
generated names (``onnx::Add_123``, ``constant_3_output_0``) that never reach the script. The
attribute takes the role instead: ``position_ids`` for a table of positions (HF's buffer of that
name), ``position_bias`` for a bias added to attention scores (Swin's relative position bias),
``causal_mask`` for a table that lets each position see itself and nothing after it (boolean,
or additive: 0 to keep, one large negative number or -inf to hide; with a static KV cache the
keys run ahead of the queries by the cached length), ``mask`` for another such table, else
``const``.
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
    allowed = _allowed(array)
    if allowed is not None:
        return "causal_mask" if _lower_triangular(allowed) else "mask"
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


def _allowed(array: np.ndarray) -> np.ndarray | None:
    """Where a mask lets attention through: a boolean table as it is; a float table of zeros
    (kept) and one number of -100 or less, or -inf (hidden), as booleans; else None."""
    if array.dtype == np.bool_:
        return array
    if array.dtype.kind != "f" or array.ndim < 2:
        return None
    hidden = array != 0
    values = np.unique(array[hidden])
    if values.size != 1 or not values[0] <= _HIDDEN_AT_MOST:
        return None
    return ~hidden


# Swin's shifted windows hide with -100; HF's extended masks with the dtype's minimum or -inf
_HIDDEN_AT_MOST = -100.0


def _lower_triangular(array: np.ndarray) -> bool:
    """Whether each query (the second last axis) sees its own position and nothing after it: a
    causal mask, whole or within a window (GPT-Neo's local layers). With more keys than
    queries (a cache ahead of them) query ``i`` sits at key ``i + keys - queries``."""
    if array.ndim < 2 or array.shape[-1] < 2 or array.shape[-1] < array.shape[-2]:
        return False
    queries, keys = array.shape[-2:]
    offset = keys - queries
    tables = array.reshape(-1, queries, keys)
    own = np.eye(queries, keys, offset, dtype=bool)
    after = np.triu(np.ones((queries, keys), dtype=bool), offset + 1)
    return bool(tables[:, own].all() and not tables[:, after].any())
