"""Blocks that differ only in optional parts share one class (issue 26 item 1): a layer only some
instances hold becomes a ``has_<layer>`` flag and its statements run under a guard; a keyword
some instances leave at MindSpore's default becomes an argument with that default."""

from __future__ import annotations

import inspect
from pathlib import Path

import mindspore as ms
import numpy as np
import onnx
import pytest

from mindconverter.codegen.class_variants import KEYWORD_DEFAULTS, common_name, number_label
from mindconverter.codegen.classes import join, merge_classes, signature, unique
from mindconverter.codegen.scope import BlockInstance, ClassBuilder, ClassRef
from mindconverter.graph.module_tree import Block
from tests.helpers import assert_runs_like_onnxruntime, convert_fully

FIXTURES = Path(__file__).parent.parent / "fixtures"


def _conv(builder: ClassBuilder, attr: str, channels: str, stride: str | None) -> list:
    parts: list = [f"self.{attr} = ", "nn.Conv2d(", "out_channels="]
    parts.append(builder.slot("out_channels", attr, channels))
    if stride is not None:
        parts += [", stride=", builder.slot("stride", attr, stride)]
    return parts + [")"]


def _block(path: str, channels: int, stride: int = 1, downsample: bool = False) -> BlockInstance:
    builder = ClassBuilder()
    omitted = None if stride == 1 else str(stride)
    builder.init_lines.append(_conv(builder, "conv1", str(channels), omitted))
    if downsample:
        builder.init_lines.append(_conv(builder, "downsample", str(channels), omitted))
    builder.body.append("out = self.conv1(x)")
    if downsample:
        builder.body.append("x = self.downsample(x)")
    builder.body.append("out = out + x")
    return BlockInstance(Block(path=path, class_hint="BasicBlock"), builder, ["x"], ["out"])


def test_a_block_with_and_without_its_downsample_is_one_class_with_a_flag():
    plain, down = _block("layer1.0", 8), _block("layer2.0", 16, stride=2, downsample=True)
    classes = merge_classes([plain, down])
    (info,) = unique(classes)
    assert info["name"] == "BasicBlock"
    assert signature(info) == ["out_channels", "stride=1", "has_downsample=False"]
    assert info["init"] == [
        "self.conv1 = nn.Conv2d(out_channels=out_channels, stride=stride)",
        "self.downsample = nn.Conv2d(out_channels=out_channels, stride=stride)"
        " if has_downsample else None",
    ]
    assert info["body"] == [
        "out = self.conv1(x)",
        "if self.downsample is not None:",
        "    x = self.downsample(x)",
        "out = out + x",
    ]


def test_instances_pass_only_what_differs_from_the_defaults():
    plain, down = _block("layer1.0", 8), _block("layer2.0", 16, stride=2, downsample=True)
    classes = merge_classes([plain, down])
    parent = ClassBuilder()
    refs = [
        ClassRef(block.key, tuple(parent.slot(*slot).index for slot in block.builder.slots))
        for block in (plain, down)
    ]
    assert join([refs[0]], parent, {}, classes) == "BasicBlock(out_channels=8)"
    assert join([refs[1]], parent, {}, classes) == (
        "BasicBlock(out_channels=16, stride=2, has_downsample=True)"
    )


def test_an_extra_statement_without_an_optional_layer_keeps_classes_apart():
    other = _block("layer2.0", 8)
    other.builder.body.insert(1, "out = ops.softmax(out, axis=-1)")
    assert len(unique(merge_classes([_block("layer1.0", 8), other]))) == 2


@pytest.mark.parametrize("with_first", [True, False])
def test_an_activation_only_some_blocks_apply_is_a_flag(with_first):
    """HF's ResNet conv layers: ``ops.relu`` after the norm, except in a bottleneck's last."""
    plain, activated = _block("layer.0", 8), _block("layer.1", 8)
    activated.builder.body.insert(1, "out = ops.relu(out)")
    blocks = [activated, plain] if with_first else [plain, activated]
    classes = merge_classes(blocks)
    (info,) = unique(classes)
    assert signature(info) == ["relu=False"]
    assert info["init"][-1] == "self.relu = relu"
    assert info["body"] == [
        "out = self.conv1(x)",
        "if self.relu:",
        "    out = ops.relu(out)",
        "out = out + x",
    ]
    assert _calls([plain, activated], classes) == ["BasicBlock()", "BasicBlock(relu=True)"]


