"""Numbered layers that run one after the other: which input each takes from the one before,
and which inputs and results are each layer's own (a decoder layer's KV cache)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..graph import Graph
from ..graph.module_tree import Block


@dataclass(frozen=True)
class LayerRun:
    """Layer ``i``'s result ``carried_out`` is layer ``i + 1``'s input ``carried_in``; the inputs
    at ``own_inputs`` differ from layer to layer (each its own KV cache, or one of a few values:
    Gemma-2's sliding and global masks, layer by layer), every other input is shared; with
    ``kept``, the carried results are read after the run too (Segformer's stages: the decode
    head reads every stage's feature map)."""

    carried_in: int
    carried_out: int
    own_inputs: tuple[int, ...]
    kept: bool = False


def chained_run(graph: Graph, layers: list[Block]) -> LayerRun | None:
    """How ``layers`` (of one class) chain, or ``None`` when they do not run as a loop would:
    one result feeds the next layer and nothing else there (and may be read after the run);
    the other inputs at each position are the same for every layer or not, and none is made by
    a layer of the run; the other results are read outside the run only."""
    first = layers[0]
    if any(
        len(layer.inputs) != len(first.inputs) or len(layer.outputs) != len(first.outputs)
        for layer in layers
    ):
        return None
    made_inside = {name for layer in layers for name in layer.outputs}
    nodes_of = [{m.node.name for m in layer.nodes()} for layer in layers]
    for carried_in in range(len(first.inputs)):
        for carried_out in range(len(first.outputs)):
            if _feeds_next(graph, layers, nodes_of, carried_in, carried_out):
                own = _own_inputs(layers, carried_in, made_inside)
                if own is None or not _results_leave_the_run(graph, layers, nodes_of, carried_out):
                    continue
                inside = set().union(*nodes_of)
                kept = any(
                    _read_outside(graph, inside, layer.outputs[carried_out])
                    for layer in layers[:-1]
                )
                return LayerRun(carried_in, carried_out, own, kept)
    return None


@dataclass(frozen=True)
class LayerMap:
    """Layers of one class each applied once, none reading another's result (Segformer's
    decode head projects every stage's feature map with a layer of its own): the inputs at
    ``own_inputs`` differ from layer to layer, the others are shared."""

    own_inputs: tuple[int, ...]


def mapped_run(layers: list[Block]) -> LayerMap | None:
    """How ``layers`` (of one class, one result each) apply side by side, or ``None`` when a
    layer reads another's result or they take different numbers of inputs."""
    first = layers[0]
    if any(len(layer.inputs) != len(first.inputs) or len(layer.outputs) != 1 for layer in layers):
        return None
    made = {name for layer in layers for name in layer.outputs}
    own = []
    for position in range(len(first.inputs)):
        names = [layer.inputs[position] for layer in layers]
        if set(names) & made:
            return None
        if len(set(names)) > 1:
            own.append(position)
    return LayerMap(tuple(own))


def _feeds_next(
    graph: Graph, layers: list[Block], nodes_of: list[set[str]], carried_in: int, carried_out: int
) -> bool:
    """Whether each layer's result ``carried_out`` is the next one's input ``carried_in`` and
    no other layer of the run reads it (``nodes_of``: each layer's node names)."""
    first = layers[0]
    carried = first.inputs[carried_in]
    if carried in first.inputs[:carried_in] + first.inputs[carried_in + 1 :]:
        return False
    for index, (layer, following) in enumerate(zip(layers, layers[1:])):
        result = layer.outputs[carried_out]
        readers = {node.name for node in graph.consumer_nodes.get(result, [])}
        read_by = [i for i, nodes in enumerate(nodes_of) if readers & nodes]
        if (
            following.inputs[carried_in] != result
            or any(i != index + 1 for i in read_by)
            or result in following.inputs[:carried_in] + following.inputs[carried_in + 1 :]
        ):
            return False
    return True


def _read_outside(graph: Graph, inside: set[str], result: str) -> bool:
    """Whether something outside the run (a node not ``inside`` it, or the network's outputs)
    reads ``result``."""
    readers = {node.name for node in graph.consumer_nodes.get(result, [])}
    return result in graph.outputs or bool(readers - inside)


def _own_inputs(
    layers: list[Block], carried_in: int, made_inside: set[str]
) -> tuple[int, ...] | None:
    own = []
    for position in range(len(layers[0].inputs)):
        if position == carried_in:
            continue
        names = [layer.inputs[position] for layer in layers]
        if len(set(names)) == 1:
            if names[0] in made_inside:
                return None
            continue
        if set(names) & made_inside:
            return None
        own.append(position)
    return tuple(own)


def _results_leave_the_run(
    graph: Graph, layers: list[Block], nodes_of: list[set[str]], carried_out: int
) -> bool:
    """Whether no layer's other results are read by another layer of the run."""
    for index, layer in enumerate(layers):
        for position, result in enumerate(layer.outputs):
            if position == carried_out:
                continue
            readers = {node.name for node in graph.consumer_nodes.get(result, [])}
            if any(i != index and readers & nodes for i, nodes in enumerate(nodes_of)):
                return False
    return True


def per_layer_base(name: str) -> str:
    """``past_key`` for ``past_key_0``: the name of one layer's item of a per-layer value."""
    return re.sub(r"_?\d+$", "", name) or name
