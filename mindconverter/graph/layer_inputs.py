"""Layers of one list that take the same inputs: a value some layers read and others skip.

SmolLM3 and EXAONE-4 turn q and k by the rotary tables in three layers of four; the fourth
reads no table, so its export takes fewer inputs and could not be the same class as the
others. Passing the tables to every layer, down to the module that reads them in the others,
lets the layers be one class that applies the rotation under a flag, as the source does.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations

from .graph import Graph
from .internal_domain import DOMAIN
from .module_tree import Block

_ROTARY_OPS = {"ApplyRotary", "ApplyRotaryPair"}


def share_layer_inputs(root: Block, graph: Graph) -> None:
    """Give each numbered layer that turns nothing by rotary tables the tables its widest
    sibling takes from their parent (at the same positions), and likewise its children that
    correspond by name. Only values two layers or more read, made before the layer runs, are
    passed on (ModernBERT's global layers turn by tables of their own and take no other)."""
    order = root.nodes()  # the order the script runs them in
    made_at = {name: index for index, m in enumerate(order) for name in m.node.outputs}
    runs_at = {id(m): index for index, m in enumerate(order)}
    stack = [root]
    while stack:
        block = stack.pop()
        stack.extend(block.child_blocks())
        layers = [child for child in block.child_blocks() if child.name.isdigit()]
        if len(layers) < 2:
            continue
        widest = max(layers, key=lambda layer: len(layer.inputs))
        made = {name for layer in layers for name in layer.outputs}
        readers = Counter(name for layer in layers for name in set(layer.inputs))
        shared = {name for name, count in readers.items() if count > 1 and name not in made}
        for layer in layers:
            if layer is widest or any(_turns_only(layer, name) for name in layer.inputs):
                continue  # a layer turning q and k by tables of its own keeps them
            start = min((runs_at[id(m)] for m in layer.nodes()), default=0)
            ready = {name for name in shared if made_at.get(name, -1) < start}
            _widen(graph, layer, widest, ready)


def _widen(graph: Graph, block: Block, like: Block, shared: set[str]) -> None:
    """``block`` takes the ``shared`` inputs of ``like`` it lacks, at their positions there,
    when its own inputs fill the other positions one for one, each like the one it stands
    for (dtype and rank: EXAONE-4's global layer reads a mask of its own where the others
    read the sliding one)."""
    count = len(like.inputs) - len(block.inputs)
    candidates = [
        name
        for name in like.inputs
        if name in shared and name not in block.inputs and _turns_only(like, name)
    ]
    if count <= 0 or count > len(candidates):
        return
    for missing in combinations(candidates, count):
        kept = [name for name in like.inputs if name not in missing]
        if all(_alike(graph, a, b) for a, b in zip(kept, block.inputs)):
            break
    else:
        return
    remaining = iter(block.inputs)
    block.inputs = [name if name in missing else next(remaining) for name in like.inputs]
    theirs = {child.name: child for child in like.child_blocks()}
    for child in block.child_blocks():
        counterpart = theirs.get(child.name)
        if counterpart is not None:
            _widen(graph, child, counterpart, set(missing) & set(counterpart.inputs))


def _turns_only(block: Block, name: str) -> bool:
    """Whether ``block`` reads ``name`` only to turn q and k by it (a rotary table): the one
    part a merged class can apply under a flag."""
    readers = [m.node for m in block.nodes() if name in m.node.inputs]
    return bool(readers) and all(
        node.domain == DOMAIN and node.op_type in _ROTARY_OPS for node in readers
    )


def _alike(graph: Graph, a: str, b: str) -> bool:
    """Values of one dtype and rank."""
    shapes = graph.symbolic_shapes
    same_rank = len(shapes.get(a) or ()) == len(shapes.get(b) or ())
    return graph.dtypes.get(a) == graph.dtypes.get(b) and same_rank