def test_a_statement_of_a_layer_every_instance_holds_keeps_classes_apart():
    first, other = _block("layer1.0", 8, downsample=True), _block("layer2.0", 8, downsample=True)
    other.builder.body.remove("x = self.downsample(x)")
    assert len(unique(merge_classes([first, other]))) == 2


def test_blocks_of_other_kinds_never_merge():
    other = _block("layer2.0", 16, stride=2, downsample=True)
    other.block.class_hint = "Bottleneck"
    assert len(unique(merge_classes([_block("layer1.0", 8), other]))) == 2


@pytest.mark.parametrize("cls", sorted(KEYWORD_DEFAULTS))
def test_keyword_defaults_are_mindspores(cls):
    parameters = inspect.signature(getattr(ms.nn, cls.removeprefix("nn.")).__init__).parameters
    for keyword, text in KEYWORD_DEFAULTS[cls].items():
        assert repr(parameters[keyword].default) == text, (cls, keyword)


@pytest.mark.slow
@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_a_resnet_has_one_block_class_and_runs_like_onnxruntime(exporter, tmp_path):
    model = onnx.load(FIXTURES / f"tiny_resnet_{exporter}.onnx")
    name = model.graph.input[0].name
    result = convert_fully(model, tmp_path, shape=[f"{name}=1,3,32,32"])
    code = result.script_path.read_text()
    assert code.count("\nclass ") == 2  # the block and the network
    assert "if self.downsample is not None:" in code
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 32, 32)).astype(np.float32)
        assert_runs_like_onnxruntime(model, result, {name: x})


def test_a_flag_whose_name_is_taken_is_written_as_claimed():
    """An optional layer named ``bias`` beside a cell argument ``has_bias``: the flag is claimed
    as ``has_bias_1`` and ``__init__`` builds the layer on that name."""
    plain, other = _block("layer1.0", 8), _block("layer2.0", 8)
    for block in (plain, other):
        line = block.builder.init_lines[0]
        line[-1:-1] = [", has_bias=", block.builder.slot("has_bias", "conv1", "True")]
    other.builder.init_lines[0][-2] = other.builder.slot("has_bias", "conv1", "False")
    other.builder.init_lines.append(_conv(other.builder, "bias", "8", None))
    other.builder.body.insert(1, "x = self.bias(x)")
    (info,) = unique(merge_classes([plain, other]))
    assert "has_bias" in signature(info) and "has_bias_1=False" in signature(info)
    assert info["init"][-1].endswith(" if has_bias_1 else None")


def _inverted(path: str, channels: int, residual: bool) -> BlockInstance:
    builder = ClassBuilder()
    builder.init_lines.append(_conv(builder, "conv", str(channels), None))
    if residual:
        builder.body += ["conv = self.conv(x)", "out = x + conv"]
        return BlockInstance(Block(path=path, class_hint="Inverted"), builder, ["x"], ["out"])
    builder.body.append("x = self.conv(x)")
    return BlockInstance(Block(path=path, class_hint="Inverted"), builder, ["x"], ["x"])


def test_a_residual_sum_only_some_instances_make_is_a_flag():
    """torchvision's ``use_res_connect``: one class, the sum under ``if self.residual:`` and
    the statements named as in the instance that keeps its input for the sum."""
    plain, residual = _inverted("features.1", 8, False), _inverted("features.2", 16, True)
    classes = merge_classes([plain, residual])
    (info,) = unique(classes)
    assert signature(info) == ["out_channels", "residual=False"]
    assert info["init"][-1] == "self.residual = residual"
    assert info["body"] == ["conv = self.conv(x)", "if self.residual:", "    conv = x + conv"]
    assert info["returns"] == ["conv"]
    parent = ClassBuilder()
    refs = [
        ClassRef(block.key, tuple(parent.slot(*slot).index for slot in block.builder.slots))
        for block in (plain, residual)
    ]
    assert join([refs[0]], parent, {}, classes) == "Inverted(out_channels=8)"
    assert join([refs[1]], parent, {}, classes) == "Inverted(out_channels=16, residual=True)"


