"""Head splits and merges in one line, as attention code is written by hand.

Exporters spell ``q.view(b, s, heads, d).swapaxes(1, 2)`` as a Reshape node and a Transpose
node. When a transpose swaps two axes it is written as ``x.swapaxes(a, b)``, and when it reads a
reshape nothing else reads (or a reshape reads such a transpose) in the same block, the two
become one statement: ``ops.reshape(query, shape).swapaxes(1, 2)``. The numbers do not change:
the same two operators run in the same order.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from typing import Any

from ..graph import Graph
from ..graph.internal_domain import DOMAIN
from ..graph.module_tree import Block
from ..mappers.base import (
    Call,
    Cell,
    Input,
    Item,
    Lit,
    MappedNode,
    Method,
    Temp,
    Weight,
    expression_parts,
)
from .blocks import is_cell_list


def fold_head_reshapes(graph: Graph, tree: Block) -> set[str]:
    """Rewrite the mapped transposes and reshapes of ``tree`` in place; returns the layer
    results to write inside the head split that reads them (see :func:`_inlined_layers`)."""
    parents = _parents(tree)
    mapped: list[MappedNode] = tree.nodes()
    producer = {out: item for item in mapped for out in item.node.outputs if out}
    readers: dict[str, int] = {name: 1 for name in graph.outputs}
    for item in mapped:
        for name in item.node.inputs:
            # a sizes tuple reading only sizes the block names does not read the value
            if name and not _sizes_named_elsewhere(graph, item, name, parents.get(id(item)), tree):
                readers[name] = readers.get(name, 0) + 1
    for item in mapped:
        if item.converted and item.node.op_type == "Transpose":
            swap = _swapped_axes(item.result)
            if swap is not None:
                item.result = Method(item.result.args[0], "swapaxes", [Lit(swap[0]), Lit(swap[1])])
    absorbed: set[int] = set()  # id() of nodes folded into their reader: nothing reads them now
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
        if item.node.op_type == "Transpose" and source.node.op_type in (
            "Reshape",
            "Gather",
            "GatherND",
            "Slice",
        ):
            if (
                isinstance(item.result, Method)
                and item.result.value == Input(0)
                and (
                    _is_call(source.result, "ops.reshape")
                    or _picks_from_input(source.result, len(source.node.inputs))
                )
            ):
                item.result = replace(item.result, value=source.result)
                item.node = replace(item.node, inputs=list(source.node.inputs))
                absorbed.add(id(source))
        elif item.node.op_type == "Reshape" and source.node.op_type == "Transpose":
            if (
                isinstance(source.result, Method)
                and _is_call(item.result, "ops.reshape")
                and item.result.args[0] == Input(0)
                and _reads_of_input(item.result) - _size_reads(item.result) == 1
                and not _has_temp(item.result)
                and len(source.node.inputs) == 1
            ):
                # sizes it read from the swapped value come from the same axes before the swap
                rank = len(graph.symbolic_shapes.get(item.node.inputs[0]) or ())
                swapped = [a % rank if rank else a for a in _swapped_by(source.result)]
                item.result = _swap_size_reads(item.result, dict(zip(swapped, swapped[::-1])), rank)
                item.result = replace(item.result, args=[source.result, *item.result.args[1:]])
                item.node = replace(
                    item.node, inputs=[source.node.inputs[0], *item.node.inputs[1:]]
                )
                absorbed.add(id(source))
    return _inlined_layers(graph, mapped, parents, absorbed, tree)


def _picks_from_input(expr: Any, inputs: int) -> bool:
    """``x[:, :, :, 0]``, ``x[:, :, :2]``: a constant pick from the node's first input (a fused
    qkv split), reading no other input."""
    return (
        isinstance(expr, Item)
        and expr.value == Input(0)
        and _reads_of_input(expr) == 1
        and not any(_reads_of_input(expr, index) for index in range(1, inputs))
    )


def _inlined_layers(
    graph: Graph,
    mapped: list[MappedNode],
    parents: dict[int, Block],
    absorbed: set[int],
    root: Block,
) -> set[str]:
    """Results of a layer call (``self.q_proj(hidden_states)``) that the head split right after
    it reads and nothing else does: written inside it,
    ``q = ops.reshape(self.q_proj(hidden_states), shape).swapaxes(1, 2)``. Only sizes may be
    computed in between, so no variable the call reads can change before it runs."""
    readers: dict[str, list[MappedNode]] = {}
    for item in mapped:
        if id(item) not in absorbed:
            for name in item.node.inputs:
                if name:
                    readers.setdefault(name, []).append(item)
    inlined: set[str] = set()
    # twice: a projection normed before its split (OLMo-2's q_proj, then q_norm) goes inside
    # the norm once the norm is known to go inside the split
    for item in [*mapped, *mapped]:
        outputs = [name for name in item.node.outputs if name]
        pick = _picks_from_input(item.result, len(item.node.inputs))  # Phi-3's qkv[:, :, :32]
        if not item.converted or not (isinstance(item.result, Cell) or pick) or len(outputs) != 1:
            continue
        out = outputs[0]
        parent = parents.get(id(item))
        if out in inlined:
            continue
        found = [
            other
            for other in readers.get(out, [])
            if not _sizes_named_elsewhere(graph, other, out, parent, root)
        ]
        if out in graph.outputs or len(found) != 1:
            continue
        reader = found[0]
        # a head split, or the reshape splitting a fused projection into heads (BLOOM's qkv)
        head_split = (
            (isinstance(reader.result, Method) and _is_call(reader.result.value, "ops.reshape"))
            or (_is_call(reader.result, "ops.reshape") and reader.result.args[0] == Input(0))
            or (
                isinstance(reader.result, Cell)
                and reader.result.role == "norm"
                and reader.node.outputs[0] in inlined
            )
        )
        if not head_split or parent is None or parents.get(id(reader)) is not parent:
            continue
        positions = [i for i, name in enumerate(reader.node.inputs) if name == out]
        if sum(_reads_of_input(reader.result, i) for i in positions) != 1:
            continue  # its sizes read it too: the call would run more than once
        items = parent.items
        between = items[items.index(item) + 1 : items.index(reader)]
        if all(_only_sizes(other, absorbed) for other in between):
            inlined.add(out)
        elif all(_projection_step(other, absorbed) for other in between):
            # the projections first, then their head splits (BART's k_proj, v_proj, k, v):
            # the call moves down to its split; nothing in between reads what it makes
            items.remove(item)
            first = next(
                i for i, other in enumerate(items)
                if isinstance(other, MappedNode) and out in other.node.inputs
            )  # fmt: skip
            items.insert(first, item)  # before the split (or the reshape folded into it)
            inlined.add(out)
    return inlined | _normed_heads(mapped, parents, absorbed, readers)


def _projection_step(item: Any, absorbed: set[int]) -> bool:
    """A size, a layer call or a head split: what runs between a projection and its split."""
    if _only_sizes(item, absorbed):
        return True
    if not isinstance(item, MappedNode) or not item.converted:
        return False
    result = item.result
    return (
        isinstance(result, Cell)
        or _picks_from_input(result, len(item.node.inputs))
        or (
            item.node.op_type in ("Reshape", "Transpose")
            and (_is_call(result, "ops.reshape") or isinstance(result, Method))
        )
    )


def _normed_heads(
    mapped: list[MappedNode],
    parents: dict[int, Block],
    absorbed: set[int],
    readers: dict[str, list[MappedNode]],
) -> set[str]:
    """A head split normalised per head before its transpose (Qwen3's and OLMo2's q_norm and
    k_norm; Persimmon's on heads picked out of a fused projection): the split and the norm
    written inside the transpose,
    ``q = self.q_norm(ops.reshape(self.q_proj(hidden_states), shape)).swapaxes(1, 2)``. Each
    step is read by the next alone, with only such steps in between."""
    producer = {out: item for item in mapped for out in item.node.outputs if out}

    def next_step(item: MappedNode, reader: MappedNode) -> bool:
        parent = parents.get(id(item))
        outputs = [name for name in item.node.outputs if name]
        if len(outputs) != 1 or parent is None or parents.get(id(reader)) is not parent:
            return False
        if readers.get(outputs[0], []) != [reader] or not item.converted:
            return False
        items = parent.items
        between = items[items.index(item) + 1 : items.index(reader)]
        # only sizes, or the same steps for the other heads (Persimmon picks q and k, then
        # norms both, then transposes): nothing in between reads what this step makes
        return all(_projection_step(other, absorbed) for other in between)

    inlined: set[str] = set()
    for item in mapped:
        result = item.result
        if not (isinstance(result, Method) and result.name == "swapaxes"):
            continue
        if result.value != Input(0) or not item.node.inputs:
            continue
        norm = producer.get(item.node.inputs[0])
        if norm is None or not isinstance(norm.result, Cell) or not norm.node.inputs:
            continue
        split = producer.get(norm.node.inputs[0])
        picked = split is not None and _picks_from_input(split.result, len(split.node.inputs))
        if split is None or not (_is_call(split.result, "ops.reshape") or picked):
            continue
        if next_step(norm, item) and next_step(split, norm):
            inlined.update((norm.node.outputs[0], split.node.outputs[0]))
    # normalised per head after the transpose (Gemma-3): the split inside the norm,
    # ``q = self.q_norm(ops.reshape(self.q_proj(hidden_states), shape).swapaxes(1, 2))``
    for norm in mapped:
        if not (isinstance(norm.result, Cell) and norm.result.role == "norm" and norm.node.inputs):
            continue
        split = producer.get(norm.node.inputs[0])
        if split is None or not isinstance(split.result, Method):
            continue
        result = split.result
        if result.name != "swapaxes":
            continue
        if _is_call(result.value, "ops.reshape") and next_step(split, norm):
            inlined.add(split.node.outputs[0])
    return inlined


def _block_inputs(graph: Graph, block: Block | None, root: Block) -> list[str]:
    """The values the ``construct`` writing ``block``'s statements takes (none known for a
    list of layers, whose statements its parent writes)."""
    if block is None or is_cell_list(block):
        return []
    return graph.inputs if block is root else block.inputs


def _known_symbols(graph: Graph, inputs: list[str]) -> set[str]:
    """Dimension symbols of the block's inputs: sizes codegen/sizes.py names."""
    return {d for n in inputs for d in graph.symbolic_shapes.get(n) or () if isinstance(d, str)}


