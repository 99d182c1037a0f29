"""Pass (on request): compute a float16/bfloat16 model in float32.

Weights, constants, inputs, outputs and casts to a half-precision type become float32, so the
generated network runs in float32 (values are widened exactly; results differ from the source
only by the source's own rounding). Mixed-precision models (a float32 graph with casts to half
precision) lose those casts' rounding.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from ..graph import Graph
from ..graph.half_precision import HALF_TYPES, widen_half_attributes
from ..graph.subgraphs import has_subgraph
from ..graph.weight_store import WeightStore, is_held
from .context import PassContext


def run(graph: Graph, context: PassContext) -> bool:
    """Widen every half-precision tensor type of the graph to float32 when asked to."""
    if not context.float32:
        return False
    changed = _widen_graph(graph.model.graph, graph.store)
    if changed:
        graph.edited()
    return changed


def _widen_graph(body: onnx.GraphProto, store: WeightStore | None = None) -> bool:
    changed = False
    for index, init in enumerate(body.initializer):
        if init.data_type in HALF_TYPES and is_held(init):
            widened = store.put(init.name, store.array(init.name).astype(np.float32))
            body.initializer[index].CopyFrom(widened)
            changed = True
        elif init.data_type in HALF_TYPES:
            widened = numpy_helper.from_array(
                numpy_helper.to_array(init).astype(np.float32), init.name
            )
            body.initializer[index].CopyFrom(widened)
            changed = True
    for info in list(body.input) + list(body.output) + list(body.value_info):
        tensor_type = info.type.tensor_type
        if tensor_type.elem_type in HALF_TYPES:
            tensor_type.elem_type = TensorProto.FLOAT
            changed = True
    for node in body.node:
        changed |= widen_half_attributes(node)
        if has_subgraph(node):
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    changed |= _widen_graph(attr.g)
                elif attr.type == onnx.AttributeProto.GRAPHS:
                    for sub in attr.graphs:
                        changed |= _widen_graph(sub)
    return changed
