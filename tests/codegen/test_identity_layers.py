"""A layer some instances skip: the text as it reads with the layer passing its input through."""

from __future__ import annotations

import pytest

from mindconverter.codegen.identity_layers import identity_layer, skip_identity


@pytest.mark.parametrize(
    ("body", "skipped"),
    [
        (["y = self.norm(x)", "z = f(y, x)"], ["z = f(x, x)"]),
        (["x = self.norm(x)", "x = f(x)"], ["x = f(x)"]),
        (["y = self.norm(x)", "y = f(y)", "z = g(y)"], ["y = f(x)", "z = g(y)"]),
        (["y = self.norm(x)", "x = f(x)", "z = g(y)"], None),  # x bound again, y still read
        (["y = self.norm(x, m)", "z = f(y)"], None),  # two inputs: no identity
        (["y = self.norm(x)", "z = self.norm(y)"], None),  # called twice
    ],
)
def test_skip_identity_reads_the_input_until_the_result_is_bound_again(body, skipped):
    assert skip_identity(body, "norm", ["z"]) == skipped


@pytest.mark.parametrize(
    ("earlier", "held", "found"),
    [
        ([{"attn", "norm"}], {"attn"}, ("norm", True)),
        ([{"attn"}], {"attn", "norm"}, ("norm", False)),
        ([{"attn", "norm"}, {"attn"}], {"attn"}, ("norm", True)),  # an identity merged before
        ([{"attn", "norm"}], {"attn", "drop"}, None),  # one layer more, one less
        ([{"attn", "a", "b"}], {"attn"}, None),  # two layers
    ],
)
def test_identity_layer_is_the_one_layer_the_texts_differ_by(earlier, held, found):
    assert identity_layer(earlier, held) == found
