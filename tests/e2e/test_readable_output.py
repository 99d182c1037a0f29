"""Issue 5: recovered hierarchy, source names, clean and formatted code, GRAPH_MODE and MindIR."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from mindconverter import convert
from mindconverter.check.network import build_network
from tests.e2e.zoo import randomized_light_model

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _classes(code: str) -> dict[str, int]:
    """Recovered classes and how many times each is instantiated."""
    names = re.findall(r"^class (\w+)\(nn\.Cell\):", code, flags=re.MULTILINE)
    return {
        name: len(re.findall(rf"\b{name}\(", code)) - 1
        for name in names
        if name != "MindSporeModel"
    }


@pytest.mark.parametrize(
    "name, block",
    [("tiny_resnet_dynamo", "BasicBlock"), ("tiny_mobilenet_dynamo", "InvertedResidual")],
)
def test_dynamo_metadata_gives_source_classes(tmp_path, name, block):
    result = convert(FIXTURES / f"{name}.onnx", shape=["1,3,32,32"], output=tmp_path, verify=True)
    code = result.script_path.read_text()
    classes = _classes(code)
    assert block in classes
    assert "nn.SequentialCell(" in code


def test_blocks_are_reused_with_constructor_arguments(tmp_path):
    result = convert(FIXTURES / "tiny_resnet_dynamo.onnx", shape=["1,3,32,32"], output=tmp_path)
    code = result.script_path.read_text()
    classes = _classes(code)
    assert classes == {"BasicBlock": 6}, classes  # blocks with and without a downsample
    assert re.search(
        r"class BasicBlock\(nn\.Cell\):.*?def __init__\(\s*self, in_channels, out_channels, "
        r"stride=1, has_downsample=False\s*\)",
        code,
        flags=re.DOTALL,
    )


def test_checkpoint_names_follow_the_source_state_dict(tmp_path):
    result = convert(FIXTURES / "tiny_resnet_dynamo.onnx", shape=["1,3,32,32"], output=tmp_path)
    rows = json.loads(result.weight_map_path.read_text())["tiny_resnet_dynamo"]
    model = onnx.load(str(FIXTURES / "tiny_resnet_dynamo.onnx"))
    # names the exporter kept from the state dict (it also synthesises e.g. "conv1.weight_bias"
    # when it folds a BatchNorm into a Conv: those are not source names)
    suffixes = (".weight", ".bias", ".running_mean", ".running_var")
    kept = {init.name for init in model.graph.initializer if init.name.endswith(suffixes)}
    relevant = [row for row in rows if row["source_weight"]["name"] in kept]
    same = [
        row for row in relevant if row["converted_weight"]["name"] == row["source_weight"]["name"]
    ]
    assert len(relevant) >= 16
    assert len(same) / len(relevant) >= 0.8, [
        (r["converted_weight"]["name"], r["source_weight"]["name"]) for r in relevant
    ]


def test_torchscript_scopes_give_blocks_and_names(tmp_path):
    result = convert(
        FIXTURES / "tiny_resnet_torchscript.onnx", shape=["1,3,32,32"], output=tmp_path, verify=True
    )
    code = result.script_path.read_text()
    assert max(_classes(code).values()) >= 3
    rows = json.loads(result.weight_map_path.read_text())["tiny_resnet_torchscript"]
    names = {row["converted_weight"]["name"] for row in rows}
    assert {
        "conv1.weight",
        "layer1.0.conv1.weight",
        "layer2.0.downsample.0.weight",
        "fc.weight",
    } <= names


@pytest.mark.slow
def test_repeated_structure_is_found_without_hints(tmp_path):
    model_file = tmp_path / "light_resnet50.onnx"
    onnx.save(randomized_light_model("light_resnet50"), str(model_file))
    result = convert(model_file, output=tmp_path / "out", verify=True)
    classes = _classes(result.script_path.read_text())
    assert max(classes.values()) >= 3, classes


@pytest.mark.parametrize("name", ["tiny_resnet_dynamo", "tiny_mobilenet_torchscript"])
def test_script_is_ruff_clean_and_formatted(tmp_path, name):
    result = convert(FIXTURES / f"{name}.onnx", shape=["1,3,32,32"], output=tmp_path)
    for command in (
        ["check", "--isolated"],
        ["format", "--check", "--isolated"],
    ):
        run = subprocess.run(
            [sys.executable, "-m", "ruff", *command, str(result.script_path)],
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0, run.stdout + run.stderr
    code = result.script_path.read_text()
    assert not re.search(r"\d\.\d*9999\d|\d\.\d*0000\d", code), "float noise"


@pytest.mark.parametrize("name", ["tiny_resnet_dynamo", "tiny_mobilenet_torchscript"])
def test_graph_mode_and_mindir_export(tmp_path, name):
    import mindspore as ms

    result = convert(FIXTURES / f"{name}.onnx", shape=["1,3,32,32"], output=tmp_path)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = build_network(result.script_path, result.checkpoint_path)
        example = ms.Tensor(
            np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
        )
        assert net(example).shape == (1, 10)
        ms.export(net, example, file_name=str(tmp_path / "exported"), file_format="MINDIR")
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    assert (tmp_path / "exported.mindir").stat().st_size > 1000


@pytest.mark.parametrize(
    "name, layer", [("tiny_bert_dynamo", "BertLayer"), ("tiny_bert_torchscript", "Layer")]
)
def test_transformer_layers_share_one_class_in_a_cell_list(tmp_path, name, layer):
    result = convert(FIXTURES / f"{name}.onnx", shape=["2,8", "2,8"], output=tmp_path)
    code = result.script_path.read_text()
    assert f"self.layer = nn.CellList([{layer}(), {layer}(), {layer}()])" in code
    names = {
        row["converted_weight"]["name"]
        for row in json.loads(result.weight_map_path.read_text())[name]
    }
    assert {
        "bert.encoder.layer.0.attention.self.query.weight",
        "bert.encoder.layer.2.output.dense.bias",
        "bert.embeddings.word_embeddings.embedding_table",
        "bert.pooler.dense.weight",
    } <= names


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, shapes, loop",
    [
        ("tiny_gpt_dynamo", ["2,8"], "for layer in self.h:"),
        ("tiny_gpt_torchscript", ["2,8"], "for layer in self.h:"),
        ("tiny_bert_dynamo", ["2,8", "2,8"], "for layer in self.layer:"),
    ],
)
@pytest.mark.parametrize("graph_mode", [False, True])
def test_transformer_keeps_its_module_tree_and_loops_over_layers(
    tmp_path, name, shapes, loop, graph_mode
):
    # verify=True compares with onnxruntime at the conversion shape and a second one (the
    # dimensions stay dynamic); GRAPH_MODE compiles the for loop over the CellList
    result = convert(
        FIXTURES / f"{name}.onnx",
        shape=shapes,
        output=tmp_path,
        verify=True,
        graph_mode=graph_mode,
        mindir=graph_mode,
    )
    assert result.verification["ok"]
    assert len(result.verification["shapes"]) == 2, result.verification
    code = result.script_path.read_text()
    assert loop in code
    assert not re.search(r"self\.h_0_|self\.layer\[\d\]|self\.h\[\d\]", code)
    # blocks take tensors only: no construct() takes more than hidden states, mask and ids
    assert (
        max(len(args.split(",")) for args in re.findall(r"def construct\(self, (.*)\)", code)) <= 3
    )
    if graph_mode:
        assert (tmp_path / f"{name}.mindir").stat().st_size > 1000


def test_layers_reading_their_own_network_inputs_share_one_class(tmp_path):
    # a KV-cache decoder: layer i reads the network input past_i; named past in every layer,
    # the layers are one class
    from onnx import helper

    from tests.helpers import assert_matches, make_model

    nodes = []
    current = "x"
    for i in range(3):
        nodes.append(helper.make_node("Add", [current, f"past_{i}"], [f"a{i}"], f"/layers.{i}/Add"))
        nodes.append(helper.make_node("Relu", [f"a{i}"], [f"r{i}"], f"/layers.{i}/act/Relu"))
        current = f"r{i}"
    inputs = [("x", np.float32, [2, 4])] + [(f"past_{i}", np.float32, [2, 4]) for i in range(3)]
    model = make_model(nodes, inputs, [("r2", np.float32, [2, 4])])
    result = assert_matches(model, tmp_path)
    code = result.script_path.read_text()
    classes = _classes(code)
    assert list(classes.values()) == [3], code
    assert re.search(r"def construct\(self, x, past\):", code), code
