"""Replaying a weight map's transform on a newer source tensor."""

from __future__ import annotations

import numpy as np
import pytest

from mindconverter.reweight.replay import CannotReplay, replay

RNG = np.random.default_rng(0)


def test_transposes_and_dtype_steps():
    source = RNG.standard_normal((3, 4)).astype(np.float32)
    got = replay("transpose(1, 0)", source, (4, 3), np.dtype(np.float32))
    np.testing.assert_array_equal(got, source.T)
    got = replay("Transpose(perm=[1, 0]); Cast(to=10)", source, (4, 3), np.dtype(np.float16))
    np.testing.assert_array_equal(got, source.T.astype(np.float16))
    assert (
        replay(
            "stored as int8 (MindSpore has no int4 type)", np.arange(4), (4,), np.dtype(np.int8)
        ).dtype
        == np.int8
    )


def test_a_reshape_takes_its_sizes_from_the_steps_after_it():
    source = RNG.standard_normal((6, 4)).astype(np.float32)
    got = replay("Reshape(); Transpose(perm=[0, 2, 1])", source, (2, 4, 3), np.dtype(np.float32))
    np.testing.assert_array_equal(got, source.reshape(2, 3, 4).transpose(0, 2, 1))
    conv1d = RNG.standard_normal((5, 2, 3)).astype(np.float32)
    got = replay(
        "reshape to (out, in/group, 1, k) as nn.Conv1d stores it",
        conv1d,
        (5, 2, 1, 3),
        np.dtype(np.float32),
    )
    np.testing.assert_array_equal(got, conv1d[:, :, None, :])


def test_index_and_gate_order_of_a_recurrent_layer():
    hidden = 3
    weights = RNG.standard_normal((1, 4 * hidden, 2)).astype(np.float32)
    got = replay("[0]; gates i,o,f,c -> i,f,c,o", weights, (4 * hidden, 2), np.dtype(np.float32))
    i, o, f, c = np.split(weights[0], 4)
    np.testing.assert_array_equal(got, np.concatenate([i, f, c, o]))
    biases = RNG.standard_normal((1, 8 * hidden)).astype(np.float32)
    got = replay("[0, 12:]; gates i,o,f,c -> i,f,c,o", biases, (4 * hidden,), np.dtype(np.float32))
    i, o, f, c = np.split(biases[0, 12:], 4)
    np.testing.assert_array_equal(got, np.concatenate([i, f, c, o]))


@pytest.mark.parametrize(
    "step", ["Mul()", "DequantizeLinear()", "gates a,b -> a,c", "ones (no scale in the source)"]
)
def test_steps_that_compute_values_cannot_be_replayed(step):
    with pytest.raises(CannotReplay):
        replay(step, np.ones((2, 2), np.float32), (2, 2), np.dtype(np.float32))