def test_a_residual_with_other_statements_keeps_classes_apart():
    plain, residual = _inverted("features.1", 8, False), _inverted("features.2", 8, True)
    plain.builder.body.append("x = ops.relu(x)")
    assert len(unique(merge_classes([plain, residual]))) == 2


@pytest.mark.slow
def test_a_mobilenet_with_and_without_residuals_runs_like_onnxruntime(tmp_path):
    model = onnx.load(FIXTURES / "tiny_mobilenet_dynamo.onnx")
    name = model.graph.input[0].name
    result = convert_fully(model, tmp_path, shape=[f"{name}=1,3,32,32"])
    code = result.script_path.read_text()
    assert "residual=True" in code and "if self.residual:" in code
    for batch in (1, 2):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 32, 32)).astype(np.float32)
        assert_runs_like_onnxruntime(model, result, {name: x})


def test_lines_after_an_omitted_keyword_still_pair():
    """A Parameter line compares by its parts, not by slot numbers that an earlier
    ``stride=2`` shifted (HF ResNet's frozen batch norm scale after its convolution)."""
    blocks = [_block("layer1.0", 8), _block("layer2.0", 16, stride=2)]
    for block in blocks:
        builder = block.builder
        size = builder.slots[0][2]
        builder.init_lines.append(
            ["self.weight = Parameter(ops.zeros((1, ", builder.slot("shape", "weight", size), "))"]
        )
    (info,) = unique(merge_classes(blocks))
    assert signature(info) == ["out_channels", "stride=1"]
    assert info["init"][-1] == "self.weight = Parameter(ops.zeros((1, out_channels))"


def _calls(instances: list[BlockInstance], classes: dict) -> list[str]:
    """How a parent whose literals are its own would instantiate each block."""
    root = ClassBuilder()
    refs = [
        ClassRef(i.key, tuple(root.slot(*slot).index for slot in i.builder.slots))
        for i in instances
    ]
    return [join([ref], root, {}, classes) for ref in refs]


def _stage(path: str, child: BlockInstance) -> BlockInstance:
    """A block holding one child block (a stage holding its first layer)."""
    builder = ClassBuilder()
    slots = tuple(builder.slot(*slot).index for slot in child.builder.slots)
    builder.init_lines.append(["self.layer = ", ClassRef(child.key, slots)])
    builder.body.append("x = self.layer(x)")
    return BlockInstance(Block(path=path, class_hint="Stage"), builder, ["x"], ["x"])


@pytest.mark.parametrize("strided_first", [True, False])
def test_blocks_whose_children_differ_in_a_default_are_one_class(strided_first):
    """Stages whose first layer strides in one and not in another (EfficientNet, MobileNet):
    one stage class passing ``stride`` on, whichever order the stages come in."""
    strides = (2, 1) if strided_first else (1, 2)
    children = [_block(f"stages.{i}.layer", 8 * (i + 1), stride=s) for i, s in enumerate(strides)]
    stages = [_stage(f"stages.{i}", child) for i, child in enumerate(children)]
    classes = merge_classes([children[0], stages[0], children[1], stages[1]])
    assert len(unique(classes)) == 2
    info = classes[stages[0].key]
    assert signature(info) == ["out_channels", "stride=1"]
    assert info["init"] == ["self.layer = BasicBlock(out_channels=out_channels, stride=stride)"]
    calls = _calls(stages, classes)
    assert calls == [
        f"Stage(out_channels={8 * (i + 1)}{', stride=2' if s == 2 else ''})"
        for i, s in enumerate(strides)
    ]


