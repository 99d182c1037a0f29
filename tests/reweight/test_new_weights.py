"""New weights for default exports: a fine-tuned PyTorch state dict re-converted through the
weight map of a model exported at initialisation reproduces PyTorch's numbers (outputs and
gradients) with the changed weights. References: tools/make_reweight_fixtures.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mindconverter import convert
from mindconverter.check.network import build_network, run_mindspore
from mindconverter.errors import MindConverterError
from mindconverter.graph.weight_steps import BatchNormFold, steps_from_json
from mindconverter.reweight import new_weight, reconvert_weights, torch_name
from mindconverter.reweight.reconvert import own_names
from mindconverter.reweight.weights_file import read_weights

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "reweight"


def _reconverted(tmp_path, model: str, exporter: str):
    """The fixture converted at its export-time weights, then given the fine-tuned ones."""
    reference = dict(np.load(FIXTURES / f"{model}_reference.npz"))
    shape = ",".join(map(str, reference["input"].shape))
    out = tmp_path / "out"
    result = convert(FIXTURES / f"{model}_{exporter}.onnx", shape=[shape], output=out)
    state = FIXTURES / f"{model}_state.safetensors"
    lines: list[str] = []
    done = reconvert_weights(state, result.weight_map_path, out, overwrite=True, log=lines.append)
    done.lines = lines
    return result, done, reference


CASES = [
    ("bn_cnn", "torchscript"),  # eval-mode BatchNorm folded by the exporter
    ("bn_cnn", "dynamo"),  # folded, and zero biases of bias-less convolutions dropped
    ("bn_cnn", "train_torchscript"),  # training-mode export: BatchNorm kept
    ("bn_cnn", "train_dynamo"),  # optimize=False: BatchNorm kept
    ("bn_cnn_eps", "dynamo"),  # BatchNorm epsilon 1e-3, recorded by the export
    ("encoder", "torchscript"),  # in_proj_weight; equal LayerNorm tensors merged by the exporter
    ("encoder", "dynamo"),  # the same merged by the optimizer, and a zero bias removed
    ("lstm", "torchscript"),  # onnx::LSTM_* of a two-layer nn.LSTM
    ("lstm", "dynamo"),  # val_N of an optimised dynamo export
    ("gpt", "torchscript"),  # zero biases and unit LayerNorm weights merged; lm_head tied
]


def test_parameters_the_exporter_merged_keep_their_own_names(tmp_path):
    """A fresh GPT's equal zero biases and unit LayerNorm weights, merged by the TorchScript
    exporter, are one Parameter each, named and sourced by their own scope; the truly tied
    lm_head stays the embedding's Parameter."""
    result = convert(FIXTURES / "gpt_torchscript.onnx", shape=["1,7"], output=tmp_path)
    rows = next(iter(json.loads(result.weight_map_path.read_text()).values()))
    learned = [row for row in rows if "." in row["source_weight"]["name"]]
    for row in learned:
        assert torch_name(row["converted_weight"]["name"]) == row["source_weight"]["name"]
    names = {row["converted_weight"]["name"] for row in rows}
    assert {"h.0.attn.proj.bias", "h.1.ln_2.gamma", "ln_f.gamma"} <= names
    assert "lm_head.weight" not in names
    assert "self.lm_head.weight = self.wte.embedding_table" in result.script_path.read_text()


@pytest.mark.slow
@pytest.mark.parametrize(("model", "exporter"), CASES)
def test_a_fine_tuned_state_dict_gives_pytorchs_output(tmp_path, model, exporter):
    result, done, reference = _reconverted(tmp_path, model, exporter)
    assert done.checked_against == result.script_path
    # BatchNorm's counters have no MindSpore counterpart; everything else is read
    assert all(name.endswith(".num_batches_tracked") for name in done.unused)
    # only a TorchScript fold lacks the BatchNorm's epsilon, and the command says so
    assert any("epsilon 1e-05" in line for line in done.lines) == (
        exporter == "torchscript" and "cnn" in model
    )
    got = run_mindspore(result.script_path, result.checkpoint_path, [reference["input"]])[0]
    np.testing.assert_allclose(got, reference["output"], rtol=1e-4, atol=1e-5)


def _mindspore_gradients(script: Path, checkpoint: Path, x: np.ndarray, probe: np.ndarray):
    import mindspore as ms

    network = build_network(script, checkpoint)
    network.set_train(False)
    params = network.trainable_params()

    def loss(inputs):
        output = network(inputs)
        output = output[0] if isinstance(output, tuple) else output
        return (output * ms.Tensor(probe)).sum()

    grads = ms.grad(loss, grad_position=None, weights=params)(ms.Tensor(x))
    return {p.name: g.asnumpy() for p, g in zip(params, grads)}


