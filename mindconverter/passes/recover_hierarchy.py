"""Stage 5: recover the source model's module hierarchy from the hints exporters leave.

The dynamo exporter records each node's module path and classes in ``metadata_props``
(``pkg.torch.onnx.name_scopes`` / ``pkg.torch.onnx.class_hierarchy``); the TorchScript exporter
names nodes after their scope (``/layer1/layer1.0/conv1/Conv``). From these we build a tree of
:class:`Block` s: every module that contains other modules becomes a block (rendered as its own
``nn.Cell`` class); leaf modules (a Conv2d, a ReLU) become cells or ops inside their parent.

A block is kept only when it can run as one call: its nodes must not need a value that is
computed, outside the block, from the block's own results. Blocks that fail this are dissolved
into their parent, so recovery never changes what the network computes.
"""

from __future__ import annotations

import hashlib
import heapq
import re
from collections import defaultdict
from dataclasses import replace

from ..graph import Graph
from ..graph.internal_domain import DOMAIN
from ..graph.layer_inputs import share_layer_inputs
from ..graph.module_tree import Block, module_classes, module_path, parameter_owner
from ..graph.shared_modules import Repeat, find_repeats
from ..graph.symbolic import whole_dimensions
from ..mappers.activation import ACTIVATION_CELLS
from ..mappers.base import Cell, MappedNode, NodeContext, Unsupported, expression_parts
from ..mappers.symbolic import dims
from .context import PassContext


def _parent(path: str) -> str:
    return path.rsplit(".", 1)[0] if "." in path else ""


def _interface(block: Block, graph: Graph, read_outside: set[str]) -> None:
    produced, consumed = [], []
    for mapped in block.nodes():
        consumed.extend(n for n in mapped.node.inputs if n)
        produced.extend(n for n in mapped.node.outputs if n)
    # a repeated module inside gives its last application's result
    produced.extend(b.carried[2] for b in _all_blocks(block) if b.repeats > 1)
    made = set(produced)
    seen = set()
    block.inputs = []
    for name in consumed:
        if name not in made and name not in graph.constants and name not in seen:
            seen.add(name)
            block.inputs.append(name)
    block.outputs = [name for name in produced if name in read_outside]


def _reads(item) -> set[str]:
    nodes = item.nodes() if isinstance(item, Block) else [item]
    return {n for m in nodes for n in m.node.inputs if n}


def _writes(item) -> set[str]:
    nodes = item.nodes() if isinstance(item, Block) else [item]
    written = {n for m in nodes for n in m.node.outputs if n}
    if isinstance(item, Block):
        written |= {b.carried[2] for b in _all_blocks(item) if b.repeats > 1}
    return written


def _order_items(items: list) -> list | None:
    """Items in dependency order (earliest first), or None when blocks depend on each other cyclically."""
    writes = [_writes(item) for item in items]
    producer = {name: index for index, names in enumerate(writes) for name in names}
    deps = []
    for index, item in enumerate(items):
        deps.append({producer[n] for n in _reads(item) if n in producer and producer[n] != index})
    # Kahn's algorithm taking the earliest ready item each time (a heap: n log n, not n^2)
    waiting = [len(needed) for needed in deps]
    users: list[list[int]] = [[] for _ in items]
    for index, needed in enumerate(deps):
        for producer_index in needed:
            users[producer_index].append(index)
    ready = [index for index, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        index = heapq.heappop(ready)
        order.append(items[index])
        for user in users[index]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, user)
    return order if len(order) == len(items) else None


def _settle(block: Block) -> None:
    """Order a block's items; dissolve child blocks that cannot run as one call."""
    for child in block.child_blocks():
        _settle(child)
    while True:
        ordered = _order_items(block.items)
        if ordered is not None:
            block.items = ordered
            return
        # dissolve the largest child block (the most likely to interleave with its siblings)
        children = block.child_blocks()
        victim = max(children, key=lambda b: len(b.nodes()))
        index = block.items.index(victim)
        block.items[index : index + 1] = victim.items


def _hoist_shared_inputs(block: Block, graph: Graph, graph_nodes=None) -> None:
    """Move out of a child block the nodes that only transform the child's inputs for others too.

    Exporters file a computation shared by several layers (BERT's attention-mask transform)
    under the first layer that uses it; computed before the call instead, every layer has the
    same structure and shares one class.
    """
    for child in block.child_blocks():
        _hoist_shared_inputs(child, graph, graph_nodes)
    changed = True
    while changed:
        changed = False
        for child in block.child_blocks():
            members = {id(m) for m in child.nodes()}
            inside_outputs = _writes(child)
            read_outside = set(graph.outputs)
            for m in graph_nodes(graph):
                if id(m) not in members:
                    read_outside |= {n for n in m.node.inputs if n}
            for item in list(child.items):
                if isinstance(item, Block) or not item.converted or _holds_weights(item):
                    continue  # a layer with weights is the module's own (YOLOS's projection)
                inputs = {n for n in item.node.inputs if n and n not in graph.constants}
                outputs = {n for n in item.node.outputs if n}
                read_inside = _reads(child)
                if (
                    inputs
                    and not inputs & inside_outputs
                    and outputs & read_outside
                    and outputs & read_inside
                ):
                    child.items.remove(item)
                    block.items.insert(block.items.index(child), item)
                    changed = True
                    break
            if changed:
                break


def _sink_into_reader(block: Block, graph: Graph) -> None:
    """Move into a child block what its parent computes only for that child from values the
    child reads itself. A sliding-window cache is cropped by the caller's code (the exporter
    files it at the root) while the model reads the whole cache's length: cropped inside the
    model, the model takes the cache it crops, not a second copy read for its size alone."""
    changed = True
    while changed:
        changed = False
        reads = {id(item): _reads(item) for item in block.items}  # once per pass: linear work
        for item in list(block.items):
            if isinstance(item, Block) or not item.converted or _holds_weights(item):
                continue
            inputs = {n for n in item.node.inputs if n and n not in graph.constants}
            outputs = {n for n in item.node.outputs if n}
            readers = [
                other for other in block.items if other is not item and reads[id(other)] & outputs
            ]
            if (
                not inputs
                or outputs & set(graph.outputs)
                or len(readers) != 1
                or not isinstance(readers[0], Block)
                or readers[0].name.isdigit()  # a layer of a list: the layers stay alike
                or readers[0].repeats > 1
                or not inputs <= reads[id(readers[0])]
            ):
                continue
            block.items.remove(item)
            readers[0].items.insert(0, item)
            changed = True
            break
    for child in block.child_blocks():
        _sink_into_reader(child, graph)