def _first_input_size(part: Any) -> bool:
    """Whether ``part`` is ``ops.shape(x)[axis]`` of its node's first input."""
    return (
        isinstance(part, Item)
        and _is_call(part.value, "ops.shape")
        and part.value.args == [Input(0)]
        and isinstance(part.index, int)
    )


def _size_reads(value: Any) -> int:
    """How many times ``value`` reads a size of its node's first input (``ops.shape(x)[i]``)."""
    return sum(1 for part in expression_parts(value) if _first_input_size(part))


def _swapped_by(method: Any) -> list[int]:
    """The two axes of an ``x.swapaxes(a, b)`` expression."""
    return [arg.value if isinstance(arg, Lit) else arg for arg in method.args]


def _swap_size_reads(value: Any, axes: dict[int, int], rank: int) -> Any:
    """``value`` with each ``ops.shape(x)[a]`` of its first input reading axis ``axes[a]``."""
    if _first_input_size(value):
        axis = value.index % rank if rank else value.index
        return replace(value, index=axes.get(axis, axis))
    if isinstance(value, (list, tuple)):
        return type(value)(_swap_size_reads(v, axes, rank) for v in value)
    if is_dataclass(value) and not isinstance(value, (type, Weight)):
        changes = {
            f.name: _swap_size_reads(getattr(value, f.name), axes, rank) for f in fields(value)
        }
        return replace(value, **changes)
    return value


