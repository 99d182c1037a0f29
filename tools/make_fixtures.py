"""Export the small PyTorch models committed under tests/fixtures/ (needs torch; tests do not).

    python tools/make_fixtures.py            # writes tests/fixtures/*.onnx

Each architecture is exported with both PyTorch exporters: TorchScript-based (dynamo=False,
opset 13) and dynamo (dynamo=True, opset 18), with a dynamic batch axis.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes)
            )

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class TinyResNet(nn.Module):
    """ResNet-18 layout at toy width: stem, four stages of BasicBlocks, pooling, classifier."""

    def __init__(self, num_classes: int = 10, width: int = 8):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = nn.Sequential(BasicBlock(width, width), BasicBlock(width, width))
        self.layer2 = nn.Sequential(
            BasicBlock(width, width * 2, 2), BasicBlock(width * 2, width * 2)
        )
        self.layer3 = nn.Sequential(
            BasicBlock(width * 2, width * 4, 2), BasicBlock(width * 4, width * 4)
        )
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 4, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer3(self.layer2(self.layer1(x)))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int, squeeze: int):
        super().__init__()
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)

    def forward(self, x):
        scale = x.mean((2, 3), keepdim=True)
        scale = nn.functional.hardsigmoid(self.fc2(nn.functional.relu(self.fc1(scale))))
        return x * scale


class InvertedResidual(nn.Module):
    def __init__(self, inp: int, out: int, stride: int, expand: int, use_se: bool, act):
        super().__init__()
        hidden = inp * expand
        self.use_res = stride == 1 and inp == out
        layers = [
            nn.Conv2d(inp, hidden, 1, bias=False),
            nn.BatchNorm2d(hidden),
            act(),
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden),
            act(),
        ]
        if use_se:
            layers.append(SqueezeExcite(hidden, max(hidden // 4, 8)))
        layers += [nn.Conv2d(hidden, out, 1, bias=False), nn.BatchNorm2d(out)]
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        y = self.block(x)
        return x + y if self.use_res else y


class TinyMobileNet(nn.Module):
    """MobileNetV2/V3 ingredients: depthwise convs, ReLU6/Hardswish, squeeze-excite, dropout."""

    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Sequential(
                nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.Hardswish()
            ),
            InvertedResidual(16, 16, 1, 1, False, nn.ReLU6),
            InvertedResidual(16, 24, 2, 4, False, nn.ReLU6),
            InvertedResidual(24, 24, 1, 3, True, nn.Hardswish),
            InvertedResidual(24, 32, 2, 3, True, nn.Hardswish),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Linear(32, 64), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(64, num_classes)
        )

    def forward(self, x):
        x = self.pool(self.features(x)).flatten(1)
        return self.classifier(x)


def randomize_batchnorm(model: nn.Module, seed: int) -> None:
    """Give BatchNorm layers non-trivial statistics so a wrong mapping shows in the numbers."""
    generator = torch.Generator().manual_seed(seed)
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            with torch.no_grad():
                module.running_mean.copy_(
                    torch.randn(module.num_features, generator=generator) * 0.1
                )
                module.running_var.copy_(torch.rand(module.num_features, generator=generator) + 0.5)
                module.weight.copy_(torch.rand(module.num_features, generator=generator) + 0.5)
                module.bias.copy_(torch.randn(module.num_features, generator=generator) * 0.1)


def export_both(
    model: nn.Module,
    example: torch.Tensor,
    name: str,
    input_name: str,
    ts_axes: dict,
    dynamo_dims: dict,
    ts_opset: int,
) -> None:
    """Write <name>_torchscript.onnx (``ts_opset``) and <name>_dynamo.onnx (opset 18) for a
    one-input model returning ``logits``, with the given dynamic axes."""
    torch.onnx.export(
        model,
        (example,),
        FIXTURES / f"{name}_torchscript.onnx",
        dynamo=False,
        opset_version=ts_opset,
        input_names=[input_name],
        output_names=["logits"],
        dynamic_axes={input_name: ts_axes, "logits": {0: "batch"}},
    )
    program = torch.onnx.export(
        model,
        (example,),
        dynamo=True,
        opset_version=18,
        input_names=[input_name],
        output_names=["logits"],
        dynamic_shapes=(dynamo_dims,),
    )
    program.save(str(FIXTURES / f"{name}_dynamo.onnx"))


def export(model: nn.Module, name: str) -> None:
    """Write <name>_torchscript.onnx (opset 13) and <name>_dynamo.onnx (opset 18)."""
    model.eval()
    example = torch.randn(1, 3, 32, 32)
    export_both(
        model, example, name, "input", {0: "batch"}, {0: torch.export.Dim("batch")}, ts_opset=13
    )


def _stub_torchvision_ops() -> None:
    """transformers imports torchvision when installed; the CPU-less torchvision wheel lacks its
    compiled operators, so define their schemas (never called here) before that import."""
    try:
        torch.ops.torchvision.nms  # noqa: B018 - raises when the extension did not load
        return
    except (AttributeError, RuntimeError):
        pass
    library = torch.library.Library("torchvision", "DEF")
    for name in ("nms", "qnms"):
        library.define(f"{name}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        library.impl(
            name, lambda dets, scores, threshold: torch.argsort(scores, descending=True), "CPU"
        )
    _stub_torchvision_ops.library = library  # keep the registration alive


def export_tiny_bert() -> None:
    """A 3-layer Hugging Face BERT at toy width, both exporters, dynamic batch and sequence."""
    _stub_torchvision_ops()
    from transformers import BertConfig, BertModel

    config = BertConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
    )

    class Encoder(nn.Module):
        """BERT called with keyword inputs, returning plain tensors (exporters want tuples)."""

        def __init__(self):
            super().__init__()
            self.bert = BertModel(config)

        def forward(self, input_ids, attention_mask):
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask)
            return out.last_hidden_state, out.pooler_output

    model = Encoder().eval()
    with (
        torch.no_grad()
    ):  # distinct values everywhere: exporters merge identical tensors (zero biases)
        for parameter in model.parameters():
            parameter.copy_(
                torch.randn_like(parameter) * 0.05 + (1.0 if parameter.dim() == 1 else 0.0) * 0.1
            )
    ids = torch.randint(0, 100, (2, 8))
    mask = torch.ones(2, 8, dtype=torch.int64)
    mask[1, 5:] = 0  # a padded second sequence makes the mask matter
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"}}
    torch.onnx.export(
        model,
        (ids, mask),
        FIXTURES / "tiny_bert_torchscript.onnx",
        dynamo=False,
        opset_version=14,
        input_names=["input_ids", "attention_mask"],
        output_names=["last_hidden_state", "pooler_output"],
        dynamic_axes=axes,
    )
    batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence", max=32)
    program = torch.onnx.export(
        model,
        (ids, mask),
        dynamo=True,
        opset_version=18,
        input_names=["input_ids", "attention_mask"],
        output_names=["last_hidden_state", "pooler_output"],
        dynamic_shapes=({0: batch, 1: sequence}, {0: batch, 1: sequence}),
    )
    program.save(str(FIXTURES / "tiny_bert_dynamo.onnx"), external_data=False)


class TrainableCNN(nn.Module):
    """Conv-BN-ReLU twice, pooling, Dropout and a classifier: for training-mode exports."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(6)
        self.conv2 = nn.Conv2d(6, 8, 3, stride=2, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.drop = nn.Dropout(0.25)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.bn2(self.conv2(x)))
        return self.fc(self.drop(torch.flatten(self.pool(x), 1)))