def _lift_output_crops(root: Block, graph: Graph) -> None:
    """Move out of the layers of a list the crops (Slice) only some layers apply to what they
    give as network outputs. Gemma-2 alternates sliding-window and global layers: the cache of a
    sliding one is cropped to its window (``k[:, :, -4095:]``) inside the layer, the other's is
    not, which made two classes of one layer. Cropped after the loop, one class serves both."""
    outputs = set(graph.outputs)
    read = {n for m in root.nodes() for n in m.node.inputs if n}
    parent_of = {id(child): block for block in _all_blocks(root) for child in block.child_blocks()}
    lists: dict[str, list[Block]] = defaultdict(list)
    for block in _all_blocks(root):
        if re.search(r"\.\d+$", block.path) and id(block) in parent_of:
            lists[block.path.rsplit(".", 1)[0]].append(block)
    for path, layers in lists.items():
        crops = [
            [
                (owner, m)
                for owner in _all_blocks(layer)
                for m in owner.items
                if isinstance(m, MappedNode)
                and m.converted
                and m.node.op_type == "Slice"  # a crop, not a layer's own last step
                and {n for n in m.node.outputs if n} <= outputs - read
            ]
            for layer in layers
        ]
        if len(layers) < 2 or len({len(found) for found in crops}) == 1:
            continue  # every layer crops alike, or none does
        holder, after = parent_of[id(layers[0])], layers[-1]
        if holder.path == path and id(holder) in parent_of:  # the list itself: its parent
            holder, after = parent_of[id(holder)], holder
        position = holder.items.index(after) + 1
        for owner, m in [pair for found in crops for pair in found][::-1]:
            owner.items.remove(m)
            holder.items.insert(position, m)  # after the whole list: the layers stay a run


def _holds_weights(item: MappedNode) -> bool:
    """Whether a mapped node is a layer with weights (``self.proj = nn.Conv2d(...)``)."""
    return any(isinstance(part, Cell) and part.weights for part in expression_parts(item.result))


def _hoist_layer_computations(block: Block, graph: Graph) -> None:
    """Move out of a list's first layer what it computes for the later layers from the
    layer's other inputs only (T5's position bias: block 0 owns the relative-position table,
    later blocks take its result): computed before the layers, every layer has one signature
    and the list one class. Nothing that reads the layer's hidden states moves."""
    for child in block.child_blocks():
        _hoist_layer_computations(child, graph)
    layers = [c for c in block.child_blocks() if c.name.isdigit()]
    if len(layers) < 2:
        return
    first, later = layers[0], layers[1:]
    inside = {id(m): m for m in first.nodes()}
    producer = {out: m for m in inside.values() for out in m.node.outputs if out}
    read_later = {n for layer in later for m in layer.nodes() for n in m.node.inputs if n}
    shared = [name for name in producer if name in read_later and name not in graph.outputs]
    hidden = _carried_inputs(first, later[0], _hidden_input(first, graph, producer))
    # what the layer reads from outside, values it computes with before those it only sizes by
    nodes = sorted(first.nodes(), key=_is_dims)
    outside = [
        n for m in nodes for n in m.node.inputs
        if n and n not in producer and n not in graph.constants
    ]  # fmt: skip
    moved: dict[int, MappedNode] = {}
    for name in shared:
        found = _input_only_ancestors(graph, name, producer, hidden, outside)
        if found is not None:  # else the layer's own result (the next layer's hidden states)
            moved.update(found)
    if not moved:
        return
    in_order = [moved[id(m)] for m in first.nodes() if id(m) in moved]
    for sub in _all_blocks(first):
        sub.items = [item for item in sub.items if id(item) not in moved]
    at = block.items.index(first)
    block.items[at:at] = in_order


def _hoist_common_computations(block: Block, graph: Graph) -> None:
    """Move out of a list's layers what every layer computes alike from the same outside values
    (the causal mask TorchScript records in each T5 decoder layer's attention): computed once
    before the layers, each layer keeps only its own work. Sizes such a computation reads are
    read again from what the list takes from outside; the layers keep their own size reads."""
    for child in block.child_blocks():
        _hoist_common_computations(child, graph)
    layers = [c for c in block.child_blocks() if c.name.isdigit()]
    if not layers or any(layer.repeats > 1 for layer in layers):
        return
    twins = _counterparts(layers)
    first = layers[0]
    made = [{n for m in layer.nodes() for n in m.node.outputs if n} for layer in layers]
    # a list of one layer: what it computes from sizes, ids and masks alone moves, as it would
    # with more layers (T5's position bias: with two blocks the first hands it to the second)
    floats = _hidden_input(first, graph, {}) if len(layers) == 1 else set()
    outside = [
        n for m in first.nodes() for n in m.node.inputs
        if n and n not in made[0] and n not in graph.constants
    ]  # fmt: skip
    inside = {m.node.name for layer in layers for m in layer.nodes()}
    common: list[MappedNode] = []
    copies: dict[str, MappedNode] = {}  # a size read by a common node: its copy outside
    matched: dict[str, list[str]] = {}  # a common value: its twin in each later layer
    for m in first.nodes():
        if _is_dims(m) and m.converted and graph.symbolic_values.get(m.node.outputs[0]):
            copy = _dims_from(graph, m, outside)
            if copy is not None:  # the same size in every layer: compared by value
                copies[m.node.outputs[0]] = copy
            continue
        others = twins.get(id(m))
        if others is None or not m.converted or len(m.node.outputs) != 1:
            continue
        output = m.node.outputs[0]
        if any(_read_elsewhere(graph, o.node.outputs[0], inside) for o in [m, *others]):
            continue  # a twin read past the list could not be pointed at the moved node
        if len(layers) == 1:
            if not _layer_free(graph, m, matched, copies, made[0], floats):
                continue
        elif _holds_weights(m) or not all(
            _same_computation(graph, m, other, matched, copies, made[0], made[index + 1], index)
            for index, other in enumerate(others)
        ):
            continue
        common.append(m)
        matched[output] = [o.node.outputs[0] for o in others]
    moved_outputs = {m.node.outputs[0] for m in common}
    read_by_rest = {
        n for m in first.nodes() if m.node.outputs[0:1] and m.node.outputs[0] not in moved_outputs
        for n in m.node.inputs
    }  # fmt: skip
    if not moved_outputs & read_by_rest:
        return  # nothing the layers would take: no computation worth moving
    _move_before_layers(block, layers, common, copies, matched, graph)