@pytest.mark.parametrize("plain_first", [True, False])
def test_parents_pass_on_the_optional_layers_their_children_differ_by(plain_first):
    """HF's ResNet stages: the first stage's layer has no shortcut, the others have one; the
    stages are one class whose flag is passed on to its layer."""
    children = [_block("stages.0.layer", 8), _block("stages.1.layer", 8, downsample=True)]
    if not plain_first:
        children.reverse()
    stages = [_stage(f"stages.{i}", child) for i, child in enumerate(children)]
    classes = merge_classes([children[0], stages[0], children[1], stages[1]])
    assert len(unique(classes)) == 2
    stage = classes[stages[0].key]
    assert "has_downsample=False" in signature(stage)
    assert "has_downsample=has_downsample" in stage["init"][0]
    calls = _calls(stages if plain_first else stages[::-1], classes)
    assert calls[0] == "Stage()" and calls[1] == "Stage(has_downsample=True)", calls


def test_items_of_one_list_with_classes_of_other_kinds_merge():
    """Hubert's first conv layer (GroupNorm) and the others (none) are two source classes in
    one list: one class with ``has_downsample``-style flag, named by the words they share."""
    first, other = _block("conv_layers.0", 8, downsample=True), _block("conv_layers.1", 8)
    first.block.class_hint, other.block.class_hint = "HubertGroupNormConv", "HubertNoNormConv"
    (info,) = unique(merge_classes([first, other]))
    assert info["name"] == "HubertNormConv"
    assert "has_downsample=False" in signature(info)


def test_blocks_of_other_kinds_outside_one_list_stay_apart():
    first, other = _block("encoder.conv", 8, downsample=True), _block("decoder.conv", 8)
    first.block.class_hint, other.block.class_hint = "EncoderConv", "DecoderConv"
    assert len(unique(merge_classes([first, other]))) == 2


@pytest.mark.parametrize(
    "first, other, name",
    [
        ("HubertGroupNormConvLayer", "HubertNoLayerNormConvLayer", "HubertNormConvLayer"),
        ("BasicBlock", "Bottleneck", "BasicBlock"),
        ("GPTBlock", "GPTLayer", "GPTBlock"),
    ],
)
def test_common_name_keeps_shared_leading_and_trailing_words(first, other, name):
    assert common_name(first, other) == name


def _attention(path: str, heads_size: int) -> BlockInstance:
    """A block whose construct holds a number of its stage (Swin's head size)."""
    builder = ClassBuilder()
    builder.init_lines.append(_conv(builder, "proj", str(heads_size * 2), None))
    builder.body += [
        f"q = ops.reshape(self.proj(x), (-1, 16, 2, {heads_size}))",
        f"scores = ops.matmul(q, q.swapaxes(-1, -2)) / math.sqrt({heads_size})",
    ]
    return BlockInstance(Block(path=path, class_hint="Attention"), builder, ["x"], ["scores"])


def test_numbers_of_construct_that_differ_are_arguments_kept_on_the_cell():
    first, other = _attention("stages.0.attention", 8), _attention("stages.1.attention", 16)
    (info,) = unique(merge_classes([first, other]))
    assert signature(info) == ["out_channels", "head_dim"]
    assert info["init"][-1] == "self.head_dim = head_dim"
    assert info["body"] == [
        "q = ops.reshape(self.proj(x), (-1, 16, 2, self.head_dim))",
        "scores = ops.matmul(q, q.swapaxes(-1, -2)) / math.sqrt(self.head_dim)",
    ]


def test_a_number_that_turns_into_another_kind_keeps_classes_apart():
    first, other = _attention("stages.0.attention", 8), _attention("stages.1.attention", 8)
    other.builder.body[1] = other.builder.body[1].replace("math.sqrt(8)", "math.sqrt(8.5)")
    assert len(unique(merge_classes([first, other]))) == 2


