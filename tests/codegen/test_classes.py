"""Identical block instances share a class; literals that differ become constructor arguments."""

from __future__ import annotations

from mindconverter.codegen.classes import class_hint_from_path, join, merge_classes
from mindconverter.codegen.naming import class_name
from mindconverter.codegen.scope import BlockInstance, ClassBuilder
from mindconverter.graph.module_tree import Block


def _instance(path: str, channels: int) -> BlockInstance:
    builder = ClassBuilder()
    slot = builder.slot("out_channels", "conv", str(channels))
    stride = builder.slot("stride", "conv", "1")
    builder.init_lines.append(
        ["self.conv = nn.Conv2d(out_channels=", slot, ", stride=", stride, ")"]
    )
    builder.body.append("x = self.conv(x)")
    block = Block(path=path, class_hint="BasicBlock")
    return BlockInstance(block, builder, ["x"], ["x"])


def test_instances_with_the_same_text_share_one_class_with_arguments():
    first, second = _instance("layer1.0", 8), _instance("layer1.1", 16)
    classes = merge_classes([first, second])
    assert len(classes) == 1
    (info,) = classes.values()
    assert info["name"] == "BasicBlock"
    assert list(info["params"].values()) == ["out_channels"]  # stride is the same everywhere
    assert info["init"] == ["self.conv = nn.Conv2d(out_channels=out_channels, stride=1)"]
    assert info["doc"] == "Recovered from layer1.0, layer1.1."


def test_different_structure_gives_different_classes():
    other = _instance("layer2.0", 8)
    other.builder.body.append("x = ops.softmax(x, axis=-1)")
    classes = merge_classes([_instance("layer1.0", 8), other])
    assert sorted(info["name"] for info in classes.values()) == ["BasicBlock", "BasicBlock2"]


def test_join_fills_slots_with_arguments_or_literals():
    instance = _instance("layer1.0", 8)
    line = instance.builder.init_lines[0]
    assert join(line, instance.builder, {}, {}) == "self.conv = nn.Conv2d(out_channels=8, stride=1)"
    assert join(line, instance.builder, {0: "width"}, {}) == (
        "self.conv = nn.Conv2d(out_channels=width, stride=1)"
    )


def test_class_hints_spell_out_attributes_and_take_a_lists_item_in_the_singular():
    assert class_name(class_hint_from_path("model.layers.0.self_attn")) == "SelfAttention"
    assert class_name(class_hint_from_path("model.layers.3")) == "Layer"
    assert class_name(class_hint_from_path("transformer.h.0")) == "HBlock"
    assert class_name(class_hint_from_path("model.layers.0.mlp")) == "MLP"
    assert class_name(class_hint_from_path("encoder.layer.1")) == "Layer"
    # BERT's attention.self (a TorchScript export keeps no class names): named as HF names it
    assert class_name(class_hint_from_path("encoder.layer.0.attention.self")) == "SelfAttention"


def test_a_list_item_around_one_module_is_named_after_it():
    """T5's ``layer.0`` (TorchScript keeps no class names) holds SelfAttention and its norm."""
    hint = class_hint_from_path("encoder.block.0.layer.1", "DenseReluDense")
    assert class_name(hint) == "DenseReluDenseLayer"
    assert class_name(class_hint_from_path("encoder.block.0", "")) == "Block"
