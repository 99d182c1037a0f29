"""Head splits and merges in one line, as attention code is written by hand.

Exporters spell ``q.view(b, s, heads, d).swapaxes(1, 2)`` as a Reshape node and a Transpose
node. When a transpose swaps two axes it is written as ``x.swapaxes(a, b)``, and when it reads a
reshape nothing else reads (or a reshape reads such a transpose) in the same block, the two
become one statement: ``ops.reshape(query, shape).swapaxes(1, 2)``. The numbers do not change:
the same two operators run in the same order.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..graph import Graph
from ..graph.module_tree import Block
from ..mappers.base import Call, Input, Lit, MappedNode, Method, Temp


def fold_head_reshapes(graph: Graph, tree: Block) -> None:
    """Rewrite the mapped transposes and reshapes of ``tree`` in place."""
    parents = _parents(tree)
    mapped: list[MappedNode] = tree.nodes()
    producer = {out: item for item in mapped for out in item.node.outputs if out}
    readers: dict[str, int] = {name: 1 for name in graph.outputs}
    for item in mapped:
        for name in item.node.inputs:
            if name:
                readers[name] = readers.get(name, 0) + 1
    for item in mapped:
        if item.converted and item.node.op_type == "Transpose":
            swap = _swapped_axes(item.result)
            if swap is not None:
                item.result = Method(item.result.args[0], "swapaxes", [Lit(swap[0]), Lit(swap[1])])
    for item in mapped:
        if not item.converted or item.node.op_type not in ("Transpose", "Reshape"):
            continue
        source = producer.get(item.node.inputs[0]) if item.node.inputs else None
        if (
            source is None
            or not source.converted
            or readers.get(item.node.inputs[0], 0) != 1
            or parents.get(id(source)) is not parents.get(id(item))
            or _has_temp(source.result)
        ):
            continue
        if item.node.op_type == "Transpose" and source.node.op_type == "Reshape":
            if (
                isinstance(item.result, Method)
                and item.result.value == Input(0)
                and _is_call(source.result, "ops.reshape")
            ):
                item.result = replace(item.result, value=source.result)
                item.node = replace(item.node, inputs=list(source.node.inputs))
        elif item.node.op_type == "Reshape" and source.node.op_type == "Transpose":
            if (
                isinstance(source.result, Method)
                and _is_call(item.result, "ops.reshape")
                and item.result.args[0] == Input(0)
                and _reads_of_first_input(item.result) == 1  # sizes read from it stay right
                and len(source.node.inputs) == 1
            ):
                item.result = replace(item.result, args=[source.result, *item.result.args[1:]])
                item.node = replace(
                    item.node, inputs=[source.node.inputs[0], *item.node.inputs[1:]]
                )


def _parents(tree: Block) -> dict[int, Block]:
    found: dict[int, Block] = {}
    stack = [tree]
    while stack:
        block = stack.pop()
        for item in block.items:
            if isinstance(item, Block):
                stack.append(item)
            else:
                found[id(item)] = block
    return found


def _swapped_axes(result: Any) -> tuple[int, int] | None:
    """``(1, 2)`` for ``ops.transpose(x, (0, 2, 1, 3))``: a permutation swapping two axes."""
    if not _is_call(result, "ops.transpose") or len(result.args) != 2:
        return None
    perm = result.args[1]
    if not isinstance(perm, Lit) or not isinstance(perm.value, tuple):
        return None
    moved = [axis for axis, target in enumerate(perm.value) if axis != target]
    if len(moved) != 2 or perm.value[moved[0]] != moved[1]:
        return None
    return moved[0], moved[1]


def _is_call(value: Any, func: str) -> bool:
    return isinstance(value, Call) and value.func == func and not value.kwargs


def _reads_of_first_input(value: Any) -> int:
    if value == Input(0):
        return 1
    if isinstance(value, (list, tuple)):
        return sum(_reads_of_first_input(v) for v in value)
    if isinstance(value, dict):
        return sum(_reads_of_first_input(v) for v in value.values())
    if hasattr(value, "__dataclass_fields__") and not isinstance(value, Input):
        return sum(_reads_of_first_input(getattr(value, f)) for f in value.__dataclass_fields__)
    return 0


def _has_temp(value: Any) -> bool:
    if isinstance(value, Temp):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_temp(v) for v in value)
    if hasattr(value, "__dataclass_fields__"):
        return any(_has_temp(getattr(value, f)) for f in value.__dataclass_fields__)
    return False
