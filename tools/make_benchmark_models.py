"""Export the models tools/benchmark.py measures (needs torch and transformers; nothing is
downloaded: the architectures come from transformers' default configs with random weights).

    python tools/make_benchmark_models.py OUT_DIR [--only resnet50,vit_b_16,bert_base,mlp_3gb]

Writes OUT_DIR/<name>.onnx (TorchScript exporter, opset 17; batch and sequence axes dynamic):
resnet50 (ResNet-50, 97 MB), vit_b_16 (ViT-B/16, 330 MB), bert_base (BERT-base, 417 MB), and
mlp_3gb (a 3 GB MLP of 24 Linear layers saved with its weights as ONNX external data).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import onnx
import torch
from torch import nn


def _export(model: nn.Module, example: tuple, path: Path, names, axes) -> None:
    model.eval()
    with torch.no_grad():
        torch.onnx.export(
            model,
            example,
            str(path),
            input_names=names,
            output_names=["output"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )


class _Logits(nn.Module):
    """The first output of a transformers model (its ``last_hidden_state`` or ``logits``)."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, *args):
        return self.inner(*args)[0]


def resnet50(path: Path) -> None:
    from transformers import ResNetConfig, ResNetForImageClassification

    model = ResNetForImageClassification(ResNetConfig(num_labels=1000))
    _export(
        _Logits(model), (torch.randn(1, 3, 224, 224),), path, ["pixels"], {"pixels": {0: "batch"}}
    )


def vit_b_16(path: Path) -> None:
    from transformers import ViTConfig, ViTModel

    model = ViTModel(ViTConfig(), add_pooling_layer=False)
    _export(
        _Logits(model), (torch.randn(1, 3, 224, 224),), path, ["pixels"], {"pixels": {0: "batch"}}
    )


def bert_base(path: Path) -> None:
    from transformers import BertConfig, BertModel

    model = BertModel(BertConfig())
    ids = torch.randint(0, 1000, (1, 128))
    mask = torch.ones(1, 128, dtype=torch.int64)
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"}}
    _export(_Logits(model), (ids, mask), path, ["input_ids", "attention_mask"], axes)


def mlp_3gb(path: Path, width: int = 5632, layers: int = 24) -> None:
    """24 Linear(5632, 5632) layers (3.05 GB of float32), weights in an external-data file."""
    blocks = []
    for _ in range(layers):
        blocks += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*blocks)
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    with tempfile.TemporaryDirectory(dir=path.parent) as staging_dir:
        staging = Path(staging_dir) / "staging.onnx"  # the exporter writes >2 GB as many files
        _export(model, (torch.randn(1, width),), staging, ["x"], {"x": {0: "batch"}})
        loaded = onnx.load(str(staging))
    onnx.save_model(
        loaded,
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=f"{path.stem}.weights",
        size_threshold=1024,
    )


MODELS = {"resnet50": resnet50, "vit_b_16": vit_b_16, "bert_base": bert_base, "mlp_3gb": mlp_3gb}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--only", default=",".join(MODELS), help="comma-separated model names")
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    for name in args.only.split(","):
        path = args.out_dir / f"{name}.onnx"
        if path.exists():
            print(f"{path} exists, kept")
            continue
        MODELS[name](path)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
