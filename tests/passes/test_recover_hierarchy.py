"""The module tree recovered from exporter hints (dynamo metadata, TorchScript scopes)."""

from __future__ import annotations

from pathlib import Path

import onnx

from mindconverter.graph import Graph
from mindconverter.graph.module_tree import Block
from mindconverter.graph.specs import detect_inputs
from mindconverter.mappers.registry import default_registry
from mindconverter.passes import recover_hierarchy
from mindconverter.passes.context import PassContext
from mindconverter.passes.fix_shapes import parse_shape_request
from mindconverter.passes.pipeline import PIPELINE, run_passes

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _tree(fixture: str) -> Block:
    graph = Graph(onnx.load(FIXTURES / fixture))
    context = PassContext(default_registry(), shapes=[parse_shape_request("1,3,32,32")])
    context.input_specs = detect_inputs(graph.model)
    upto = [step.name for step in PIPELINE].index("recover the module hierarchy")
    run_passes(graph, context, PIPELINE[:upto])
    assert recover_hierarchy.run(graph, context) is False  # it reads the graph, never edits it
    return context.tree


def _children(block: Block) -> dict[str, Block]:
    return {item.name: item for item in block.items if isinstance(item, Block)}


def test_dynamo_hints_give_the_source_modules_and_classes():
    tree = _tree("tiny_resnet_dynamo.onnx")
    children = _children(tree)
    assert {"layer1", "layer2", "layer3"} <= set(children)
    blocks = _children(children["layer1"])
    assert set(blocks) == {"0", "1"}
    assert {block.class_hint for block in blocks.values()} == {"BasicBlock"}
    assert children["layer1"].sequential


def test_every_mapped_node_is_in_the_tree_once():
    graph_nodes = _tree("tiny_resnet_torchscript.onnx").nodes()
    names = [mapped.node.name for mapped in graph_nodes]
    assert len(names) == len(set(names)) > 20


def test_torchscript_scopes_give_the_module_paths():
    children = _children(_tree("tiny_resnet_torchscript.onnx"))
    assert {"layer1", "layer2", "layer3"} <= set(children)
