"""The operator domain of nodes the converter itself creates (lifted layers, ``Dims``)."""

from __future__ import annotations

import onnx
from onnx import helper

DOMAIN = "ai.mindconverter"
DOMAIN_VERSION = 1


def declare_internal_domain(model: onnx.ModelProto) -> None:
    """Import the internal domain into ``model`` (once)."""
    if not any(entry.domain == DOMAIN for entry in model.opset_import):
        model.opset_import.append(helper.make_opsetid(DOMAIN, DOMAIN_VERSION))
