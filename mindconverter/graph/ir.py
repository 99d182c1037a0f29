"""Stage 3: the intermediate representation the mappers read.

An :class:`IRGraph` is the simplified ONNX graph in a form that is easy to query: nodes in
topological order with decoded attributes, and for every value its shape, dtype and (for
constants) its array.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..errors import make_error
from ..graph.provenance import FoldRecord
from ..graph.specs import static_shapes


@dataclass
class IRNode:
    """One operator instance."""

    name: str
    op_type: str
    domain: str
    attrs: dict[str, Any]
    inputs: list[str]
    outputs: list[str]
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass
class IRGraph:
    """The whole model, ready for mapping."""

    nodes: list[IRNode]
    shapes: dict[str, tuple[int, ...]]
    dtypes: dict[str, np.dtype]
    constants: dict[str, np.ndarray]
    inputs: list[str]
    outputs: list[str]
    opset: int
    opsets: dict[str, int]
    producer: str
    fold_records: dict[str, FoldRecord]
    # Names of initializers as stored in the source file (before folding created new ones).
    source_initializers: set[str] = field(default_factory=set)

    @cached_property
    def used_values(self) -> frozenset[str]:
        """Names of values some node reads or the graph returns."""
        used = {name for node in self.nodes for name in node.inputs if name}
        return frozenset(used | set(self.outputs))

    def consumers(self) -> dict[str, list[IRNode]]:
        """Map each value name to the nodes that read it."""
        result: dict[str, list[IRNode]] = {}
        for node in self.nodes:
            for name in node.inputs:
                if name:
                    result.setdefault(name, []).append(node)
        return result


def _attribute_value(attr: onnx.AttributeProto) -> Any:
    if attr.type == onnx.AttributeProto.TENSOR:
        return numpy_helper.to_array(attr.t)
    if attr.type == onnx.AttributeProto.GRAPH:
        return attr.g
    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode("utf-8", errors="replace") for v in value]
    return value


def _dtype_of(elem_type: int) -> np.dtype | None:
    if not elem_type:
        return None
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, TypeError):
        return None


def topological_order(nodes: list[onnx.NodeProto], available: set[str]) -> list[onnx.NodeProto]:
    """Sort nodes so each comes after its producers; rejects cycles and undefined inputs."""
    producer = {}
    for node in nodes:
        for out in node.output:
            if out:
                producer[out] = node
    position = {id(node): index for index, node in enumerate(nodes)}
    pending = {id(node): 0 for node in nodes}
    readers: dict[int, list[onnx.NodeProto]] = {}
    for node in nodes:
        for name in set(node.input):
            if not name or name in available:
                continue
            if name not in producer:
                raise make_error(
                    "INVALID_GRAPH",
                    f"Node '{node.name or node.op_type}' reads '{name}', which nothing defines.",
                )
            pending[id(node)] += 1
            readers.setdefault(id(producer[name]), []).append(node)
    # Kahn's algorithm, always taking the earliest node of the file: a sorted file keeps its order.
    ready = [(position[id(node)], node) for node in nodes if pending[id(node)] == 0]
    heapq.heapify(ready)
    ordered = []
    while ready:
        _, node = heapq.heappop(ready)
        ordered.append(node)
        for reader in readers.get(id(node), []):
            pending[id(reader)] -= 1
            if pending[id(reader)] == 0:
                heapq.heappush(ready, (position[id(reader)], reader))
    if len(ordered) != len(nodes):
        stuck = next(node for node in nodes if pending[id(node)] > 0)
        raise make_error(
            "INVALID_GRAPH", f"The graph has a cycle through node '{stuck.name or stuck.op_type}'."
        )
    return ordered


def build_ir(
    model: onnx.ModelProto, fold_records: dict[str, FoldRecord], source_initializers: set[str]
) -> IRGraph:
    """Turn a simplified, shape-inferred model into an :class:`IRGraph`."""
    graph = model.graph
    constants = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    inputs = [inp.name for inp in graph.input if inp.name not in constants]
    outputs = [out.name for out in graph.output]
    if not outputs:
        raise make_error("INVALID_GRAPH", "The graph has no outputs.")
    ordered = topological_order(list(graph.node), set(inputs) | set(constants))
    for out in outputs:
        if out not in constants and out not in inputs and not any(out in n.output for n in ordered):
            raise make_error("INVALID_GRAPH", f"Graph output '{out}' is produced by no node.")
    dtypes: dict[str, np.dtype] = {}
    for info in list(graph.input) + list(graph.value_info) + list(graph.output):
        dtype = _dtype_of(info.type.tensor_type.elem_type)
        if dtype is not None:
            dtypes[info.name] = dtype
    for name, array in constants.items():
        dtypes[name] = array.dtype
    nodes = []
    for index, node in enumerate(ordered):
        nodes.append(
            IRNode(
                name=node.name or f"{node.op_type}_{index}",
                op_type=node.op_type,
                domain=node.domain if node.domain != "ai.onnx" else "",
                attrs={attr.name: _attribute_value(attr) for attr in node.attribute},
                inputs=list(node.input),
                outputs=list(node.output),
                metadata={entry.key: entry.value for entry in node.metadata_props},
            )
        )
    opsets = {entry.domain or "": entry.version for entry in model.opset_import}
    return IRGraph(
        nodes=nodes,
        shapes=static_shapes(model),
        dtypes=dtypes,
        constants=constants,
        inputs=inputs,
        outputs=outputs,
        opset=opsets.get("", opsets.get("ai.onnx", 0)),
        opsets=opsets,
        producer=f"{model.producer_name} {model.producer_version}".strip(),
        fold_records=fold_records,
        source_initializers=source_initializers,
    )