def export_training_mode() -> None:
    """A training-mode TorchScript export (BatchNormalization with training_mode=1, Dropout with
    its training input) and PyTorch's numbers in eval and train mode, with the running
    statistics after one training step, as references for the tests."""
    import numpy as np

    torch.manual_seed(3)
    model = TrainableCNN()
    randomize_batchnorm(model, 4)
    x = torch.randn(2, 3, 8, 8)
    model.train()
    torch.onnx.export(
        model,
        (x,),
        FIXTURES / "tiny_cnn_training.onnx",
        dynamo=False,
        opset_version=17,
        input_names=["input"],
        output_names=["logits"],
        dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
        training=torch.onnx.TrainingMode.TRAINING,
        do_constant_folding=False,
    )
    model.eval()
    with torch.no_grad():
        eval_out = model(x).numpy()
        model.train()
        model.drop.eval()  # batch statistics, no random dropout: comparable across frameworks
        train_out = model(x).numpy()
    np.savez(
        FIXTURES / "tiny_cnn_training_reference.npz",
        input=x.numpy(),
        eval_logits=eval_out,
        train_logits=train_out,
        bn1_running_mean=model.bn1.running_mean.numpy(),
        bn1_running_var=model.bn1.running_var.numpy(),
    )


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention written out (its sizes come from the input, so both
    exporters keep batch and length dynamic)."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, mask):
        batch, length, dim = x.shape
        q, k, v = self.qkv(x).split(dim, dim=2)
        shape = (batch, length, self.heads, dim // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / (dim // self.heads) ** 0.5 + mask
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, length, dim)
        return self.proj(out)


