"""The helpers scripts define themselves are real modules: their numbers, and the source a
script inlines (the definitions without the module's docstring and imports)."""

from __future__ import annotations

import math
from importlib import resources

import numpy as np
import pytest

from mindconverter.codegen.helpers import helper_source

ms = pytest.importorskip("mindspore")

HELPERS = sorted(
    path.name[:-3]
    for path in resources.files("mindconverter.codegen.helpers").iterdir()
    if path.name.endswith(".py") and path.name != "__init__.py"
)


@pytest.mark.parametrize("name", HELPERS)
def test_a_script_inlines_the_definitions_alone(name):
    source = helper_source(name)
    assert source.startswith("\n\n") and source.lstrip().startswith(("def ", "class ", "#"))
    assert not any(line.startswith(("import ", "from ")) for line in source.splitlines())
    compile(source, name, "exec")  # the inlined text is Python on its own


def test_rms_norm_is_the_llama_formula():
    from mindconverter.codegen.helpers.rms_norm import RMSNorm

    x = np.random.default_rng(0).standard_normal((2, 3, 8)).astype(np.float32)
    norm = RMSNorm(8, eps=1e-6)
    expected = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(norm(ms.Tensor(x)).asnumpy(), expected, rtol=1e-5, atol=1e-6)


def test_masked_softmax_gives_zeros_for_a_fully_masked_row():
    from mindconverter.codegen.helpers.masked_softmax import masked_softmax

    scores = np.random.default_rng(1).standard_normal((1, 1, 2, 3)).astype(np.float32)
    keep = np.array([[[[True, False, True], [False, False, False]]]])
    probs = masked_softmax(ms.Tensor(scores), ms.Tensor(keep)).asnumpy()
    kept = np.exp(scores[0, 0, 0, [0, 2]])
    np.testing.assert_allclose(probs[0, 0, 0, [0, 2]], kept / kept.sum(), rtol=1e-5)
    assert probs[0, 0, 0, 1] == 0 and not probs[0, 0, 1].any()
    float_mask = np.where(keep, 0.0, -math.inf).astype(np.float32)
    again = masked_softmax(ms.Tensor(scores), ms.Tensor(float_mask)).asnumpy()
    np.testing.assert_allclose(again, probs, rtol=1e-6)


def test_rotary_helpers_turn_halves_and_interleaved_pairs():
    from mindconverter.codegen.helpers.apply_partial_interleaved_rotary_pos_emb import (
        apply_partial_interleaved_rotary_pos_emb,
    )
    from mindconverter.codegen.helpers.apply_rotary_pos_emb import apply_rotary_pos_emb

    rng = np.random.default_rng(2)
    q, k = (rng.standard_normal((1, 2, 3, 4)).astype(np.float32) for _ in range(2))
    cos, sin = (rng.standard_normal((1, 1, 3, 4)).astype(np.float32) for _ in range(2))

    def half(x):
        return np.concatenate((-x[..., 2:], x[..., :2]), axis=-1)

    got_q, got_k = apply_rotary_pos_emb(*(ms.Tensor(a) for a in (q, k, cos, sin)))
    np.testing.assert_allclose(got_q.asnumpy(), q * cos + half(q) * sin, rtol=1e-5)
    np.testing.assert_allclose(got_k.asnumpy(), k * cos + half(k) * sin, rtol=1e-5)

    def pairs(x):
        return np.stack((-x[..., 1::2], x[..., ::2]), axis=-1).reshape(x.shape)

    cos2, sin2 = cos[..., :2], sin[..., :2]
    got_q, _ = apply_partial_interleaved_rotary_pos_emb(
        *(ms.Tensor(a) for a in (q, k, cos2, sin2)), 2
    )
    turned = q[..., :2] * cos2 + pairs(q[..., :2]) * sin2
    expected = np.concatenate((turned, q[..., 2:]), axis=-1)
    np.testing.assert_allclose(got_q.asnumpy(), expected, rtol=1e-5)


def test_rotary_tables_without_the_heads_axis_get_it_from_unsqueeze_dim():
    from mindconverter.codegen.helpers.apply_rotary_pos_emb_unsqueezed import (
        apply_rotary_pos_emb,
    )

    rng = np.random.default_rng(3)
    q, k = (rng.standard_normal((2, 2, 3, 4)).astype(np.float32) for _ in range(2))
    cos, sin = (rng.standard_normal((2, 3, 4)).astype(np.float32) for _ in range(2))

    def half(x):
        return np.concatenate((-x[..., 2:], x[..., :2]), axis=-1)

    got_q, got_k = apply_rotary_pos_emb(*(ms.Tensor(a) for a in (q, k, cos, sin)), 1)
    c, s = cos[:, None], sin[:, None]
    np.testing.assert_allclose(got_q.asnumpy(), q * c + half(q) * s, rtol=1e-5)
    np.testing.assert_allclose(got_k.asnumpy(), k * c + half(k) * s, rtol=1e-5)
    plain_q, _ = apply_rotary_pos_emb(*(ms.Tensor(a) for a in (q, k, c, s)))
    np.testing.assert_allclose(plain_q.asnumpy(), q * c + half(q) * s, rtol=1e-5)


@pytest.mark.parametrize(("shifts", "dims"), [((-2, -2), (1, 2)), ((3,), (-1,)), ((5, 0), (1, 2))])
def test_roll_turns_axes_as_numpy_does(shifts, dims):
    from mindconverter.codegen.helpers.roll import roll

    x = np.arange(2 * 4 * 6, dtype=np.float32).reshape(2, 4, 6)
    turned = roll(ms.Tensor(x), shifts, dims).asnumpy()
    np.testing.assert_array_equal(turned, np.roll(x, shifts, dims))
