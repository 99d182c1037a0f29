"""Random arrays and one-node models shared by the mapper tests."""

from __future__ import annotations

import numpy as np
from onnx import helper

from tests.helpers import make_model

F = np.float32
I64 = np.int64
rng = np.random.default_rng(42)


def randn(*shape) -> np.ndarray:
    """Standard-normal float32 values of ``shape``."""
    return rng.standard_normal(shape).astype(F)


def model_of(op, inputs, outputs, inits=None, opset=17, **attrs):
    """A model of one ``op`` node reading ``inputs`` then ``inits`` (names in order)."""
    node = helper.make_node(
        op,
        [name for name, _, _ in inputs] + list(inits or {}),
        [name for name, _, _ in outputs],
        **attrs,
    )
    return make_model([node], inputs, outputs, inits, opset=opset)
