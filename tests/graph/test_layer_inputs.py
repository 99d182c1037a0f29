"""Layers of one list take the values their siblings share, also where they do not read them."""

from __future__ import annotations

import numpy as np
from onnx import helper

from mindconverter.graph import Graph
from mindconverter.graph.internal_domain import DOMAIN
from mindconverter.graph.layer_inputs import share_layer_inputs
from mindconverter.graph.module_tree import Block
from mindconverter.graph.node import Node
from mindconverter.mappers.base import MappedNode
from tests.helpers import make_model


def _graph() -> Graph:
    """A graph declaring the values the trees below pass around: hidden states, rotary tables
    and two boolean masks, a cache per layer."""
    floats = ["h0", "h1", "h2", "h3", "cos", "sin", "k0", "k1", "k2"]
    inputs = [(name, np.float32, ["b", 4]) for name in floats]
    inputs += [(name, np.bool_, ["b", 4]) for name in ("near", "far")]
    node = helper.make_node("Identity", ["h0"], ["y"])
    return Graph(make_model([node], inputs, [("y", np.float32, ["b", 4])]))


def _layer(index: int, inputs: list[str], attention_inputs: list[str]) -> Block:
    """A layer whose attention turns q and k by the tables among its inputs, if any."""
    tables = [name for name in attention_inputs if name in ("cos", "sin")]
    turn = Node(f"rotary{index}", "ApplyRotaryPair", DOMAIN, {}, ["q", "k", *tables], ["r"])
    attention = Block(
        f"layers.{index}.self_attn",
        items=[MappedNode(turn)] if tables else [],
        inputs=attention_inputs,
        outputs=[f"a{index}"],
    )
    return Block(f"layers.{index}", items=[attention], inputs=inputs, outputs=[f"h{index + 1}"])


def test_a_layer_skipping_the_rotary_tables_takes_them_down_to_its_attention():
    """The rotary tables every other layer reads reach the no-rotary layer and its attention
    at the positions they have there; its own cache and its own mask stay where they were."""
    layers = [
        _layer(0, ["h0", "cos", "sin", "k0", "near"], ["h0", "cos", "sin", "k0", "near"]),
        _layer(1, ["h1", "cos", "sin", "k1", "near"], ["h1", "cos", "sin", "k1", "near"]),
        _layer(2, ["h2", "k2", "far"], ["h2", "k2", "far"]),
    ]
    root = Block("", items=[Block("layers", items=layers)])
    share_layer_inputs(root, _graph())
    assert layers[2].inputs == ["h2", "cos", "sin", "k2", "far"]
    assert layers[2].items[0].inputs == ["h2", "cos", "sin", "k2", "far"]
    assert layers[0].inputs == ["h0", "cos", "sin", "k0", "near"]


def test_values_one_layer_reads_alone_are_not_passed_on():
    """A table only the widest layer reads is not handed to the others."""
    layers = [
        _layer(0, ["h0", "cos", "k0"], ["h0", "cos", "k0"]),
        _layer(1, ["h1", "k1"], ["h1", "k1"]),
    ]
    root = Block("", items=[Block("layers", items=layers)])
    share_layer_inputs(root, _graph())
    assert layers[1].inputs == ["h1", "k1"]


def test_inputs_that_would_stand_for_values_of_another_kind_are_left_alone():
    """Passing the tables would leave the layer's boolean mask where a float value stands in
    the others: the layers keep their inputs."""
    layers = [
        _layer(0, ["h0", "cos", "sin", "k0"], ["h0", "cos", "sin", "k0"]),
        _layer(1, ["h1", "cos", "sin", "k1"], ["h1", "cos", "sin", "k1"]),
        _layer(2, ["h2", "far"], ["h2", "far"]),
    ]
    root = Block("", items=[Block("layers", items=layers)])
    share_layer_inputs(root, _graph())
    assert layers[2].inputs == ["h2", "far"]


def test_values_read_otherwise_than_to_turn_q_and_k_are_not_passed_on():
    """A mask the other layers read and this one does not (ModernBERT's global layers read no
    sliding mask) is not handed to it: only rotary tables are."""
    layers = [
        _layer(0, ["h0", "near"], ["h0", "near"]),
        _layer(1, ["h1", "near"], ["h1", "near"]),
        _layer(2, ["h2"], ["h2"]),
    ]
    root = Block("", items=[Block("layers", items=layers)])
    share_layer_inputs(root, _graph())
    assert layers[2].inputs == ["h2"]


def test_a_layer_turning_by_tables_of_its_own_keeps_its_inputs():
    """ModernBERT's global layers turn q and k by tables of their own: they take none of the
    tables the local layers read (though a float bias would stand where the local mask does)."""
    layers = [
        _layer(0, ["h0", "cos", "sin", "k2"], ["h0", "cos", "sin", "k2"]),
        _layer(1, ["h1", "cos", "sin", "k2"], ["h1", "cos", "sin", "k2"]),
        _layer(2, ["h2", "k0", "k1"], ["h2", "k0", "k1"]),
    ]
    own_turn = Node("rotary_own", "ApplyRotaryPair", DOMAIN, {}, ["q", "k", "k0", "k1"], ["r"])
    layers[2].items[0].items.append(MappedNode(own_turn))
    root = Block("", items=[Block("layers", items=layers)])
    share_layer_inputs(root, _graph())
    assert layers[2].inputs == ["h2", "k0", "k1"]


def test_tables_made_after_a_layer_runs_are_not_passed_to_it():
    """The exporter computes the tables where the first layer reading them runs: a layer
    running before that cannot take them."""
    first = _layer(0, ["h0", "k0", "far"], ["h0", "k0", "far"])
    first.items[0].items.append(MappedNode(Node("own", "Relu", "", {}, ["k0"], ["k1"])))
    tables = [Node(f"make_{n}", "Neg", "", {}, ["h1"], [n]) for n in ("cos", "sin")]
    later = [
        _layer(1, ["h1", "cos", "sin", "k1", "near"], ["h1", "cos", "sin", "k1", "near"]),
        _layer(2, ["h2", "cos", "sin", "k2", "near"], ["h2", "cos", "sin", "k2", "near"]),
    ]
    listed = Block("layers", items=[first, *map(MappedNode, tables), *later])
    share_layer_inputs(Block("", items=[listed]), _graph())
    assert first.inputs == ["h0", "k0", "far"]