def _torch_gradient(row: dict, reference: dict, state: dict) -> np.ndarray | None:
    """PyTorch's gradient for the converted parameter of ``row`` in the converted layout: a
    folded convolution's weight gradient is PyTorch's divided by the BatchNorm's scale."""
    converted = row["converted_weight"]["name"]
    names = own_names(converted, row["source_weight"]["name"])
    folds = [s for s in steps_from_json(row.get("steps", [])) if isinstance(s, BatchNormFold)]
    if folds and folds[0].part == "bias":
        return None  # the folded bias mixes the convolution's bias and the BatchNorm's
    grad = next((reference[f"grad:{n}"] for n in names if f"grad:{n}" in reference), None)
    if grad is None or not folds:
        return grad
    bn = folds[0].batchnorm or converted.rpartition(".")[0].replace("conv", "bn")
    scale = state[f"{bn}.weight"] / np.sqrt(state[f"{bn}.running_var"] + (folds[0].eps or 1e-5))
    return grad / scale.reshape(-1, 1, 1, 1)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "exporter"), [("bn_cnn", "dynamo"), ("encoder", "torchscript"), ("encoder", "dynamo")]
)
def test_gradients_match_pytorchs(tmp_path, model, exporter):
    """Gradients of sum(output * probe) for every parameter, on an input away from ReLU kinks
    (the fixture script checks the reference is stable under a 1e-6 input change)."""
    result, _, reference = _reconverted(tmp_path, model, exporter)
    grads = _mindspore_gradients(
        result.script_path, result.checkpoint_path, reference["input"], reference["probe"]
    )
    rows = next(iter(json.loads(result.weight_map_path.read_text()).values()))
    state = read_weights(FIXTURES / f"{model}_state.safetensors")
    compared = 0
    for row in rows:
        expected = _torch_gradient(row, reference, state)
        if expected is None:
            continue
        got = grads[row["converted_weight"]["name"]]
        np.testing.assert_allclose(
            got,
            expected.reshape(got.shape),
            rtol=1e-3,
            atol=1e-5,
            err_msg=row["converted_weight"]["name"],
        )
        compared += 1
    assert compared >= len(rows) // 2


def test_a_missing_batchnorm_is_named(tmp_path):
    """A folded convolution whose BatchNorm the state dict lacks is refused, naming the names
    looked for; nothing is written."""
    result = convert(FIXTURES / "bn_cnn_torchscript.onnx", shape=["1,3,8,8"], output=tmp_path)
    state = read_weights(FIXTURES / "bn_cnn_state.safetensors")
    renamed = {k.replace("bn1", "norm_one"): v for k, v in state.items()}
    from mindconverter.outputs.checkpoint import write_safetensors

    path = tmp_path / "renamed.safetensors"
    with open(path, "wb") as stream:
        write_safetensors(stream, list(renamed.items()))
    before = result.checkpoint_path.read_bytes()
    with pytest.raises(MindConverterError) as error:
        reconvert_weights(path, result.weight_map_path, tmp_path, overwrite=True)
    assert "'layer1.0.bn1.running_var'" in str(error.value)
    assert "layer1.0.conv1" in str(error.value)
    assert result.checkpoint_path.read_bytes() == before


def test_a_weight_without_a_source_name_says_which_names_were_tried():
    row = {
        "converted_weight": {
            "name": "lstm_1.weight_ih_l0",
            "shape": [20, 5],
            "data_type": "Float32",
        },
        "source_weight": {"name": "onnx::LSTM_247", "shape": [1, 20, 5], "data_type": "float32"},
        "steps": [{"op": "index", "items": [0]}],
    }
    with pytest.raises(ValueError) as error:
        new_weight(row, {"lstm.weight_ih_l0": np.zeros((20, 4), np.float32)})
    message = str(error.value)
    assert "'lstm.weight_ih_l1'" in message and "'onnx::LSTM_247'" in message
    assert "exporter made that name up" in message


def test_a_packed_attention_projection_is_looked_up_under_its_pytorch_name():
    """The converted ``self_attn.in_proj`` layer holds ``nn.MultiheadAttention``'s
    ``in_proj_weight``/``in_proj_bias``; an ``in_proj`` that is a real ``nn.Linear`` (Mamba's)
    is looked up first under its own name."""
    weight = own_names("encoder.layers.0.self_attn.in_proj.weight", "onnx::MatMul_170")
    bias = own_names("encoder.layers.0.self_attn.in_proj.bias", "onnx::Add_3")
    assert weight[0] == "encoder.layers.0.self_attn.in_proj.weight"
    assert "encoder.layers.0.self_attn.in_proj_weight" in weight
    assert "encoder.layers.0.self_attn.in_proj_bias" in bias
    assert not any(name.endswith("proj_weight") for name in own_names("fc.weight", "fc.weight"))


def test_a_parameter_passed_to_a_functional_call_keeps_its_pytorch_name(tmp_path):
    """nn.MultiheadAttention with kdim != embed_dim passes ``q_proj_weight`` and the rest to
    ``F.linear``; the dynamo export renames them (``val_8``). The FX node still names each one,
    so the layers are ``q_proj``/``k_proj``/``v_proj`` and a new state dict finds them."""
    from safetensors.numpy import save_file

    fixture = FIXTURES.parent / "tiny_mha_cross_weights_dynamo.onnx"
    out = tmp_path / "out"
    result = convert(fixture, shape=["x=2,5,16", "memory=2,7,8"], output=out)
    rows = next(iter(json.loads(result.weight_map_path.read_text()).values()))
    sources = {row["converted_weight"]["name"]: row["source_weight"]["name"] for row in rows}
    for part in ("q", "k", "v"):
        assert sources[f"attn.{part}_proj.weight"] == f"attn.{part}_proj_weight"
    rng = np.random.default_rng(0)
    state = {  # PyTorch's layouts: every converted weight here keeps its source's
        row["source_weight"]["name"]: rng.standard_normal(row["converted_weight"]["shape"])
        for row in rows
    }
    save_file(
        {k: v.astype(np.float32) for k, v in state.items()}, str(tmp_path / "new.safetensors")
    )
    reconvert_weights(tmp_path / "new.safetensors", result.weight_map_path, out, overwrite=True)
    import mindspore as ms

    checkpoint = ms.load_checkpoint(str(out / "tiny_mha_cross_weights_dynamo.ckpt"))
    for part in ("q", "k", "v"):  # nn.Dense keeps PyTorch's [out, in] layout
        np.testing.assert_allclose(
            checkpoint[f"attn.{part}_proj.weight"].asnumpy(),
            state[f"attn.{part}_proj_weight"],
            rtol=1e-6,
        )
