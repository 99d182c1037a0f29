"""A size computed as a one-element tuple and only ever read at index 0 is that one number.

A ``Slice`` whose bound is computed (``x[:, :n]``) reads its ``ends`` input, a one-element
vector, at position 0; the shape arithmetic feeding it comes out as a tuple ``(n,)``. Where
every reader takes element 0, the value is written as the number itself and the readers use
it directly: ``length = min(a, b)`` and ``x[:, :length]``, not ``shape = (min(a, b),)`` and
``x[:, : shape[0]]``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..graph import Graph
from ..mappers.base import Input, Item, MappedNode, expression_parts


def unpack_single_sizes(graph: Graph, mapped: list[MappedNode]) -> None:
    """Rewrite, in place, one-element size tuples read only at index 0 as their element."""
    singles = {
        item.node.outputs[0]: item
        for item in mapped
        if item.converted
        and len(item.node.outputs) == 1
        and isinstance(item.result, tuple)
        and len(item.result) == 1
        and item.node.outputs[0] not in graph.outputs
    }
    if not singles:
        return
    readers: dict[str, list[MappedNode]] = {name: [] for name in singles}
    for item in mapped:
        for name in set(item.node.inputs) & singles.keys():
            readers[name].append(item)
    consumed = {name for name, _ in _graph_readers(graph, singles)}
    for name, producer in singles.items():
        users = readers[name]
        if not users or name in consumed or not all(_only_first(u, name) for u in users):
            continue
        producer.result = producer.result[0]
        for user in users:
            user.result = _first_as_value(user.result, _positions(user, name))


def _graph_readers(graph: Graph, singles: dict) -> list[tuple[str, Any]]:
    """Readers of the values that are not mapped expressions (nested graphs): they keep the
    tuple."""
    found = []
    for name in singles:
        for node in graph.consumer_nodes.get(name, []):
            if node.op_type in ("If", "Loop", "Scan"):
                found.append((name, node))
    return found


def _positions(user: MappedNode, name: str) -> set[int]:
    return {index for index, value in enumerate(user.node.inputs) if value == name}


def _only_first(user: MappedNode, name: str) -> bool:
    """Whether ``user`` reads ``name`` only as ``Item(Input(i), 0)``."""
    if not user.converted or user.result is None:
        return False
    positions = _positions(user, name)
    direct = reads = 0
    for part in expression_parts(user.result, slices=True):
        if isinstance(part, Item) and part.index == 0 and _reads(part.value, positions):
            direct += 1
        elif _reads(part, positions):
            reads += 1
    return direct > 0 and reads == direct


def _reads(part: Any, positions: set[int]) -> bool:
    return isinstance(part, Input) and part.index in positions


def _first_as_value(value: Any, positions: set[int]) -> Any:
    """``value`` with each ``Item(Input(i), 0)`` over ``positions`` written as ``Input(i)``."""
    if isinstance(value, Item) and value.index == 0 and _reads(value.value, positions):
        return value.value
    if isinstance(value, slice):
        return slice(
            *(_first_as_value(v, positions) for v in (value.start, value.stop, value.step))
        )
    if isinstance(value, list):
        return [_first_as_value(v, positions) for v in value]
    if isinstance(value, tuple):
        return tuple(_first_as_value(v, positions) for v in value)
    if isinstance(value, dict):
        return {k: _first_as_value(v, positions) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: _first_as_value(getattr(value, f.name), positions)
            for f in dataclasses.fields(value)
            if f.init
        }
        return dataclasses.replace(value, **changes)
    return value