def test_a_number_of_a_child_block_is_passed_on_by_its_parent():
    """Swin's stages: the attention's head size differs per stage, so each stage passes it."""
    children = [_attention(f"stages.{i}.attention", 8 * (i + 1)) for i in range(2)]
    stages = [_stage(f"stages.{i}", child) for i, child in enumerate(children)]
    classes = merge_classes([children[0], stages[0], children[1], stages[1]])
    assert len(unique(classes)) == 2
    info = classes[stages[0].key]
    assert signature(info) == ["out_channels", "head_dim"]
    assert info["init"] == ["self.layer = Attention(out_channels=out_channels, head_dim=head_dim)"]
    calls = _calls(stages, classes)
    assert calls == [
        "Stage(out_channels=16, head_dim=8)",
        "Stage(out_channels=32, head_dim=16)",
    ]


@pytest.mark.slow
def test_swin_stages_are_one_class_passing_their_numbers_and_run_like_onnxruntime(tmp_path):
    """Swin's two stages differ in head size and window count (numbers of construct): one
    stage class, its numbers arguments, the second stage without the optional downsample."""
    model = onnx.load(FIXTURES / "tiny_swin_dynamo.onnx")
    result = convert_fully(model, tmp_path, shape=["pixel_values=1,3,32,32"])
    code = result.script_path.read_text()
    assert code.count("SwinStage(") == 3 and "class SwinStage2" not in code  # class + 2 uses
    assert "self.head_dim = head_dim" in code and "math.sqrt(self.head_dim)" in code
    for batch in (1, 2):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 32, 32)).astype(np.float32)
        assert_runs_like_onnxruntime(model, result, {"pixel_values": x})


@pytest.mark.slow
def test_blocks_that_differ_by_an_activation_run_as_one_class(tmp_path):
    from onnx import helper

    from tests.helpers import assert_matches, make_model

    rng = np.random.default_rng(0)
    nodes, constants, value = [], {}, "x"
    for index, activated in enumerate([True, False, True]):
        scope = f"/layer.{index}"
        constants[f"w{index}"] = rng.standard_normal((4, 4, 3, 3)).astype(np.float32)
        out = f"conv{index}"
        nodes.append(
            helper.make_node(
                "Conv", [value, f"w{index}"], [out], pads=[1, 1, 1, 1], name=f"{scope}/conv/Conv"
            )
        )
        if activated:
            nodes.append(helper.make_node("Relu", [out], [f"act{index}"], name=f"{scope}/Relu"))
            out = f"act{index}"
        value = out
    model = make_model(
        nodes, [("x", np.float32, [1, 4, 6, 6])], [(value, np.float32, None)], constants
    )
    feeds = {"x": rng.standard_normal((1, 4, 6, 6)).astype(np.float32)}
    code = assert_matches(model, tmp_path, feeds).script_path.read_text()
    assert "if self.relu:" in code and "Layer(relu=True)" in code and "Layer2" not in code, code


@pytest.mark.slow
def test_stages_whose_layers_differ_by_a_shortcut_run_as_one_class(tmp_path):
    from onnx import helper

    from tests.helpers import assert_matches, make_model

    rng = np.random.default_rng(0)
    nodes, constants, value = [], {}, "x"
    for index, shortcut in enumerate([False, True, True]):
        scope = f"/stages.{index}/layer"
        constants[f"w{index}"] = rng.standard_normal((4, 4, 3, 3)).astype(np.float32)
        conv = helper.make_node(
            "Conv",
            [value, f"w{index}"],
            [f"c{index}"],
            pads=[1, 1, 1, 1],
            name=f"{scope}/conv/Conv",
        )
        nodes.append(conv)
        skip = value
        if shortcut:
            constants[f"s{index}"] = rng.standard_normal((4, 4, 1, 1)).astype(np.float32)
            skip = f"short{index}"
            scale = f"stages.{index}.layer.shortcut.scale"
            constants[scale] = rng.standard_normal((1, 4, 1, 1)).astype(np.float32)
            nodes += [  # a shortcut block: a 1x1 convolution and a (frozen) norm's scale
                helper.make_node(
                    "Conv", [value, f"s{index}"], [f"p{index}"], name=f"{scope}/shortcut/conv/Conv"
                ),
                helper.make_node("Mul", [f"p{index}", scale], [skip], name=f"{scope}/shortcut/Mul"),
            ]
        nodes.append(
            helper.make_node("Add", [f"c{index}", skip], [f"y{index}"], name=f"{scope}/Add")
        )
        value = f"y{index}"
    model = make_model(
        nodes, [("x", np.float32, [1, 4, 6, 6])], [(value, np.float32, None)], constants
    )
    feeds = {"x": rng.standard_normal((1, 4, 6, 6)).astype(np.float32)}
    code = assert_matches(model, tmp_path, feeds).script_path.read_text()
    assert "has_shortcut=True" in code and "Stage2" not in code, code