def _hoist_sibling_preparations(block: Block, graph: Graph) -> None:
    """Move out of a list's layers what a layer prepares from outside values the way the
    parent prepares what its siblings read (the exporter computes a preparation several layers
    share where the first of them runs, moved before the layers as their shared input; a kind
    of layer with one member keeps its own inside: Gemma-3's one global layer unsqueezes its
    rotary table and turns its mask additive itself). Moved, every layer reads its prepared
    value from outside and the layers have one class. Only weight-free nodes that read
    constants, outside values or nodes moved before them move."""
    for child in block.child_blocks():
        _hoist_sibling_preparations(child, graph)
    layers = [c for c in block.child_blocks() if c.name.isdigit()]
    if len(layers) < 2 or any(layer.repeats > 1 for layer in layers):
        return
    made = {n for layer in layers for m in layer.nodes() for n in m.node.outputs if n}
    own = [item for item in block.items if isinstance(item, MappedNode)]
    by_output = {out: m for m in own for out in m.node.outputs if out}
    read = {n for layer in layers for m in layer.nodes() for n in m.node.inputs}
    prepared = [by_output[name] for name in read if name in by_output]  # what siblings read
    moved: dict[int, MappedNode] = {}
    moved_outputs: set[str] = set()
    for layer in layers:
        for m in layer.nodes():
            outside = all(
                not n or n in graph.constants or n in moved_outputs or n not in made
                for n in m.node.inputs
            )
            if (
                not outside
                or not m.converted
                or len(m.node.outputs) != 1
                or _holds_weights(m)
                or m.node.outputs[0] in graph.outputs
                or not any(_prepares_alike(graph, m, p) for p in prepared)
            ):
                continue
            moved[id(m)] = m
            moved_outputs.add(m.node.outputs[0])
    if not moved:
        return
    for layer in layers:
        for sub in _all_blocks(layer):
            sub.items = [item for item in sub.items if id(item) not in moved]
    at = block.items.index(layers[0])
    block.items[at:at] = list(moved.values())


def _prepares_alike(graph: Graph, m: MappedNode, other: MappedNode) -> bool:
    """Whether ``m`` does to its value what ``other`` does to another: the same operator,
    attributes and mapping, equal constants."""
    if not _same_step(m, other):
        return False
    for mine, theirs in zip(m.node.inputs, other.node.inputs):
        if (mine in graph.constants) != (theirs in graph.constants):
            return False
        if mine in graph.constants and not _equal_constants(graph, mine, theirs):
            return False
    return True


def _same_step(m: MappedNode, other: MappedNode) -> bool:
    """The same operator, attributes and mapping, on as many inputs."""
    return (
        other.node.op_type == m.node.op_type
        and other.node.attrs == m.node.attrs
        and repr(other.result) == repr(m.result)
        and len(other.node.inputs) == len(m.node.inputs)
    )


def _equal_constants(graph: Graph, mine: str, theirs: str) -> bool:
    """Whether two values are constants of one dtype, shape and content."""
    first, second = graph.constant(mine), graph.constant(theirs)
    if first is None or second is None or first.dtype != second.dtype:
        return False
    return first.shape == second.shape and bool((first == second).all())


def _layer_free(
    graph: Graph,
    m: MappedNode,
    moved: dict[str, list[str]],
    sizes: dict[str, MappedNode],
    made: set[str],
    floats: set[str],
) -> bool:
    """Whether ``m`` reads only constants, sizes, values already moving, and what the layer
    takes from outside other than float tensors (hidden states, tables: they stay)."""
    for name in m.node.inputs:
        if not name or name in graph.constants or name in sizes or name in moved:
            continue
        if name in made or name in floats:
            return False
    return True


def _read_elsewhere(graph: Graph, value: str, inside: set[str]) -> bool:
    """Whether the network returns ``value`` or a node outside the layers reads it."""
    if value in graph.outputs:
        return True
    return any(node.name not in inside for node in graph.consumer_nodes.get(value, []))


def _places(layer: Block) -> dict[tuple[str, str], list[MappedNode]]:
    """A layer's nodes by place: their module path inside the layer and operator, in order."""
    found: dict[tuple[str, str], list[MappedNode]] = {}
    for m in layer.nodes():
        found.setdefault((module_path(m.node)[len(layer.path) :], m.node.op_type), []).append(m)
    return found


def _counterparts(layers: list[Block]) -> dict[int, list[MappedNode]]:
    """For each node of the first layer, the node in the same place of every later layer (by
    module path inside the layer, operator and order), when each later layer has one."""

    first, *later = [_places(layer) for layer in layers]
    result: dict[int, list[MappedNode]] = {}
    for key, nodes in first.items():
        others = [p.get(key, []) for p in later]
        if all(len(o) == len(nodes) for o in others):
            for position, m in enumerate(nodes):
                result[id(m)] = [o[position] for o in others]
    return result