class GPTBlock(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads)
        self.ln_2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 2 * dim)
        self.act = nn.GELU()
        self.out = nn.Linear(2 * dim, dim)

    def forward(self, x, mask):
        x = x + self.attn(self.ln_1(x), mask)
        return x + self.out(self.act(self.fc(self.ln_2(x))))


class TinyGPT(nn.Module):
    """A GPT-style decoder: tied lm head (one tensor with the token embedding), learned
    positions, a causal-mask buffer (not trainable), pre-norm blocks with exact GELU."""

    def __init__(self, vocab: int = 40, dim: int = 16, heads: int = 2, max_len: int = 24):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(max_len, dim)
        self.h = nn.ModuleList([GPTBlock(dim, heads) for _ in range(2)])
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.wte.weight
        causal = torch.triu(torch.full((max_len, max_len), float("-inf")), 1)
        self.register_buffer("causal", causal, persistent=False)

    def forward(self, ids):
        n = ids.shape[1]
        x = self.wte(ids) + self.wpe(torch.arange(n))
        mask = self.causal[:n, :n]
        for block in self.h:
            x = block(x, mask)
        return self.lm_head(self.ln_f(x))


def distinct_values(model: nn.Module, seed: int) -> nn.Module:
    """Random values in every parameter: exporters merge identical tensors (fresh LayerNorm
    weights, zero biases) into one initializer, which no converter can split again."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            noise = torch.randn(parameter.shape, generator=generator) * 0.2
            parameter.copy_(noise + (1.0 if parameter.dim() == 1 else 0.0) * 0.1)
    return model


class LSTMClassifier(nn.Module):
    """Token ids -> embedding -> LSTM (zero initial states) -> last step -> classes."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(30, 8)
        self.lstm = nn.LSTM(8, 12, batch_first=True)
        self.head = nn.Linear(12, 3)

    def forward(self, ids):
        out, _ = self.lstm(self.embed(ids))
        return self.head(out[:, -1])