def test_an_asymmetric_pad_only_some_blocks_apply_is_a_flag():
    """HF EfficientNet pads before a strided depthwise convolution only."""
    plain, padded = _block("blocks.0", 8), _block("blocks.1", 8)
    padded.builder.body.insert(0, "x = ops.pad(x, (0, 1, 0, 1))")
    (info,) = unique(merge_classes([plain, padded]))
    assert signature(info) == ["pad=False"]
    assert info["body"][:2] == ["if self.pad:", "    x = ops.pad(x, (0, 1, 0, 1))"]


def test_other_calls_and_calls_of_attributes_keep_classes_apart():
    for line in ("x = ops.softmax(x, axis=-1)", "x = ops.pad(x, self.padding)"):
        plain, other = _block("blocks.0", 8), _block("blocks.1", 8)
        other.builder.body.insert(0, line)
        assert len(unique(merge_classes([plain, other]))) == 2, line


def _list_stage(path: str, children: list[BlockInstance]) -> BlockInstance:
    """A stage holding its layers in one list (``nn.SequentialCell([...])``)."""
    builder = ClassBuilder()
    parts: list = ["self.layers = ", "nn.SequentialCell(["]
    for index, child in enumerate(children):
        slots = tuple(builder.slot(*slot).index for slot in child.builder.slots)
        parts += [", "] if index else []
        parts.append(ClassRef(child.key, slots))
    builder.init_lines.append([*parts, "])"])
    builder.body.append("x = self.layers(x)")
    return BlockInstance(Block(path=path, class_hint="Stage"), builder, ["x"], ["x"])


@pytest.mark.parametrize("longer_first", [True, False])
def test_stages_whose_lists_differ_in_length_are_one_class_with_a_depth(longer_first):
    """HF's ResNet: a stage of one layer and one of three (the first with a shortcut, the rest
    one repeated layer): one class writing the rest as a comprehension, ``depth`` its own
    argument though its values agree with another's."""
    one = [_block("stages.0.layers.0", 8, downsample=True)]
    three = [_block("stages.1.layers.0", 16, stride=2, downsample=True)]
    three += [_block(f"stages.1.layers.{i}", 16) for i in (1, 2)]
    stages = [_list_stage("stages.0", one), _list_stage("stages.1", three)]
    order = [*three, stages[1], *one, stages[0]] if longer_first else [*one, stages[0], *three]
    classes = merge_classes(order + ([] if longer_first else [stages[1]]))
    info = classes[stages[0].key]
    assert info is classes[stages[1].key]
    assert "depth" in signature(info)
    assert info["init"] == [
        "self.layers = nn.SequentialCell([BasicBlock(out_channels=out_channels, stride=stride,"
        " has_downsample=True), *[BasicBlock(out_channels=out_channels) for _ in range(depth"
        " - 1)]])"
    ]
    assert _calls(stages, classes) == [
        "Stage(out_channels=8, depth=1)",
        "Stage(out_channels=16, stride=2, depth=3)",
    ]


def test_lists_whose_repeated_layers_differ_keep_stages_apart():
    """The layers after the first differ from each other: not one repeated layer."""
    one = [_block("stages.0.layers.0", 8)]
    three = [_block("stages.1.layers.0", 8), _block("stages.1.layers.1", 8)]
    three.append(_block("stages.1.layers.2", 32))
    stages = [_list_stage("stages.0", one), _list_stage("stages.1", three)]
    classes = merge_classes([*one, stages[0], *three, stages[1]])
    assert classes[stages[0].key] is not classes[stages[1].key]