def _same_computation(
    graph: Graph,
    m: MappedNode,
    other: MappedNode,
    matched: dict[str, list[str]],
    sizes: dict[str, MappedNode],
    made: set[str],
    made_other: set[str],
    index: int,
) -> bool:
    """Whether ``other`` computes what ``m`` does: the same operator and mapping, reading the
    same outside values, equal constants, equal sizes, or the twins of values ``m`` reads."""
    if not other.converted or not _same_step(m, other):
        return False
    for mine, theirs in zip(m.node.inputs, other.node.inputs):
        size = graph.symbolic_values.get(mine)
        if size is not None and (mine in sizes or mine not in made):
            if graph.symbolic_values.get(theirs) != size:  # a size: the same in every layer
                return False
        elif mine in made:
            if mine not in matched or matched[mine][index] != theirs:
                return False
        elif mine in graph.constants or theirs in graph.constants:
            if not _equal_constants(graph, mine, theirs):
                return False
        elif mine != theirs or theirs in made_other:
            return False
    return True


def _move_before_layers(
    block: Block,
    layers: list[Block],
    common: list[MappedNode],
    copies: dict[str, MappedNode],
    matched: dict[str, list[str]],
    graph: Graph,
) -> None:
    """Put the first layer's ``common`` nodes before the layers (with the size reads they need,
    renamed), drop their twins from the later layers and point the twins' readers at them."""
    moved = {id(m) for m in common}
    renamed: dict[str, str] = {}
    hoisted: list[MappedNode] = []
    for m in common:
        for name in m.node.inputs:
            if name in copies and name not in renamed:
                copy = copies[name]
                output = f"{name}__{block.path or 'root'}"
                graph.symbolic_values[output] = graph.symbolic_values[name]
                copy = MappedNode(replace(copy.node, outputs=[output]), copy.result, copy.reason)
                renamed[name] = output
                hoisted.append(copy)
        inputs = [renamed.get(n, n) for n in m.node.inputs]
        hoisted.append(MappedNode(replace(m.node, inputs=inputs), m.result, m.reason))
    for sub in _all_blocks(layers[0]):
        sub.items = [item for item in sub.items if id(item) not in moved]
    for index, layer in enumerate(layers[1:]):
        twin_of = {matched[m.node.outputs[0]][index]: m.node.outputs[0] for m in common}
        for sub in _all_blocks(layer):
            kept = []
            for item in sub.items:
                if (
                    isinstance(item, MappedNode)
                    and item.node.outputs[0:1]
                    and (item.node.outputs[0] in twin_of)
                ):
                    continue
                if isinstance(item, MappedNode) and set(item.node.inputs) & set(twin_of):
                    inputs = [twin_of.get(n, n) for n in item.node.inputs]
                    item = MappedNode(replace(item.node, inputs=inputs), item.result, item.reason)
                kept.append(item)
            sub.items = kept
    at = block.items.index(layers[0])
    block.items[at:at] = hoisted


def _hidden_input(layer: Block, graph: Graph, producer: dict) -> set[str]:
    """The values a layer takes from outside whose computation must stay in it: its float
    inputs (hidden states, images; also a float mask, to be safe), and any of unknown type."""
    found = set()
    for m in layer.nodes():
        for name in m.node.inputs:
            if name and name not in producer and name not in graph.constants:
                dtype = graph.dtypes.get(name)
                if dtype is None or dtype.kind in "fc":
                    found.add(name)
    return found


def _carried_inputs(first: Block, second: Block, floats: set[str]) -> set[str]:
    """Of the first layer's float inputs, those the list carries from layer to layer (the
    hidden states): the ones whose place the second layer fills with a value the first one
    made. GPT-J's sin and cos, which layer 0 repeats for every layer and reads in the same
    place as layer 1 reads the repeats, are not. When no place lines up, every float input
    counts as carried."""

    mine, theirs = _places(first), _places(second)
    made_first = {n for m in first.nodes() for n in m.node.outputs if n}
    carried = set()
    for key, nodes in theirs.items():
        counterparts = mine.get(key, [])
        if len(counterparts) != len(nodes):
            continue  # the first layer's extra work (what it computes for the others)
        for node, counterpart in zip(nodes, counterparts):
            if len(node.node.inputs) != len(counterpart.node.inputs):
                continue
            for value, own in zip(node.node.inputs, counterpart.node.inputs):
                if value in made_first and own in floats:
                    carried.add(own)
    return carried or floats


def _input_only_ancestors(
    graph: Graph, name: str, producer: dict, hidden: set[str], outside: list[str]
) -> dict | None:
    """The layer's nodes computing ``name``; None when one of them reads hidden states (other
    than for their sizes) or is not converted."""
    found: dict[int, MappedNode] = {}
    stack = [name]
    while stack:
        value = stack.pop()
        if value in hidden:
            return None
        node = producer.get(value)
        if node is None or id(node) in found:
            continue
        if not node.converted or len(found) > 200:
            return None
        found[id(node)] = node
        if _is_dims(node):  # sizes: read from the layer's inputs, there before the layer too
            rewired = _dims_from(graph, node, outside)
            if rewired is None and any(n in producer for n in node.node.inputs if n):
                return None
            found[id(node)] = rewired or node
            continue
        stack.extend(n for n in node.node.inputs if n)
    return found


def _dims_from(graph: Graph, dims_node: MappedNode, tensors: list[str]) -> MappedNode | None:
    """The Dims node reading each of its sizes from one of ``tensors`` instead (the same
    named dimension); None when one is found in none of them."""
    node = dims_node.node
    named = []  # the dimension each size is read at now
    for source, axis in zip(node.attrs.get("sources", []), node.attrs.get("axes", [])):
        shape = graph.symbolic_shapes.get(node.inputs[source]) or ()
        named.append(shape[axis] if axis < len(shape) else None)
    found = _read_from(graph, named, tensors)
    return None if found is None else _remapped(graph, node, found)


def _all_blocks(block: Block) -> list[Block]:
    result = [block]
    for child in block.child_blocks():
        result.extend(_all_blocks(child))
    return result


def _is_chain_element(item, graph: Graph) -> bool:
    if isinstance(item, Block):
        return len(item.inputs) == 1 and len(item.outputs) == 1
    from ..mappers.base import Call, Cell, Input

    result = item.result
    if not item.converted or len(item.node.outputs) != 1:
        return False
    if isinstance(result, Cell):
        return list(result.args) == [Input(0)] and not result.call_kwargs
    return (
        isinstance(result, Call)
        and result.func in ACTIVATION_CELLS
        and list(result.args) == [Input(0)]
        and not result.kwargs
    )


