"""The report and the weight map of a real conversion."""

from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import helper

from mindconverter import convert
from mindconverter.outputs.checkpoint import read_checkpoint
from mindconverter.outputs.report import converted_rate, op_counts
from tests.helpers import make_model


def _converted(tmp_path):
    rng = np.random.default_rng(0)
    model = make_model(
        [
            helper.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["r"]),
            helper.make_node("Flatten", ["r"], ["f"]),
            helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"], transB=1),
            helper.make_node("Mystery", ["y"], ["z"], domain="com.example"),
        ],
        [("x", np.float32, [1, 2, 4, 4])],
        [("z", np.float32, [1, 3])],
        {
            "conv.weight": rng.standard_normal((4, 2, 3, 3)).astype(np.float32),
            "conv.bias": rng.standard_normal(4).astype(np.float32),
            "fc.weight": rng.standard_normal((3, 64)).astype(np.float32),
            "fc.bias": rng.standard_normal(3).astype(np.float32),
        },
        extra_opsets={"com.example": 1},
    )
    onnx.save(model, tmp_path / "net.onnx")
    return convert(tmp_path / "net.onnx", output=tmp_path / "out")


def test_report_lists_the_unconverted_operator_and_the_rate(tmp_path):
    result = _converted(tmp_path)
    report = result.report_path.read_text()
    assert report.startswith("[Start Convert]")
    assert "[UnConvert] 'com.example::Mystery' didn't convert" in report
    assert "[Convert Over]" in report and "Converted Rate: 80.00%." in report
    line = int(report.split("line ", 1)[1].split(":", 1)[0])
    assert "self.unconverted_mystery(" in result.script_path.read_text().splitlines()[line - 1]


def test_weight_map_has_one_row_per_checkpoint_parameter(tmp_path):
    result = _converted(tmp_path)
    table = json.loads(result.weight_map_path.read_text())
    (rows,) = table.values()
    checkpoint = read_checkpoint(result.checkpoint_path.read_bytes())
    assert [row["converted_weight"]["name"] for row in rows] == list(checkpoint)
    for row in rows:
        converted = row["converted_weight"]
        assert converted["shape"] == list(checkpoint[converted["name"]].shape)
        assert converted["data_type"] == "Float32"
    sources = {row["converted_weight"]["name"]: row["source_weight"]["name"] for row in rows}
    assert sources == {
        "conv.weight": "conv.weight",
        "conv.bias": "conv.bias",
        "fc.weight": "fc.weight",
        "fc.bias": "fc.bias",
    }


def test_rate_and_counts(tmp_path):
    assert converted_rate([]) == 100.0
    counts = op_counts([])
    assert counts == []
