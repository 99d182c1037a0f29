"""Pass: keep a copy of the model as the user gave it, to verify the conversion against."""

from __future__ import annotations

import onnx

from ..graph import Graph
from .context import PassContext


def run(graph: Graph, context: PassContext) -> bool:
    """Copy the model into ``context.reference`` when verification will need it."""
    if context.keep_reference:
        context.reference = onnx.ModelProto()
        context.reference.CopyFrom(graph.model)
    return False
