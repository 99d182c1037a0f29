"""Pass: compute bfloat16 operators in float32 where MindSpore has no bfloat16 kernel.

MindSpore's CPU backend holds bfloat16 tensors but computes few operators on them (arithmetic,
casts and data movement; no matmul, activation, reduction or comparison). Every other operator
reading or writing bfloat16 gets its bfloat16 inputs cast to float32 and its results cast back
to bfloat16, so each result is rounded to bfloat16 as the source's is. Weights stay bfloat16 in
the checkpoint (the cast is in the network). The report says which operators run this way.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ..graph import Graph
from ..graph.graph import claim_name
from ..graph.half_precision import widen_half_attributes
from .context import PassContext

# Operators MindSpore's CPU kernels compute on bfloat16 (measured with MindSpore 2.x).
NATIVE_BFLOAT16 = frozenset(
    {
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Neg",
        "Identity",
        "Cast",
        "CastLike",
        "Reshape",
        "Flatten",
        "Transpose",
        "Squeeze",
        "Unsqueeze",
        "Concat",
        "Split",
        "Slice",
        "Expand",
        "Shape",
        "Size",
    }
)


def _is_bfloat16(graph: Graph, name: str) -> bool:
    dtype = graph.dtypes.get(name) if name else None
    return dtype is not None and dtype.name == "bfloat16"


def run(graph: Graph, context: PassContext) -> bool:
    """Wrap every bfloat16 operator without a MindSpore kernel in casts to and from float32."""
    body = graph.model.graph
    values, node_names = graph.value_names(), graph.node_names()
    widened: dict[str, str] = {}  # bfloat16 value read -> its float32 copy
    computed: dict[str, str] = {}  # bfloat16 result -> the float32 value computed first
    ops_changed: set[str] = set()
    constants: set[str] = set()  # widened copies of constants (initializers, typed already)
    new_nodes: list[onnx.NodeProto] = []
    for node in body.node:
        reads = [name for name in node.input if _is_bfloat16(graph, name)]
        writes = [name for name in node.output if _is_bfloat16(graph, name)]
        keep = node.op_type in NATIVE_BFLOAT16 or node.domain not in ("", "ai.onnx")
        if keep or not (reads or writes) or any(a.type == a.GRAPH for a in node.attribute):
            new_nodes.append(node)
            continue
        ops_changed.add(node.op_type)
        stem = node.name or node.op_type
        for index, name in enumerate(node.input):
            if name not in reads:
                continue
            if name not in widened:
                widened[name] = claim_name(values, f"{name}_float32")
                constant = graph.constants.get(name)
                if constant is not None and name not in graph.source_parameters:
                    # an exporter's constant (a pad value, a mask): widened where it is
                    body.initializer.append(
                        numpy_helper.from_array(constant.astype(np.float32), widened[name])
                    )
                    node.input[index] = widened[name]
                    constants.add(widened[name])
                    continue
                new_nodes.append(
                    helper.make_node(
                        "Cast",
                        [name],
                        [widened[name]],
                        name=claim_name(node_names, f"{stem}/to_float32"),
                        to=TensorProto.FLOAT,
                    )
                )
            node.input[index] = widened[name]
        # a bfloat16 ``to``/``dtype`` attribute or tensor value becomes float32 too
        widen_half_attributes(node, frozenset({TensorProto.BFLOAT16}))
        new_nodes.append(node)
        for index, name in enumerate(node.output):
            if name not in writes:
                continue
            computed[name] = claim_name(values, f"{name}_float32")
            node.output[index] = computed[name]
            new_nodes.append(
                helper.make_node(
                    "Cast",
                    [computed[name]],
                    [name],
                    name=claim_name(node_names, f"{stem}/to_bfloat16"),
                    to=TensorProto.BFLOAT16,
                )
            )
    if not ops_changed:
        return False
    del body.node[:]
    body.node.extend(new_nodes)
    copies = {**widened, **computed}
    _add_float32_types(graph, {k: v for k, v in copies.items() if v not in constants})
    graph.edited()
    context.notes.append(
        "MindSpore has no bfloat16 kernel for "
        + ", ".join(sorted(ops_changed))
        + ": these operators compute in float32 and round their results to bfloat16 (ops.cast "
        "before and after); the weights stay bfloat16."
    )
    context.say(f"NOTE: {context.notes[-1]}")
    return True


def _add_float32_types(graph: Graph, copies: dict[str, str]) -> None:
    """Type records for the float32 copies: each has its bfloat16 value's shape."""
    body = graph.model.graph
    records = {info.name: info for info in list(body.value_info) + list(body.input)}
    records.update({info.name: info for info in body.output})
    for name, copy in copies.items():
        dims = graph.symbolic_shapes.get(name)
        info = helper.make_tensor_value_info(
            copy, TensorProto.FLOAT, list(dims) if dims is not None else None
        )
        if dims is None and name in records:
            info.type.tensor_type.shape.CopyFrom(records[name].type.tensor_type.shape)
        body.value_info.append(info)