def export_with_gradients(model: nn.Module, name: str, ids: torch.Tensor) -> None:
    """Both exporters with dynamic batch and sequence, plus PyTorch's references: outputs at
    two shapes and the gradients of ``sum(output * weights)`` for every trainable parameter."""
    import numpy as np

    model.eval()
    batch, sequence = torch.export.Dim("batch", min=1), torch.export.Dim("sequence", min=2, max=24)
    export_both(
        model,
        ids,
        name,
        "ids",
        {0: "batch", 1: "sequence"},
        {0: batch, 1: sequence},
        ts_opset=17,
    )
    other = torch.randint(0, 20, (3, ids.shape[1] + 3))
    logits = model(ids)
    weights = torch.randn(logits.shape, generator=torch.Generator().manual_seed(7))
    (logits * weights).sum().backward()
    arrays = {
        "ids": ids.numpy(),
        "logits": logits.detach().numpy(),
        "loss_weights": weights.numpy(),
    }
    arrays["other_ids"] = other.numpy()
    with torch.no_grad():
        arrays["other_logits"] = model(other).numpy()
    for param_name, parameter in model.named_parameters():  # tied tensors are listed once
        arrays[f"param:{param_name}"] = parameter.detach().numpy()
        arrays[f"grad:{param_name}"] = parameter.grad.numpy()
    np.savez(FIXTURES / f"{name}_reference.npz", **arrays)


class StackedRecurrent(nn.Module):
    """Token ids -> embedding -> 2-layer bidirectional LSTM -> GRU -> BatchNorm1d -> classes."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 6)
        self.lstm = nn.LSTM(6, 5, num_layers=2, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(10, 4, batch_first=True)
        self.norm = nn.BatchNorm1d(4)
        self.head = nn.Linear(4, 3)

    def forward(self, ids):
        out, _ = self.lstm(self.embed(ids))
        out, _ = self.gru(out)
        return self.head(self.norm(out[:, -1]))


def export_unfolded_recurrent() -> None:
    """A TorchScript export without constant folding (BatchNorm kept, the recipe for
    fine-tuning): the exporter regroups the recurrent weights with Slice/Concat in the graph.
    References: outputs at two shapes, and a second set of weights (a later fine-tune) with its
    outputs, for moving new weights into the converted network."""
    import numpy as np

    torch.manual_seed(8)
    model = distinct_values(StackedRecurrent(), 8)
    randomize_batchnorm(model, 9)
    model.eval()
    ids = torch.randint(0, 20, (2, 6))
    torch.onnx.export(
        model,
        (ids,),
        FIXTURES / "tiny_stacked_rnn_unfolded.onnx",
        dynamo=False,
        opset_version=17,
        do_constant_folding=False,
        input_names=["ids"],
        output_names=["logits"],
        dynamic_axes={"ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch"}},
    )
    other = torch.randint(0, 20, (3, 9))
    arrays = {"ids": ids.numpy(), "other_ids": other.numpy()}
    with torch.no_grad():
        arrays["logits"] = model(ids).numpy()
        arrays["other_logits"] = model(other).numpy()
        for parameter in model.parameters():
            parameter.add_(
                torch.randn(parameter.shape, generator=torch.Generator().manual_seed(10)) * 0.1
            )
        model.norm.running_mean.add_(0.2)
        arrays["new_other_logits"] = model(other).numpy()
    for name, tensor in model.state_dict().items():
        arrays[f"new:{name}"] = tensor.numpy()
    np.savez(FIXTURES / "tiny_stacked_rnn_reference.npz", **arrays)


def main() -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    resnet = TinyResNet()
    randomize_batchnorm(resnet, 1)
    export(resnet, "tiny_resnet")
    mobilenet = TinyMobileNet()
    randomize_batchnorm(mobilenet, 2)
    export(mobilenet, "tiny_mobilenet")
    export_tiny_bert()
    export_training_mode()
    torch.manual_seed(5)
    export_with_gradients(distinct_values(TinyGPT(), 5), "tiny_gpt", torch.randint(0, 40, (2, 7)))
    torch.manual_seed(6)
    lstm = distinct_values(LSTMClassifier(), 6)
    export_with_gradients(lstm, "tiny_lstm", torch.randint(0, 30, (2, 6)))
    export_unfolded_recurrent()
    for path in sorted(FIXTURES.glob("*.onnx")):
        print(f"{path.name}: {path.stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
