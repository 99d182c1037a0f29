"""A TorchScript export without constant folding (the fine-tuning recipe: BatchNorm kept) of a
stacked bidirectional LSTM and a GRU: the exporter regroups the recurrent weights with
Slice/Concat in the graph. They fold into the recurrent cells (whose mappers lay them out again
as PyTorch holds them), the network stays dynamic, matches PyTorch at two shapes, and takes a
later PyTorch state dict through the weight map. References from tools/make_fixtures.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from mindconverter.outputs.checkpoint import write_safetensors
from mindconverter.reweight import reconvert_weights

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_stacked_recurrent_layers_convert_and_take_new_weights(tmp_path):
    reference = dict(np.load(FIXTURES / "tiny_stacked_rnn_reference.npz"))
    result = convert(
        FIXTURES / "tiny_stacked_rnn_unfolded.onnx", shape=["2,6"], output=tmp_path / "out"
    )
    assert result.fully_converted
    assert "def dynamic_inputs" in result.script_path.read_text()
    for ids, logits in (("ids", "logits"), ("other_ids", "other_logits")):
        got = run_mindspore(result.script_path, result.checkpoint_path, [reference[ids]])[0]
        np.testing.assert_allclose(got, reference[logits], rtol=1e-4, atol=1e-5)

    state = {k[len("new:") :]: v for k, v in reference.items() if k.startswith("new:")}
    weights = tmp_path / "finetuned.safetensors"
    with open(weights, "wb") as stream:
        write_safetensors(stream, list(state.items()))
    done = reconvert_weights(weights, result.weight_map_path, tmp_path / "out", overwrite=True)
    assert done.unused == ["norm.num_batches_tracked"]
    got = run_mindspore(result.script_path, result.checkpoint_path, [reference["other_ids"]])[0]
    np.testing.assert_allclose(got, reference["new_other_logits"], rtol=1e-4, atol=1e-5)