def _sizes_named_elsewhere(
    graph: Graph, reader: MappedNode, value: str, block: Block | None, root: Block
) -> bool:
    """Whether ``reader`` is a tuple of sizes that reads ``value`` only for dimensions an input
    of ``block`` has too: they are written as that input's names (codegen/sizes.py), so the
    tuple does not read ``value`` at all."""
    if reader.node.op_type != "Dims" or reader.node.domain != DOMAIN or block is None:
        return False
    known = _known_symbols(graph, _block_inputs(graph, block, root))
    shape = graph.symbolic_shapes.get(value) or ()
    positions = {Input(i) for i, name in enumerate(reader.node.inputs) if name == value}
    parts = list(expression_parts(reader.result))
    axes = [
        part.index
        for part in parts
        if isinstance(part, Item)
        and _is_call(part.value, "ops.shape")
        and part.value.args[0] in positions
    ]
    reads = sum(1 for part in parts if isinstance(part, Input) and part in positions)
    return (
        bool(axes)
        and reads == len(axes)  # read for its sizes only
        and all(
            isinstance(axis, int) and -len(shape) <= axis < len(shape) and shape[axis] in known
            for axis in axes
        )
    )


def _only_sizes(item: Any, absorbed: set[int]) -> bool:
    """A node that assigns no tensor variable: folded away, or a tuple of sizes."""
    if isinstance(item, Block):
        return False
    return id(item) in absorbed or (item.node.op_type == "Dims" and item.node.domain == DOMAIN)


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


def _reads_of_input(value: Any, index: int = 0) -> int:
    """How many times the expression ``value`` reads its node's input ``index``."""
    return sum(
        1 for part in expression_parts(value) if isinstance(part, Input) and part.index == index
    )


def _has_temp(value: Any) -> bool:
    return any(isinstance(part, Temp) for part in expression_parts(value))
