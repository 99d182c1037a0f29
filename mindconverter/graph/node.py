"""A node as mappers read it (decoded attributes), and the topological order of ONNX nodes."""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

import onnx
from onnx import helper, numpy_helper

from ..errors import make_error


@dataclass
class Node:
    """One operator instance."""

    name: str
    op_type: str
    domain: str
    attrs: dict[str, Any]
    inputs: list[str]
    outputs: list[str]
    metadata: dict[str, str] = field(default_factory=dict)


def attribute_value(attr: onnx.AttributeProto) -> Any:
    """An attribute as a Python value (tensors as numpy arrays, strings decoded)."""
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


def node_attribute(node: onnx.NodeProto, name: str, default: Any = None) -> Any:
    """The value of ``node``'s attribute ``name`` as onnx.helper reads it, else ``default``."""
    for attribute in node.attribute:
        if attribute.name == name:
            return helper.get_attribute_value(attribute)
    return default


def node_axes(node: onnx.NodeProto, constant) -> list[int] | None:
    """The axes a Squeeze or Unsqueeze takes: its second input from opset 13 (its value read
    with ``constant``), else its ``axes`` attribute; None when unknown."""
    if len(node.input) > 1:
        value = constant(node.input[1])
        return None if value is None else [int(axis) for axis in value.reshape(-1)]
    axes = node_attribute(node, "axes")
    return None if axes is None else [int(axis) for axis in axes]


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
