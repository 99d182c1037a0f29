"""Weights of tensor types MindSpore cannot hold, stored in their containers (the table is in
``graph/container_types.py``)."""

from __future__ import annotations

from ..graph.container_types import container_dtype, widened
from ..graph.weight_steps import Cast
from ..mappers.base import Weight

__all__ = ["container_dtype", "widened", "widened_weight"]


def widened_weight(weight: Weight) -> Weight:
    """``weight`` in a type MindSpore has; the weight map records the widening."""
    wider = container_dtype(weight.array.dtype)
    if wider is None:
        return weight
    step = f"stored as {wider.name} (MindSpore has no {weight.array.dtype.name} type)"
    transform = "; ".join(filter(None, [weight.transform, step]))
    steps = (*weight.steps, Cast(wider.name, note=step)) if weight.steps else ()
    return Weight(weight.array.astype(wider), weight.source, transform, steps)
