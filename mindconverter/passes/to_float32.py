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
from ..graph.subgraphs import has_subgraph
from ..graph.weight_store import WeightStore, is_held
from .context import PassContext

_HALF = {TensorProto.FLOAT16, TensorProto.BFLOAT16}


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
        if init.data_type in _HALF and is_held(init):
            widened = store.put(init.name, store.array(init.name).astype(np.float32))
            body.initializer[index].CopyFrom(widened)
            changed = True
        elif init.data_type in _HALF:
            widened = numpy_helper.from_array(
                numpy_helper.to_array(init).astype(np.float32), init.name
            )
            body.initializer[index].CopyFrom(widened)
            changed = True
    for info in list(body.input) + list(body.output) + list(body.value_info):
        tensor_type = info.type.tensor_type
        if tensor_type.elem_type in _HALF:
            tensor_type.elem_type = TensorProto.FLOAT
            changed = True
    for node in body.node:
        changed |= _widen_node(node)
        if has_subgraph(node):
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    changed |= _widen_graph(attr.g)
                elif attr.type == onnx.AttributeProto.GRAPHS:
                    for sub in attr.graphs:
                        changed |= _widen_graph(sub)
    return changed


def _widen_node(node: onnx.NodeProto) -> bool:
    changed = False
    for attr in node.attribute:
        if (
            attr.name in ("to", "dtype")
            and attr.type == onnx.AttributeProto.INT
            and attr.i in _HALF
        ):
            attr.i = TensorProto.FLOAT
            changed = True
        elif attr.type == onnx.AttributeProto.TENSOR and attr.t.data_type in _HALF:
            widened = numpy_helper.from_array(numpy_helper.to_array(attr.t).astype(np.float32))
            attr.t.CopyFrom(widened)
            changed = True
    return changed
