"""Einsum with a repeated index in one operand (a diagonal, a trace) equals onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from tests.helpers import assert_matches, make_model


@pytest.mark.parametrize(
    "equation, shapes",
    [
        ("ii->i", [(4, 4)]),
        ("ii", [(3, 3)]),
        ("bii->bi", [(2, 3, 3)]),
        ("iij,jk->ik", [(3, 3, 4), (4, 2)]),
        ("ijij->ij", [(2, 3, 2, 3)]),
    ],
)
def test_einsum_diagonals(tmp_path, equation, shapes):
    names = [f"x{i}" for i in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], equation=equation)
    model = make_model(
        [node],
        [(n, np.float32, s) for n, s in zip(names, shapes)],
        [("y", np.float32, None)],
        opset=12,
    )
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in zip(names, shapes)}
    assert_matches(model, tmp_path, feeds)
