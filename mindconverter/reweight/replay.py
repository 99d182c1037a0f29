"""Replay a weight map's recorded steps on a newer source tensor.

The steps are typed (``mindconverter.graph.weight_steps``): layout changes (transpose, reshape,
index, gate reorder) and dtype changes are replayed exactly; a BatchNorm folded by the exporter
is recomputed from the state dict's convolution and BatchNorm tensors (see ``reconvert``);
steps that compute other values (a folded ``Mul``, ``DequantizeLinear``) cannot be replayed.
Weight maps written before ``steps`` existed are read from their ``transform`` prose.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..graph.weight_steps import (
    Broadcast,
    CannotReplay,
    Index,
    Reshape,
    Transpose,
    WeightStep,
    parse_steps,
)


def _shapes_produced(steps: Sequence[WeightStep], shape: tuple[int, ...]) -> list:
    """The shape each step must produce, worked out from the last step back (None: a
    reshape before it decides)."""
    produced: list[tuple[int, ...] | None] = [None] * len(steps)
    wanted: tuple[int, ...] | None = tuple(shape)
    for index in range(len(steps) - 1, -1, -1):
        produced[index] = wanted
        step = steps[index]
        if isinstance(step, Transpose) and wanted is not None:
            wanted = step.shape_before(wanted)
        elif isinstance(step, (Reshape, Broadcast, Index)):
            wanted = None
    return produced


def replay(
    steps: str | Sequence[WeightStep],
    source: np.ndarray,
    shape: tuple[int, ...],
    dtype: np.dtype,
) -> np.ndarray:
    """``source`` put through ``steps`` (typed, or an old weight map's prose), ending in
    ``shape`` and ``dtype`` (the converted weight's). Raises CannotReplay for a step that
    computes values."""
    steps = parse_steps(steps) if isinstance(steps, str) else list(steps)
    array = np.asarray(source)
    for step, target in zip(steps, _shapes_produced(steps, shape)):
        array = step.apply(array, target)
    if array.shape != tuple(shape) and array.size == int(np.prod(shape)):
        array = array.reshape(shape)
    return np.ascontiguousarray(array.astype(dtype, copy=False))


__all__ = ["CannotReplay", "replay"]