def _item_name(item, parent: str) -> str | None:
    """An item's name inside ``parent``: from its weights' source names when they sit there
    (a Conv with BatchNorm folded in carries the BatchNorm's scope), else from its scope."""
    if isinstance(item, Block):
        return item.path.rsplit(".", 1)[-1] if _parent(item.path) == parent else None
    weights = getattr(item.result, "weights", None) or {}
    for weight in weights.values():
        source_module = parameter_owner(weight.source)
        if _parent(source_module) == parent:
            return source_module.rsplit(".", 1)[-1]
    path = module_path(item.node)
    return path.rsplit(".", 1)[-1] if _parent(path) == parent else None


def _mark_sequential(block: Block, graph: Graph) -> None:
    """A container whose numbered children run one after the other becomes a SequentialCell."""
    for child in block.child_blocks():
        _mark_sequential(child, graph)
    if not block.path or not block.items:
        return
    names = [_item_name(item, block.path) for item in block.items]
    if not all(name is not None and name.isdigit() for name in names):
        return
    indices = [int(name) for name in names]
    if indices != sorted(set(indices)) or len(block.inputs) != 1 or len(block.outputs) != 1:
        return
    current = block.inputs[0]
    for item in block.items:
        if not _is_chain_element(item, graph):
            return
        inputs = (
            item.inputs
            if isinstance(item, Block)
            else [n for n in item.node.inputs if n and n not in graph.constants]
        )
        outputs = item.outputs if isinstance(item, Block) else list(item.node.outputs)
        if inputs != [current] or len(outputs) != 1:
            return
        current = outputs[0]
    if current == block.outputs[0]:
        block.sequential = True
        block.indices = indices


def _segments(graph: Graph, mapped: list[MappedNode]) -> list[list[MappedNode]]:
    """Split the node sequence where exactly one computed value is alive (a block boundary)."""
    last_use: dict[str, int] = {}
    for index, m in enumerate(mapped):
        for name in m.node.inputs:
            if name and name not in graph.constants:
                last_use[name] = index
    for name in graph.outputs:
        last_use[name] = len(mapped)
    segments, current, alive = [], [], set(graph.inputs)
    for index, m in enumerate(mapped):
        current.append(m)
        alive |= {n for n in m.node.outputs if n}
        alive = {n for n in alive if last_use.get(n, -1) > index}
        if len(alive) <= 1:
            segments.append(current)
            current = []
    if current:
        segments.append(current)
    return segments


def _wiring(segment: list[MappedNode]) -> tuple:
    """A segment's operators and how they feed each other, ignoring sizes and names."""
    position = {}
    signature = []
    for index, m in enumerate(segment):
        sources = []
        for name in m.node.inputs:
            sources.append(position.get(name, "in") if name else "-")
        for name in m.node.outputs:
            position[name] = index
        signature.append((m.node.domain, m.node.op_type, tuple(sources)))
    return tuple(signature)


def _role(segment: list[MappedNode]) -> str:
    ops = [m.node.op_type for m in segment]
    if ops[-1] == "Concat" or (len(ops) > 1 and ops[-2] == "Concat"):
        return "MixedBlock"
    if any(op in ("Add", "Sum") for op in ops):
        return "ResidualBlock"
    return "Block"


_CLOSING_OPS = {
    "Relu",
    "LeakyRelu",
    "Sigmoid",
    "Tanh",
    "Clip",
    "HardSwish",
    "HardSigmoid",
    "Elu",
    "Selu",
    "PRelu",
}


def mine_repeated_blocks(graph: Graph, mapped: list[MappedNode]) -> Block:
    """For files without module hints: segments whose wiring repeats become blocks."""
    root = Block("", "")
    segments = []
    for segment in _segments(graph, mapped):
        # a block's closing activation (ResNet's ReLU after the residual add) belongs to the block
        node = segment[0].node
        if (
            len(segment) == 1
            and segments
            and len(segments[-1]) > 1
            and node.op_type in _CLOSING_OPS
            and node.inputs
            and node.inputs[0] in segments[-1][-1].node.outputs
        ):
            segments[-1] = segments[-1] + segment
        else:
            segments.append(segment)
    counts: dict[tuple, int] = {}
    for segment in segments:
        if len(segment) > 1:
            counts[_wiring(segment)] = counts.get(_wiring(segment), 0) + 1
    number = 0
    for segment in segments:
        if len(segment) > 1 and counts[_wiring(segment)] >= 2 and all(m.converted for m in segment):
            number += 1
            root.items.append(Block(f"block{number}", _role(segment), list(segment)))
        else:
            root.items.extend(segment)
    return root


# --- sizes read inside the block that uses them ------------------------------------------------
# A ``Dims`` node (``(x.shape[0], x.shape[1], 2, 8)``) filed outside the block reading it, or
# reading a tensor the block does not otherwise need, would make the size a block argument
# (``construct(self, x, x_1, x_2, x_3)`` with two shape tuples). When each named dimension is also
# a dimension of a tensor the block holds where the size is used, the block reads the size from
# that tensor itself and the argument goes away.


def _is_dims(item) -> bool:
    return (
        isinstance(item, MappedNode) and item.node.op_type == "Dims" and item.node.domain == DOMAIN
    )


def _owners(block: Block, found: dict[int, Block]) -> dict[int, Block]:
    """The innermost block holding each mapped node, by node identity."""
    for item in block.items:
        if isinstance(item, Block):
            _owners(item, found)
        else:
            found[id(item)] = block
    return found


def _source_for(graph: Graph, symbol: str, candidates: list[str]) -> tuple[str, int] | None:
    """The first candidate tensor with the named dimension, and its axis."""
    for name in candidates:
        shape = graph.symbolic_shapes.get(name) or ()
        if symbol in shape:
            return name, shape.index(symbol)
    return None


