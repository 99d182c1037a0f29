"""Literals in generated code are clean and exact."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mindconverter.codegen.literals import float_literal, literal


@pytest.mark.parametrize(
    "value,text",
    [
        (np.float32(1e-5), "1e-05"),
        (np.float32(0.1), "0.1"),
        (9.999999747378752e-06, "1e-05"),
        (0.0, "0.0"),
        (-2.5, "-2.5"),
        (math.inf, "math.inf"),
        (-math.inf, "-math.inf"),
        (math.nan, "math.nan"),
    ],
)
def test_floats_are_the_shortest_within_float32_precision(value, text):
    assert float_literal(value) == text
    if math.isfinite(value) and value:
        assert abs(float(text) - float(value)) <= abs(float(value)) * 2e-7


@pytest.mark.parametrize(
    "value,text",
    [
        (True, "True"),
        (np.bool_(False), "False"),
        (None, "None"),
        (np.int64(3), "3"),
        ((1,), "(1,)"),
        ((1, 2.5), "(1, 2.5)"),
        ([0, -1], "[0, -1]"),
        (slice(None, 3), ":3"),
        (slice(1, None, 2), "1::2"),
        (Ellipsis, "..."),
        (np.array([[1, 2]]), "[[1, 2]]"),
        ("a'b", '"a\'b"'),
    ],
)
def test_literals(value, text):
    assert literal(value) == text


def test_unknown_values_are_refused():
    with pytest.raises(TypeError):
        literal(object())
