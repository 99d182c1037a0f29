"""Export the small PyTorch models the re-conversion tests use (needs torch; tests do not).

    /work/venv-torch/bin/python tools/make_reweight_fixtures.py

Each model is exported at initialisation (as a user exports before fine-tuning), then every
parameter and buffer is changed (a "fine-tuned" state dict, saved as
``tests/fixtures/reweight/<name>_state.safetensors``) and PyTorch's output with the changed
weights on a fixed input is saved as ``<name>_reference.npz`` (``input``, ``output``; with
``grad:<parameter>`` entries, the gradients of ``sum(output * probe)``, for the models
that have them). Inputs are chosen so the references are stable: a 1e-6 change of the
input moves the output by far less than the tests' tolerance (checked here).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import save_file
from torch import nn

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "reweight"


class Block(nn.Module):
    """A torchvision-style BasicBlock: conv1/bn1, conv2/bn2, downsample.0/downsample.1."""

    def __init__(self, inplanes: int, planes: int, eps: float):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, 2, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes, eps=eps)
        self.downsample = nn.Sequential(
            nn.Conv2d(inplanes, planes, 1, 2, bias=False), nn.BatchNorm2d(planes)
        )

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + self.downsample(x))


class TinyBnCnn(nn.Module):
    """A Sequential stem (features.0 conv with bias, features.1 BatchNorm), a BasicBlock and a
    classifier: the BatchNorm placements of torchvision's CNNs. ``eps``: two of the
    BatchNorms' epsilon (PyTorch's default 1e-5 elsewhere)."""

    def __init__(self, eps: float = 1e-5):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4, eps=eps), nn.ReLU()
        )
        self.layer1 = nn.Sequential(Block(4, 6, eps))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        x = self.layer1(self.features(x))
        return self.fc(torch.flatten(self.pool(x), 1))


class TinyEncoder(nn.Module):
    """One ``nn.TransformerEncoderLayer`` (legacy ``in_proj_weight``) and a head."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.encoder(x))


class TinyLstm(nn.Module):
    """A two-layer ``nn.LSTM`` and a head."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 5, num_layers=2, batch_first=True)
        self.head = nn.Linear(5, 2)

    def forward(self, x):
        return self.head(self.lstm(x)[0])


def _export(model: nn.Module, example: torch.Tensor, name: str, dynamo: bool) -> None:
    path = FIXTURES / f"{name}.onnx"
    if name.endswith("train_torchscript"):  # training mode: BatchNorm kept, not folded
        torch.onnx.export(
            model.train(),
            (example,),
            str(path),
            dynamo=False,
            opset_version=17,
            input_names=["input"],
            training=torch.onnx.TrainingMode.TRAINING,
            do_constant_folding=False,
        )
        model.eval()
    elif name.endswith("train_dynamo"):  # not optimised: BatchNormalization kept
        program = torch.onnx.export(
            model, (example,), dynamo=True, opset_version=18, optimize=False
        )
        program.save(str(path))
    elif dynamo:
        program = torch.onnx.export(
            model, (example,), dynamo=True, opset_version=18, input_names=["input"]
        )
        program.save(str(path))
    else:
        torch.onnx.export(
            model,
            (example,),
            str(path),
            dynamo=False,
            opset_version=17,
            input_names=["input"],
            output_names=["output"],
            # a token model's length stays dynamic, else the exporter computes the position
            # rows (wpe(arange(n))) into a constant no state dict holds
            dynamic_axes={"input": {1: "length"}} if example.dtype == torch.int64 else None,
        )


def _fine_tune(model: nn.Module, seed: int) -> None:
    """Change every floating parameter and buffer (variances stay positive)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            if not tensor.is_floating_point():
                continue
            noise = torch.randn(tensor.shape, generator=generator)
            if name.endswith("running_var"):
                tensor.copy_(torch.rand(tensor.shape, generator=generator) + 0.5)
            else:
                tensor.add_(0.2 * noise)


def _output(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    out = model(x)
    return out[0] if isinstance(out, tuple) else out


def _save_reference(model: nn.Module, x: torch.Tensor, name: str, gradients: bool) -> None:
    model.eval()
    with torch.no_grad():
        output = _output(model, x)
        nudged = _output(model, x + 1e-6) if x.is_floating_point() else output
    drift = float((nudged - output).abs().max() / (output.abs().max() + 1e-12))
    assert drift < 1e-4, f"{name}: reference moves {drift} under a 1e-6 input change"
    arrays = {"input": x.numpy(), "output": output.numpy()}
    if gradients:
        probe = torch.linspace(-1.0, 1.0, output.numel()).reshape(output.shape)
        model.zero_grad()
        (_output(model, x) * probe).sum().backward()
        arrays["probe"] = probe.numpy()
        for key, parameter in model.named_parameters():
            arrays[f"grad:{key}"] = parameter.grad.numpy()
    np.savez(FIXTURES / f"{name}_reference.npz", **arrays)
    state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    save_file(state, str(FIXTURES / f"{name}_state.safetensors"))


def _make(model: nn.Module, example: torch.Tensor, name: str, exporters, gradients=False):
    model.eval()
    for exporter in exporters:
        _export(model, example, f"{name}_{exporter}", exporter == "dynamo")
    _fine_tune(model, seed=7)
    _save_reference(model, example, name, gradients)


def fresh_gpt() -> nn.Module:
    """tools/make_fixtures.py's TinyGPT as a fresh model has it: zero biases, unit LayerNorm
    weights (equal tensors the TorchScript exporter merges), lm_head tied to wte."""
    from make_fixtures import TinyGPT  # tools/ is the script's folder

    model = TinyGPT()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Linear) and module.bias is not None:
                module.bias.zero_()
    return model


def main() -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    image = torch.randn(1, 3, 8, 8)
    exporters = ("torchscript", "dynamo", "train_torchscript", "train_dynamo")
    _make(TinyBnCnn(), image, "bn_cnn", exporters, gradients=True)
    torch.manual_seed(0)  # a dynamo export records each folded BatchNorm's epsilon
    _make(TinyBnCnn(eps=1e-3), image, "bn_cnn_eps", ("dynamo",))
    torch.manual_seed(1)
    _make(TinyEncoder(), torch.randn(1, 5, 8), "encoder", ("torchscript", "dynamo"), gradients=True)
    torch.manual_seed(2)
    _make(TinyLstm(), torch.randn(1, 6, 4), "lstm", ("torchscript", "dynamo"))
    torch.manual_seed(3)
    _make(fresh_gpt(), torch.randint(0, 40, (1, 7)), "gpt", ("torchscript",))


if __name__ == "__main__":
    main()
