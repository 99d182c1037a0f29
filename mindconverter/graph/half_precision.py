"""Half-precision (float16, bfloat16) types in node attributes."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

HALF_TYPES = frozenset({TensorProto.FLOAT16, TensorProto.BFLOAT16})
# every floating-point element type a model's tensors come in
FLOAT_TYPES = frozenset({TensorProto.FLOAT, TensorProto.DOUBLE, *HALF_TYPES})


def widen_half_attributes(node: onnx.NodeProto, types: frozenset[int] = HALF_TYPES) -> bool:
    """``to``/``dtype`` attributes and tensor values of ``node`` in ``types`` made float32."""
    changed = False
    for attr in node.attribute:
        if (
            attr.name in ("to", "dtype")
            and attr.type == onnx.AttributeProto.INT
            and attr.i in types
        ):
            attr.i = TensorProto.FLOAT
            changed = True
        elif attr.type == onnx.AttributeProto.TENSOR and attr.t.data_type in types:
            widened = numpy_helper.from_array(numpy_helper.to_array(attr.t).astype(np.float32))
            attr.t.CopyFrom(widened)
            changed = True
    return changed
