"""Which trainable tensors are the same tensor (tied weights), told by content.

A weight is identified by a fingerprint (shape, dtype and a sample of values spread over the
whole tensor, read without copying it); tensors with equal fingerprints are compared in full,
so two weights share a key only when every value is equal. Hashing every weight in full would
read (and, for a transposed view, copy) all of them once more.
"""

from __future__ import annotations

import numpy as np

from ..graph.container_types import is_floating
from ..graph.weight_store import release_pages

# Values sampled per tensor for its fingerprint.
SAMPLE_SIZE = 4096


def fingerprint(array: np.ndarray) -> tuple | None:
    """Shape, dtype and sampled values; None for tensors never tied by value (not float, a
    single value, or constant-filled like fresh LayerNorm ones and zero biases)."""
    if not is_floating(array.dtype) or array.size < 2:
        return None
    first, last = array.flat[0], array.flat[-1]
    if first == last and array.min() == array.max():
        release_pages(array)
        return None
    positions = np.linspace(0, array.size - 1, num=min(array.size, SAMPLE_SIZE)).astype(np.intp)
    sample = array.flat[positions].tobytes()
    release_pages(array)  # sampling touched pages all over a memory-mapped weight
    return (array.shape, array.dtype.str, sample)


class ContentKeys:
    """Gives equal tensors the same key and different tensors different keys."""

    def __init__(self) -> None:
        self._seen: dict[tuple, list[tuple[np.ndarray, tuple]]] = {}
        self._count = 0

    def key(self, array: np.ndarray) -> tuple | None:
        """The key of ``array``'s content (None when it is never tied, see :func:`fingerprint`)."""
        sample = fingerprint(array)
        if sample is None:
            return None
        candidates = self._seen.setdefault(sample, [])
        for seen, key in candidates:
            if seen is array or _equal(seen, array):
                return key
        self._count += 1
        key = (*sample[:2], self._count)
        candidates.append((array, key))
        return key


def _equal(first: np.ndarray, second: np.ndarray) -> bool:
    same = bool(np.array_equal(first, second))
    release_pages(first)  # memory-mapped weights: the pages go again after the comparison
    release_pages(second)
    return same
