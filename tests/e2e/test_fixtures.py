"""PyTorch-exported fixtures (TorchScript and dynamo exporters) end to end."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from mindconverter import convert
from mindconverter.errors import ArgumentError
from mindconverter.outputs.checkpoint import read_checkpoint

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# Inference exports of the CNNs (the other fixtures have tests of their own).
MODELS = sorted(
    p.name
    for p in FIXTURES.glob("tiny_*.onnx")
    if any(cnn in p.name for cnn in ("resnet", "mobilenet"))
)
BERTS = ["tiny_bert_dynamo.onnx", "tiny_bert_torchscript.onnx"]


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("graph_mode", [False, True])
def test_fixture_matches_onnxruntime(tmp_path, name, graph_mode):
    result = convert(
        FIXTURES / name, shape=["2,3,32,32"], output=tmp_path, verify=True, graph_mode=graph_mode
    )
    assert result.unconverted == []
    assert result.converted_rate == 100.0
    assert result.verification["ok"]
    assert result.verification["max_relative_error"] < 1e-4


@pytest.mark.parametrize("name", MODELS)
def test_fixture_outputs_follow_the_contract(tmp_path, name):
    result = convert(
        FIXTURES / name, shape=["1,3,32,32"], output=tmp_path / "out", report=tmp_path / "rep"
    )
    stem = name[: -len(".onnx")]
    assert result.script_path == tmp_path / "out" / f"{stem}.py"
    assert result.checkpoint_path == tmp_path / "out" / f"{stem}.ckpt"
    assert result.report_path == tmp_path / "rep" / f"report_of_{stem}.txt"
    assert result.weight_map_path == tmp_path / "rep" / f"weight_map_of_{stem}.json"
    code = result.script_path.read_text()
    assert "class MindSporeModel(nn.Cell):" in code
    assert not re.search(r"\d\.\d{8,}", code), "float noise literal in the script"
    report = result.report_path.read_text()
    assert report.startswith("[Start Convert]\n[Convert Over]\nConverted Rate: 100.00%.")
    table = json.loads(result.weight_map_path.read_text())
    rows = table[stem]
    weights = read_checkpoint(result.checkpoint_path.read_bytes())
    assert [row["converted_weight"]["name"] for row in rows] == list(weights)
    for row in rows:
        converted = row["converted_weight"]
        assert list(weights[converted["name"]].shape) == converted["shape"]
        assert converted["data_type"] == "Float32"
        assert row["source_weight"]["name"]
    # nothing else was written
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        [f"{stem}.py", f"{stem}.ckpt"]
    )


def test_dynamo_export_keeps_source_weight_names(tmp_path):
    result = convert(FIXTURES / "tiny_resnet_dynamo.onnx", shape=["1,3,32,32"], output=tmp_path)
    rows = json.loads(result.weight_map_path.read_text())["tiny_resnet_dynamo"]
    sources = {row["source_weight"]["name"] for row in rows}
    assert {"conv1.weight", "layer1.0.conv1.weight", "fc.weight", "fc.bias"} <= sources


def test_dynamic_batch_needs_a_shape(tmp_path):
    with pytest.raises(ArgumentError) as info:
        convert(FIXTURES / "tiny_resnet_dynamo.onnx", output=tmp_path)
    assert info.value.code == 2000004
    assert "input" in str(info.value)


def test_checkpoint_round_trip_is_exact(tmp_path):
    import onnx
    from onnx import numpy_helper

    result = convert(FIXTURES / "tiny_resnet_dynamo.onnx", shape=["1,3,32,32"], output=tmp_path)
    weights = read_checkpoint(result.checkpoint_path.read_bytes())
    model = onnx.load(str(FIXTURES / "tiny_resnet_dynamo.onnx"))
    source = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    rows = json.loads(result.weight_map_path.read_text())["tiny_resnet_dynamo"]
    for row in rows:
        name = row["source_weight"]["name"]
        if name in source and "transform" not in row:
            np.testing.assert_array_equal(weights[row["converted_weight"]["name"]], source[name])


@pytest.mark.parametrize("name", BERTS)
@pytest.mark.parametrize("graph_mode", [False, True])
def test_bert_with_token_ids_and_mask_matches(tmp_path, name, graph_mode):
    result = convert(
        FIXTURES / name, shape=["2,8", "2,8"], output=tmp_path, verify=True, graph_mode=graph_mode
    )
    assert result.unconverted == []
    assert [spec.name for spec in result.inputs] == ["input_ids", "attention_mask"]
    assert result.verification["ok"] and result.verification["max_relative_error"] < 1e-4
    assert len(result.verification["outputs"]) == 2
