"""Where a converted model first parts from onnxruntime: a deliberately wrong mapper (a user
override in the registry) is named by --verify; --verify_layers writes every layer's error."""

from __future__ import annotations

from pathlib import Path

import pytest

from mindconverter import convert
from mindconverter.cli import main
from mindconverter.errors import MindConverterError
from mindconverter.mappers import Call, Input, default_registry

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _wrong_attention_registry():
    """The attention (fused from MatMul/Softmax/MatMul, named after the Softmax) made wrong."""
    registry = default_registry()

    @registry.register("ScaledDotProductAttention", domain="ai.mindconverter")
    def exp_of_the_query(ctx):
        return Call("ops.exp", [Input(0)])

    return registry


def test_a_wrong_mapper_is_named_as_the_first_divergence(tmp_path):
    with pytest.raises(MindConverterError) as info:
        convert(
            FIXTURES / "tiny_gpt_torchscript.onnx",
            shape=["2,8"],
            output=tmp_path / "out",
            verify=True,
            registry=_wrong_attention_registry(),
        )
    message = str(info.value)
    assert info.value.key == "VERIFY_MISMATCH"
    assert (
        "First diverging: node '/h.0/attn/Softmax' (ScaledDotProductAttention, scope 'h.0.attn')"
        in message
    )
    line = int(message.split("generated line ")[1].split(":")[0])
    script = (tmp_path / "out" / "tiny_gpt_torchscript.py").read_text().splitlines()
    assert "ops.exp(" in script[line - 1] and "ops.exp(" in message
    report = (tmp_path / "out" / "report_of_tiny_gpt_torchscript.txt").read_text()
    assert "First diverging: node '/h.0/attn/Softmax'" in report
    assert "Per-layer errors" not in report  # the table only with --verify_layers


@pytest.mark.slow
def test_verify_layers_writes_every_layers_error(tmp_path, capsys):
    model = FIXTURES / "tiny_bert_dynamo.onnx"
    argv = ["--model_file", str(model), "--shape", "2,8", "2,8", "--output", str(tmp_path)]
    assert main([*argv, "--verify_layers"]) == 0
    assert "Verification MATCH" in capsys.readouterr().out
    report = (tmp_path / "report_of_tiny_bert_dynamo.txt").read_text()
    table = report.split("Per-layer errors")[1].strip().splitlines()[1:]
    rows = [line.split() for line in table if line.startswith("    ")]
    assert len(rows) > 20 and "MISMATCH" not in report
    assert ["layer_norm", "node_layer_norm", "LayerNormalization", "bert.embeddings.LayerNorm"] in [
        row[:4] for row in rows
    ]