def _candidates(
    graph: Graph, block: Block, first_reader: MappedNode, sizes: set[str], data_only: bool = False
) -> list[str]:
    """Tensors the block holds where the size is first read: the reader's own inputs, then what
    the block reads from outside, then what it computed before that point (with
    ``data_only``, no tensor the block reads for sizes alone)."""
    made, earlier = set(), []
    for m in block.nodes():
        if m is first_reader:
            break
        earlier.extend(n for n in m.node.outputs if n)
    for m in block.nodes():
        made.update(n for n in m.node.outputs if n)
    outside = [
        n for m in block.nodes() for n in m.node.inputs if n and n not in made and n not in sizes
    ]
    # tensors the block computes with come before those it reads only for their sizes
    # (dynamo sizes BERT's embeddings by the attention mask, which they never read)
    data = {n for m in block.nodes() if not _is_dims(m) for n in m.node.inputs if n}
    names = [n for n in first_reader.node.inputs if n and n not in sizes]
    names += [n for n in outside if n in data] + earlier + ([] if data_only else outside)
    return [n for n in dict.fromkeys(names) if n not in graph.constants]


def _needs_copy(dims_node: MappedNode, block: Block, owner: Block, sizes: set[str]) -> bool:
    """Whether the readers in ``block`` would get the size, or what it reads, as an argument."""
    if owner is not block:
        return True
    made = {n for m in block.nodes() for n in m.node.outputs if n}
    needed = {  # what the block's tensor computations read (other sizes don't count)
        n for m in block.nodes() if not _is_dims(m) for n in m.node.inputs if n not in sizes
    }
    return any(n not in made and n not in needed for n in dims_node.node.inputs if n)


def _local_copy(
    graph: Graph, dims_node: MappedNode, block: Block, readers: list[MappedNode], sizes: set[str]
) -> MappedNode | None:
    """The size computed from the tensors ``block`` holds, or None when it cannot be."""
    node = dims_node.node
    value = graph.symbolic_values.get(node.outputs[0])
    if value is None:
        return None
    # a size that is a whole dimension of a tensor the block holds is read from it: first from
    # the tensors it computes with (a multiple of it there, Swin's windows, before a tensor
    # read for its size alone), then from any
    for candidates in (
        _candidates(graph, block, readers[0], sizes, data_only=True),
        _candidates(graph, block, readers[0], sizes),
    ):
        items, whole = whole_dimensions(
            graph, list(value if isinstance(value, tuple) else (value,)), candidates
        )
        items = _static_where_reshaped(graph, node.outputs[0], items, readers)
        symbols = sorted(
            {str(s) for item in items if not isinstance(item, int) for s in item.free_symbols}
        )
        found = _read_from(graph, symbols, candidates, whole)
        if found is not None:
            break
    if found is None:
        return None
    output = f"{node.outputs[0]}__{block.path}"
    graph.symbolic_values[output] = tuple(items) if isinstance(value, tuple) else items[0]
    local = _remapped(
        graph,
        node,
        found,
        name=f"{node.name}__{block.path}",
        outputs=[output],
        attrs={"symbols": symbols},
    )
    if local is None:
        del graph.symbolic_values[output]
    return local


def _static_where_reshaped(graph: Graph, output: str, items: list, readers: list) -> list:
    """``items`` with each size formula that shape inference found to be a fixed number in the
    result of every reshape reading it replaced by that number: the model only runs where the
    formula has that value (DINOv2's token count, fixed by its position table once the dynamo
    exporter specialised the interpolation away), and the block need not read the formula's
    inputs for it."""
    if not readers or any(
        r.node.op_type != "Reshape" or r.node.inputs[1:2] != [output] for r in readers
    ):
        return items
    fixed = []
    for axis, item in enumerate(items):
        found = {
            (graph.symbolic_shapes.get(r.node.outputs[0]) or ())[axis : axis + 1] for r in readers
        }
        static = (
            len(found) == 1
            and len(next(iter(found))) == 1
            and isinstance(next(iter(found))[0], int)
            and not isinstance(item, int)
            and not (item.is_Symbol or item.is_Integer)
        )
        fixed.append(next(iter(found))[0] if static else item)
    return fixed


def _read_from(
    graph: Graph, dims_: list, candidates: list[str], whole: dict | None = None
) -> tuple[list[str], list[int], list[int]] | None:
    """Where a Dims node reads each named dimension: (tensors, index of each one's tensor, its
    axis), from ``whole`` or the first candidate that has it; None when one is in none."""
    inputs: list[str] = []
    sources, axes = [], []
    for dim in dims_:
        found = (whole or {}).get(dim) or (
            _source_for(graph, dim, candidates) if isinstance(dim, str) else None
        )
        if found is None:
            return None
        if found[0] not in inputs:
            inputs.append(found[0])
        sources.append(inputs.index(found[0]))
        axes.append(found[1])
    return inputs, sources, axes


def _remapped(graph: Graph, node, read: tuple, **changes) -> MappedNode | None:
    """The Dims ``node`` reading its sizes as ``read`` says (see :func:`_read_from`), mapped;
    None when the mapper cannot write it."""
    inputs, sources, axes = read
    attrs = {**node.attrs, "sources": sources, "axes": axes, **changes.pop("attrs", {})}
    moved = replace(node, inputs=inputs, attrs=attrs, **changes)
    try:
        return MappedNode(moved, dims(NodeContext(graph, moved)))
    except Unsupported:
        return None


def _rewire(block: Block, reader: MappedNode, old: str, new: str) -> MappedNode:
    """The reader, reading ``new`` instead of ``old`` (a new node: the graph's stays as it is)."""
    inputs = [new if n == old else n for n in reader.node.inputs]
    rewired = MappedNode(replace(reader.node, inputs=inputs), reader.result, reader.reason)
    block.items[block.items.index(reader)] = rewired
    return rewired


