"""Tied weights are told by content: equal tensors share a key, different ones never do."""

from __future__ import annotations

import numpy as np

from mindconverter.codegen.ties import ContentKeys, fingerprint


def test_equal_tensors_share_a_key_whatever_their_layout():
    rng = np.random.default_rng(0)
    table = rng.standard_normal((50, 8)).astype(np.float32)
    copy_stored_transposed = np.ascontiguousarray(table.T)  # an exporter's [in, out] copy
    keys = ContentKeys()
    assert keys.key(table) == keys.key(copy_stored_transposed.T) == keys.key(table.copy())


def test_tensors_equal_at_every_sampled_value_but_one_are_told_apart():
    base = np.zeros(100_000, np.float32)
    base[:2] = (1.0, 2.0)
    other = base.copy()
    other[12_345] = 7.0  # not one of the sampled positions
    assert fingerprint(base) == fingerprint(other)
    keys = ContentKeys()
    first, second, third = keys.key(base), keys.key(other), keys.key(other.copy())
    assert first != second == third
    assert len({first, second, keys.key(np.flip(base).copy())}) == 3


def test_tensors_never_tied_by_value():
    keys = ContentKeys()
    assert keys.key(np.ones((4, 4), np.float32)) is None  # constant-filled (fresh LayerNorm)
    assert keys.key(np.array([3.0], np.float32)) is None
    assert keys.key(np.arange(6, dtype=np.int64)) is None