def test_a_list_of_one_repeated_layer_is_one_comprehension():
    """Every layer of the lists written alike: ``[Layer(...) for _ in range(depth)]``."""
    two = [_block(f"stages.0.layers.{i}", 8) for i in (0, 1)]
    three = [_block(f"stages.1.layers.{i}", 8) for i in (0, 1, 2)]
    stages = [_list_stage("stages.0", two), _list_stage("stages.1", three)]
    classes = merge_classes([*two, stages[0], *three, stages[1]])
    info = classes[stages[0].key]
    assert info["init"] == ["self.layers = nn.SequentialCell([BasicBlock() for _ in range(depth)])"]
    assert _calls(stages, classes) == ["Stage(depth=2)", "Stage(depth=3)"]


def test_several_keywords_one_text_left_out_take_their_defaults():
    """RegNet's 1x1 convolution leaves out stride, padding and group; its 3x3 one sets all
    three: one class."""
    blocks = []
    for path, kernel, extra in (("layer.0", "1", ()), ("layer.1", "3", ("2", "1", "4"))):
        builder = ClassBuilder()
        parts: list = ["self.convolution = ", "nn.Conv2d(", "kernel_size="]
        parts.append(builder.slot("kernel_size", "convolution", kernel))
        if extra:
            parts += [", stride=", builder.slot("stride", "convolution", extra[0])]
        parts += [", pad_mode=", builder.slot("pad_mode", "convolution", "'pad'")]
        for keyword, value in zip(("padding", "group"), extra[1:]):
            parts += [f", {keyword}=", builder.slot(keyword, "convolution", value)]
        builder.init_lines.append([*parts, ")"])
        builder.body.append("x = self.convolution(x)")
        blocks.append(
            BlockInstance(Block(path=path, class_hint="ConvLayer"), builder, ["x"], ["x"])
        )
    (info,) = unique(merge_classes(blocks))
    assert signature(info) == ["kernel_size", "stride=1", "padding=0", "group=1"]


def _unnamed(path: str, stride: int = 1, relu: bool = False) -> BlockInstance:
    """A TorchScript block (no class name): a convolution, maybe an activation after it."""
    block = _block(path, 8, stride=stride)
    block.block.class_hint = ""
    block.builder.body[:] = ["x = self.conv1(x)", *(["x = ops.relu(x)"] if relu else [])]
    block.args[:], block.returns[:] = ["x"], ["x"]
    return block


def test_unnamed_blocks_that_differ_in_literals_alone_share_a_class():
    """TorchScript names HF ResNet's blocks by attribute: the strided ``shortcut`` and the
    ``layer`` items are one class when they differ in literals alone."""
    layer, shortcut = _unnamed("layers.0.layer.0"), _unnamed("layers.0.shortcut", stride=2)
    (info,) = unique(merge_classes([layer, shortcut]))
    assert signature(info) == ["stride=1"]


def test_unnamed_blocks_of_other_attributes_keep_apart_when_they_add_a_part():
    layer, shortcut = _unnamed("layers.0.layer.0"), _unnamed("layers.0.shortcut", relu=True)
    assert len(unique(merge_classes([layer, shortcut]))) == 2


def test_stages_of_other_depths_run_like_onnxruntime(tmp_path):
    """HF's ResNet (TorchScript) with stages of one and two layers: one stage class, at two
    batch sizes."""
    model = onnx.load(FIXTURES / "tiny_hf_resnet_torchscript.onnx")
    result = convert_fully(model, tmp_path, shape=["pixel_values=1,3,32,32"])
    code = result.script_path.read_text()
    assert "class Stage2" not in code and "for _ in range(depth - 1)" in code
    for batch in (1, 2):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 32, 32)).astype(np.float32)
        assert_runs_like_onnxruntime(model, result, {"pixel_values": x})