def localize_sizes(graph: Graph, root: Block) -> None:
    """Give each block that reads a size from outside its own copy, computed from its tensors."""
    owners = _owners(root, {})
    all_nodes = root.nodes()
    sizes = {m.node.outputs[0] for m in all_nodes if _is_dims(m)}
    for dims_node in [m for m in all_nodes if _is_dims(m) and m.converted]:
        output = dims_node.node.outputs[0]
        by_block: dict[int, list[MappedNode]] = {}
        for m in root.nodes():
            if output in m.node.inputs:
                by_block.setdefault(id(owners[id(m)]), []).append(m)
        owner = owners[id(dims_node)]
        kept = output in graph.outputs
        for readers in by_block.values():
            block = owners[id(readers[0])]
            copy = None
            if block.path and _needs_copy(dims_node, block, owner, sizes):
                copy = _local_copy(graph, dims_node, block, readers, sizes)
            if copy is None:
                kept = True
                continue
            block.items.insert(block.items.index(readers[0]), copy)
            owners[id(copy)] = block
            for reader in readers:
                owners[id(_rewire(block, reader, output, copy.node.outputs[0]))] = block
            sizes.add(copy.node.outputs[0])
        if not kept:
            owner.items.remove(dims_node)


# a leaf name under which nodes hoisted before a repeated module's loop join its parent
_HOISTED = "#hoisted"  # never a module name: always a leaf

# the scope dynamo gives nodes it adds for its own run-time checks (``sym_size`` reads)
_HOOK_SCOPE = "_empty_nn_module_stack"


def _scoped(node, style: str) -> bool:
    """Whether the exporter recorded a module scope for the node (root-level code included)."""
    if style == "dynamo":
        scopes = node.metadata.get("pkg.torch.onnx.name_scopes", "")
        return bool(scopes) and _HOOK_SCOPE not in scopes
    return node.name.startswith("/")


def _common_path(paths: list[str]) -> str:
    """The innermost module path that contains every one of ``paths``."""
    split = [path.split(".") if path else [] for path in paths]
    common = []
    for parts in zip(*split):
        if len(set(parts)) != 1:
            break
        common.append(parts[0])
    return ".".join(common)


def _place_unscoped(graph: Graph, mapped: list[MappedNode], paths: dict[int, str]) -> None:
    """Nodes the exporter left without a scope (dynamo's fused-qkv ``Split``) join the innermost
    block holding every node they read from and feed, instead of the root, which would cut that
    block in two and dissolve it."""
    if any(m.node.metadata.get("pkg.torch.onnx.name_scopes") for m in mapped):
        style = "dynamo"
    elif any(m.node.name.startswith("/") for m in mapped):
        style = "torchscript"
    else:
        return
    pending = [m for m in mapped if not _scoped(m.node, style)]
    modules = {_parent(paths[id(m)]) for m in mapped if _scoped(m.node, style)}
    modules |= _functional_modules(mapped, paths)  # nn.MultiheadAttention's F.linear calls
    blocks = {path for path in modules for path in _ancestors(path)}
    producer = {out: m for m in mapped for out in m.node.outputs if out}
    readers: dict[str, list[MappedNode]] = {}
    for m in mapped:
        for name in m.node.inputs:
            readers.setdefault(name, []).append(m)

    def owner(m: MappedNode) -> str:
        path = paths[id(m)]
        return path if path in blocks else _parent(path)

    unplaced = {id(m) for m in pending}
    ends = set(graph.inputs) | set(graph.outputs)
    # one pass in execution order (linear work): the unscoped nodes before a node are placed,
    # the ones after it are not yet and do not count
    for m in pending:
        neighbours = [producer[n] for n in m.node.inputs if n in producer]
        neighbours += [r for n in m.node.outputs for r in readers.get(n, [])]
        known = [owner(n) for n in neighbours if id(n) not in unplaced]
        if ends & ({*m.node.inputs, *m.node.outputs}):
            known.append("")  # reads a network input or gives a network output
        paths[id(m)] = _common_path(known) if known else ""
        unplaced.discard(id(m))


def _ancestors(path: str) -> list[str]:
    result = []
    while path:
        result.append(path)
        path = _parent(path)
    return result


def recover_blocks(graph: Graph, mapped: list[MappedNode]) -> Block:
    """The module tree of the model from exporter hints, else from repeated structure; a module
    applied several times in a row with shared weights is one block run in a loop, unless the
    tree cannot keep it as one block."""
    paths = {id(m): module_path(m.node) for m in mapped}
    _place_unscoped(graph, mapped, paths)
    repeats = find_repeats(graph, mapped, paths)
    if repeats:
        root = _blocks(graph, mapped, dict(paths), repeats)
        if _repeats_kept(root, repeats):
            return root
    return _blocks(graph, mapped, paths, [])


def _repeats_kept(root: Block, repeats: list[Repeat]) -> bool:
    """Whether each repeated module is still one block called from a block's ``construct``
    (not dissolved into its parent, not an element of an ``nn.SequentialCell``)."""
    found = {b.path: b for b in _all_blocks(root) if b.repeats > 1}
    if set(found) != {r.path for r in repeats}:
        return False
    return not any(
        b.sequential and any(child.repeats > 1 for child in _all_blocks(b))
        for b in _all_blocks(root)
    )


