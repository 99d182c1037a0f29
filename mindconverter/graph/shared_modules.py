"""A module applied several times in a row with the same weights (ALBERT's one shared layer).

Exporters unroll ``for _ in range(n): hidden = self.layer(hidden, mask)`` into ``n`` copies of
the layer's nodes under one module path (TorchScript suffixes the repeated leaf modules:
``query``, ``query_1``...). :func:`find_repeats` finds such runs: the nodes under a path cut
into ``n`` equal parts that are the same operators with the same attributes and the same
weights (compared by value), each reading what the one before it gave through one carried
value and everything else from the same outside values. Code generation then writes the first
application once and calls it ``n`` times.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .graph import Graph


@dataclass(frozen=True)
class Repeat:
    """``count`` applications of the nodes of ``path`` (``first`` holds the first one's nodes);
    the carried value goes in as ``carried_in`` and comes out of the first as ``first_out`` and
    of the last as ``last_out``."""

    path: str
    count: int
    first: tuple[Any, ...]
    later: tuple[Any, ...]
    carried_in: str
    first_out: str
    last_out: str
    hoisted: tuple[Any, ...] = ()  # computed once for every application, before the loop


def find_repeats(graph: Graph, mapped: list, paths: dict[int, str]) -> list[Repeat]:
    """The outermost module paths whose nodes are repeated applications of one module."""
    readers: dict[str, set[int]] = {}
    for m in mapped:
        for name in m.node.inputs:
            if name:
                readers.setdefault(name, set()).add(id(m))
    under: dict[str, list] = {}
    for m in mapped:
        path = paths[id(m)]
        while path:
            under.setdefault(path, []).append(m)
            path = path.rsplit(".", 1)[0] if "." in path else ""
    found: list[Repeat] = []
    taken: set[int] = set()
    for path in sorted(under, key=lambda p: (p.count("."), p)):
        nodes = under[path]
        if any(id(m) in taken for m in nodes):
            continue  # inside a repeat already found
        repeat = _split(graph, path, nodes, paths, readers)
        if repeat is not None:
            found.append(replace(repeat, path=_applied_module(path, repeat, paths)))
            taken.update(id(m) for m in nodes)
    return found


def _applied_module(path: str, repeat: Repeat, paths: dict[int, str]) -> str:
    """The module applied: into a list of modules holding only it (``albert_layer_groups`` ->
    ``albert_layer_groups.0``), the module the source calls in its loop."""
    nodes = repeat.first + repeat.later
    while True:
        heads = {paths[id(m)][len(path) + 1 :].split(".", 1)[0] for m in nodes}
        if len(heads) != 1:
            return path
        head = heads.pop()
        if not head.isdigit() or any(not paths[id(m)].startswith(f"{path}.{head}") for m in nodes):
            return path
        path = f"{path}.{head}"


def _signature(m, path: str, paths: dict[int, str]) -> tuple:
    relative = paths[id(m)][len(path) :]
    relative = re.sub(r"_\d+(?=\.|$)", "", relative)  # TorchScript's query_1 for a second call
    attrs = tuple(sorted((k, _attribute_key(v)) for k, v in m.node.attrs.items()))
    return m.node.op_type, m.node.domain, relative, attrs


def _attribute_key(value: Any) -> str:
    """An attribute compared whole: tensors by their bytes (numpy's repr elides large ones)."""
    if isinstance(value, np.ndarray):
        digest = hashlib.blake2b(np.ascontiguousarray(value).tobytes(), digest_size=16)
        return f"{value.dtype}{value.shape}{digest.hexdigest()}"
    return repr(value)


def _split(
    graph: Graph, path: str, nodes: list, paths: dict[int, str], readers: dict[str, set[int]]
) -> Repeat | None:
    signature = {id(m): _signature(m, path, paths) for m in nodes}
    counts = Counter(signature.values())
    first = next((signature[id(m)] for m in nodes if counts[signature[id(m)]] > 1), None)
    if first is None:  # no operator repeats: no call repeats
        return None
    hoisted: list = []
    for _ in range(2):  # cut, hoist what the first part computes for every part, cut again
        starts = [i for i, m in enumerate(nodes) if signature[id(m)] == first]
        if len(starts) < 2:
            return None
        shared = _shared_preparation(nodes, starts[1], readers)
        if not shared:
            break
        hoisted += [m for m in nodes if id(m) in shared]
        nodes = [m for m in nodes if id(m) not in shared]
    count = len(starts)
    if len(nodes) % count:
        return None
    size = len(nodes) // count
    parts = [nodes[i * size : (i + 1) * size] for i in range(count)]
    if any(signature[id(parts[0][i])] != signature[id(part[i])]
           for part in parts[1:] for i in range(size)):  # fmt: skip
        return None
    repeat = _chained(graph, path, parts, readers)
    return None if repeat is None else replace(repeat, hoisted=tuple(hoisted))


def _shared_preparation(nodes: list, end: int, readers: dict[str, set[int]]) -> set[int]:
    """Nodes of the first part that read only values from outside the module (or other such
    nodes) and whose results later parts read too: a mask or a size the exporter computed once
    for every application (duplicates merged into the first). They run before the loop."""
    under = {out for m in nodes for out in m.node.outputs if out}
    later = {id(m) for m in nodes[end:]}
    shared: set[int] = set()
    made: set[str] = set()
    for m in nodes[:end]:
        reads = [name for name in m.node.inputs if name]
        if all(name not in under or name in made for name in reads) and any(
            readers.get(out, set()) & later for out in m.node.outputs if out
        ):
            shared.add(id(m))
            made.update(out for out in m.node.outputs if out)
    return shared


def _chained(
    graph: Graph, path: str, parts: list[list], readers: dict[str, set[int]]
) -> Repeat | None:
    """The repeat when every part reads what the one before gave through one value, and the
    same outside values and weights otherwise."""
    slots = [_slots(part) for part in parts]
    carried: tuple | None = None  # (the first part's outside input, the output slot it takes)
    for i, reads in enumerate(slots[0]):
        for j in range(len(reads)):
            kinds = [slot[i][j] for slot in slots]
            if all(kind == kinds[0] for kind in kinds):
                continue  # the same node inside, or the same outside value, in every part
            if kinds[0][0] == "outside" and graph.constants.get(kinds[0][1]) is not None:
                if all(
                    k[0] == "outside" and _same_constant(graph, kinds[0][1], k[1]) for k in kinds
                ):
                    continue  # a weight the exporter copied per application
                return None
            link = _link(kinds, parts)
            if link is None or (carried is not None and carried != link):
                return None
            carried = link
    if carried is None:
        return None
    outside_in, (node_index, output_index) = carried
    if any(outside_in in m.node.inputs for part in parts[1:] for m in part):
        return None  # later calls read the first input itself too: not one carried value
    outs = [part[node_index].node.outputs[output_index] for part in parts]
    if not _only_chained_reads(graph, parts, outs, readers):
        return None
    return Repeat(
        path=path,
        count=len(parts),
        first=tuple(parts[0]),
        later=tuple(m for part in parts[1:] for m in part),
        carried_in=outside_in,
        first_out=outs[0],
        last_out=outs[-1],
    )


def _slots(part: list) -> list[list[tuple]]:
    """Each input of each node: ``("inside", node, output)`` or ``("outside", name)``."""
    made = {out: (i, j) for i, m in enumerate(part) for j, out in enumerate(m.node.outputs) if out}
    return [
        [("inside", *made[name]) if name in made else ("outside", name) for name in m.node.inputs]
        for m in part
    ]


def _link(kinds: list[tuple], parts: list[list]) -> tuple | None:
    """``(outside name, (node, output))`` when the first part reads an outside value where
    every later part reads the same output of the part before it."""
    if kinds[0][0] != "outside":
        return None
    slot = None
    for index, kind in enumerate(kinds[1:], start=1):
        previous = parts[index - 1]
        position = next(
            ((i, j) for i, m in enumerate(previous) for j, out in enumerate(m.node.outputs)
             if out and out == kind[1]),
            None,
        ) if kind[0] == "outside" else None  # fmt: skip
        if position is None or (slot is not None and slot != position):
            return None
        slot = position
    return (kinds[0][1], slot) if slot is not None else None


def _same_constant(graph: Graph, first: str, other: str) -> bool:
    a, b = graph.constants.get(first), graph.constants.get(other)
    return (
        a is not None
        and b is not None
        and a.shape == b.shape
        and a.dtype == b.dtype
        and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    )


def _only_chained_reads(
    graph: Graph, parts: list[list], outs: list[str], readers: dict[str, set[int]]
) -> bool:
    """Nothing outside a part reads its values but the next part its carried output; after the
    last part, the rest of the network reads that output only."""
    members = [{id(m) for m in part} for part in parts]
    everything = set().union(*members)
    for index, part in enumerate(parts):
        for m in part:
            for out in m.node.outputs:
                if not out:
                    continue
                outside = readers.get(out, set()) - members[index]
                returned = out in graph.outputs
                if out != outs[index]:
                    if outside or returned:
                        return False
                elif index < len(parts) - 1:
                    if returned or not outside <= members[index + 1]:
                        return False
                elif outside & everything:
                    return False
    return True