def _layer(path: str, normed: bool) -> BlockInstance:
    """A pre-norm layer; without its norm it reads its input where the norm's result was."""
    builder = ClassBuilder()
    if normed:
        builder.init_lines.append(["self.attn_norm = ", "nn.LayerNorm((8,))"])
    builder.init_lines.append(["self.attn = ", "nn.Dense(8, 8)"])
    if normed:
        builder.body.append("x = self.attn_norm(hidden_states)")
    builder.body += [
        f"x = self.attn({'x' if normed else 'hidden_states'}, mask)",
        "out = hidden_states + x",
    ]
    return BlockInstance(
        Block(path=path, class_hint="Layer"), builder, ["hidden_states", "mask"], ["out"]
    )


@pytest.mark.parametrize("normed_first", [True, False])
def test_a_layer_some_instances_skip_is_an_identity_in_theirs(normed_first):
    """ModernBERT's first layer has no attention norm (``nn.Identity`` in the source, no node
    in the export): one class calls the norm always and builds an ``nn.Identity()`` without it."""
    plain, normed = _layer("layers.0", False), _layer("layers.1", True)
    classes = merge_classes([normed, plain] if normed_first else [plain, normed])
    (info,) = unique(classes)
    assert signature(info) == ["has_attn_norm=False"]
    assert info["init"][0] == (
        "self.attn_norm = nn.LayerNorm((8,)) if has_attn_norm else nn.Identity()"
    )
    assert info["body"] == [
        "x = self.attn_norm(hidden_states)",
        "x = self.attn(x, mask)",
        "out = hidden_states + x",
    ]
    assert _calls([plain, normed], classes) == ["Layer()", "Layer(has_attn_norm=True)"]


def test_a_layer_whose_input_is_read_otherwise_keeps_classes_apart():
    """Without the norm the text reads ``hidden_states`` where the other reads the norm's
    result, but also elsewhere: skipping the norm does not give that text."""
    plain, normed = _layer("layers.0", False), _layer("layers.1", True)
    plain.builder.body[-1] = "out = x + x"
    assert len(unique(merge_classes([plain, normed]))) == 2


def test_layers_that_skip_the_rotary_turn_are_one_class_with_a_flag(tmp_path):
    """SmolLM3's fourth layer turns no q and k by the rotary tables: it takes them all the
    same, and the four layers are one class applying the turn under ``use_rope``, run in one
    loop, matching onnxruntime at two sequence lengths."""
    model = onnx.load(str(FIXTURES / "tiny_smollm3_torchscript.onnx"))
    result = convert_fully(model, tmp_path, shape=["1,5"], verify=True)
    code = result.script_path.read_text()
    assert "class SelfAttention2" not in code and "class Layer2" not in code, code
    assert (
        "        if self.use_rope:\n            q, k = apply_rotary_pos_emb(q, k, cos, sin)\n"
        in code
    )
    flat = " ".join(code.split())
    assert "[Layer(use_rope=True), Layer(use_rope=True), Layer(use_rope=True), Layer()]" in flat
    assert "for layer in self.layers:" in code and "self.layers[" not in code, code
    assert result.verification["ok"] and len(result.verification["shapes"]) == 2
    tokens = np.random.default_rng(0).integers(1, 32, (2, 7)).astype(np.int64)
    assert_runs_like_onnxruntime(model, result, {"input_ids": tokens})


@pytest.mark.parametrize(
    ("before", "label"),
    [
        ("scores = ops.matmul(q, k) / math.sqrt(", "head_dim"),
        ("x = ops.pad(x, (", "pad_size"),
        ("x = ops.pad(x, (0, ", "pad_size"),
        ("x = roll(x, (-2, ", "shift"),
        ("x = ops.reshape(x, (batch_size, ", "size"),
        ("x = ops.pad(ops.reshape(x, (1, 2)), (", "pad_size"),
        ("x = ops.reshape(ops.pad(x, (1, 1)), (", "size"),
        ("x = x[:, ", "size"),
    ],
)
def test_a_number_that_differs_is_named_by_the_call_holding_it(before, label):
    """A number two instances of a class hold differently becomes an argument named by the
    call whose arguments hold it (EfficientNet's pad amounts: ``pad_size``, not ``size``)."""
    assert number_label(before) == label