def _blocks(
    graph: Graph, mapped: list[MappedNode], paths: dict[int, str], repeats: list[Repeat]
) -> Block:
    dropped: set[int] = set()
    for repeat in repeats:
        outer = re.sub(r"(\.\d+)+$", "", repeat.path)  # the module list holding the module
        for m in repeat.hoisted:
            paths[id(m)] = f"{_parent(outer)}.{_HOISTED}" if _parent(outer) else _HOISTED
        dropped.update(id(m) for m in repeat.later)
    mapped = [m for m in mapped if id(m) not in dropped]
    modules: set[str] = set()
    classes: dict[str, str] = {}
    for m in mapped:
        path = paths[id(m)]
        while path:
            modules.add(path)
            path = _parent(path)
        classes.update(module_classes(m.node))
    has_children = {_parent(p) for p in modules} | _functional_modules(mapped, paths)
    root = Block("", "")
    blocks = {"": root}

    def block_for(path: str) -> Block:
        if path not in blocks:
            parent = block_for(_parent(path))
            blocks[path] = Block(path, classes.get(path, ""))
            parent.items.append(blocks[path])
        return blocks[path]

    for m in mapped:
        path = paths[id(m)]
        owner = path if path in has_children else _parent(path)
        block_for(owner).items.append(m)
    for repeat in repeats:
        if repeat.path in blocks:
            blocks[repeat.path].repeats = repeat.count
            blocks[repeat.path].carried = (repeat.carried_in, repeat.first_out, repeat.last_out)
    if not root.child_blocks():
        root = mine_repeated_blocks(graph, mapped)
    _settle(root)
    _hoist_shared_inputs(root, graph, lambda _graph: mapped)
    _hoist_layer_computations(root, graph)
    _hoist_common_computations(root, graph)
    _hoist_sibling_preparations(root, graph)
    _lift_output_crops(root, graph)
    _settle(root)
    _align_repeated_blocks(root)
    localize_sizes(graph, root)
    # after the sizes: a block reading a value for a size it can read elsewhere takes no copy
    _sink_into_reader(root, graph)
    _settle(root)
    mapped = root.nodes()
    # a value is "read outside" a block when a node outside it reads it, or the graph returns it
    readers: dict[str, set[int]] = {}
    for m in mapped:
        for name in m.node.inputs:
            if name:
                readers.setdefault(name, set()).add(id(m))
    # inside a repeated module, its result is read after it: by its next application
    loop_results = {
        id(inner): b.carried[1]
        for b in _all_blocks(root)
        if b.repeats > 1
        for inner in _all_blocks(b)
    }
    for block in _all_blocks(root)[1:]:
        inside = {id(m) for m in block.nodes()}
        outside = {name for name, who in readers.items() if who - inside} | set(graph.outputs)
        if id(block) in loop_results:
            outside.add(loop_results[id(block)])
        _interface(block, graph, outside)
        if block.repeats > 1:
            block.outputs = [block.carried[1]]  # the block gives one application's result
        # arguments: float tensors (hidden states) before masks and ids, then by first use inside;
        # the same for every instance of a repeated block
        block.inputs.sort(key=lambda name: getattr(graph.dtypes.get(name), "kind", "f") != "f")
    share_layer_inputs(root, graph)
    _mark_sequential(root, graph)
    return root


def _functional_modules(mapped: list[MappedNode], paths: dict[int, str]) -> set[str]:
    """Modules without child modules that run two layers or more of their own: a forward in
    functional calls (``nn.MultiheadAttention``'s ``F.linear`` with its projection weights)
    is a block of its own, not a layer of its parent."""
    layers: dict[str, int] = defaultdict(int)
    for m in mapped:
        if isinstance(m.result, Cell) and m.result.weights and paths[id(m)]:
            layers[paths[id(m)]] += 1
        elif m.node.op_type == "SlicedLinear" and m.node.domain == DOMAIN and paths[id(m)]:
            layers[paths[id(m)]] += 1  # a projection with part of the module's own weight
    return {path for path, count in layers.items() if count > 1}


def _align_repeated_blocks(root: Block) -> None:
    """Give every instance of a repeated module (``layers.0``, ``layers.1``...) the item order of
    the first, where its dependencies allow. The TorchScript exporter may order one layer's
    nodes differently from the next (a cross-attention computing ``q`` before or after ``k``),
    which would make their inputs come in a different order and the script define two classes
    for one module, and unroll the layer loop."""
    groups: dict[str, list[Block]] = defaultdict(list)
    for block in _all_blocks(root)[1:]:
        groups[re.sub(r"\.\d+(?=\.|$)", ".#", block.path)].append(block)
    for blocks in groups.values():
        if len(blocks) < 2:
            continue
        template = _item_keys(blocks[0])
        rank = {key: index for index, key in enumerate(template)}
        for block in blocks[1:]:
            keys = _item_keys(block)
            if keys == template or sorted(keys) != sorted(template):
                continue
            aligned = [item for _, item in sorted(zip(keys, block.items), key=lambda p: rank[p[0]])]
            if _in_dependency_order(aligned):
                block.items = aligned


def _item_keys(block: Block) -> list[tuple]:
    """Each item of ``block`` as a key that does not depend on the order of the items: its path
    relative to the block and operator, refined three times by the keys of the items it reads
    from and writes to (so the ``Dims`` shaping ``q`` and the one shaping ``k`` differ), then
    numbered where keys still tie."""
    labels: list = []
    for item in block.items:
        if isinstance(item, Block):
            labels.append((item.path[len(block.path) :], "block"))
        else:
            labels.append((module_path(item.node)[len(block.path) :], item.node.op_type))
    writes = [_writes(item) for item in block.items]
    reads = [_reads(item) for item in block.items]
    producer = {name: index for index, names in enumerate(writes) for name in names}
    sources = [sorted({producer[n] for n in names if n in producer}) for names in reads]
    users: list[list[int]] = [[] for _ in block.items]
    for index, found in enumerate(sources):
        for source in found:
            users[source].append(index)
    texts = [repr(label) for label in labels]
    for _ in range(3):  # each round's label is a digest: sizes stay flat however wide the fan-out
        texts = [
            hashlib.blake2b(
                repr(
                    (
                        texts[i],
                        sorted(texts[j] for j in sources[i]),
                        sorted(texts[j] for j in users[i]),
                    )
                ).encode(),
                digest_size=12,
            ).hexdigest()
            for i in range(len(texts))
        ]
    keys, seen = [], defaultdict(int)
    for text in texts:
        keys.append((text, seen[text]))
        seen[text] += 1
    return keys


def _in_dependency_order(items: list) -> bool:
    """Whether every item comes after the items whose results it reads."""
    written: set[str] = set()
    everything = set().union(*(_writes(item) for item in items)) if items else set()
    for item in items:
        if (_reads(item) & everything) - written:
            return False
        written |= _writes(item)
    return True


def run(graph: Graph, context: PassContext) -> bool:
    """Group the mapped nodes into the module tree code generation renders (``context.tree``)."""
    context.tree = recover_blocks(graph, context.mapped)
    return False
