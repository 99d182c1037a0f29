"""Record what the AST-path test fixtures give in PyTorch: trainable-parameter counts and output
shapes. The test suite (tests/ast_path) compares the converted MindSpore models against this file,
so it does not need torch.

    /path/to/torch-venv/bin/python tools/record_ast_expectations.py

Writes tests/ast_path/expectations.json. Each case names a fixture script, a Python expression
that builds the model inside that script's namespace, and the inputs of one forward pass
(`shape` + `dtype` for random tensors, or `expr` evaluated with `net` bound to the model).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "ast_path" / "fixtures"
OUT = ROOT / "tests" / "ast_path" / "expectations.json"

IMG = {"shape": [1, 3, 32, 32], "dtype": "float32"}

CASES = [
    {
        "id": "resnet18",
        "fixture": "resnet_zoo.py",
        "build": "resnet18(num_classes=10)",
        "inputs": [IMG],
    },
    {
        "id": "resnet50",
        "fixture": "resnet_zoo.py",
        "build": "resnet50()",
        "inputs": [IMG],
        "forward": False,
    },
    {
        "id": "resnet_bottleneck_small",
        "fixture": "resnet_zoo.py",
        "build": "ResNet(Bottleneck, [1, 1, 1, 1], num_classes=7, zero_init_residual=True)",
        "inputs": [IMG],
    },
    {
        "id": "vgg11",
        "fixture": "vgg_zoo.py",
        "build": "vgg11(num_classes=10, pool_size=1)",
        "inputs": [IMG],
    },
    {
        "id": "vgg16_bn",
        "fixture": "vgg_zoo.py",
        "build": "vgg16_bn(num_classes=10, pool_size=1)",
        "inputs": [IMG],
        "forward": False,
    },
    {
        "id": "inception",
        "fixture": "inception_block.py",
        "build": "mini_inception(num_classes=10)",
        "inputs": [{"shape": [2, 3, 33, 33], "dtype": "float32"}],
    },
    {
        "id": "inception_transform",
        "fixture": "inception_block.py",
        "build": "MiniInception(num_classes=5, aux_logits=False, transform_input=True, init_weights=True)",
        "inputs": [IMG],
    },
    {
        "id": "lstm_lm",
        "fixture": "lstm_lm.py",
        "build": "RNNLanguageModel('LSTM', 50, 16, 32, 2)",
        "inputs": [{"shape": [5, 2], "dtype": "int32", "high": 50}, {"expr": "net.init_hidden(2)"}],
    },
    {
        "id": "gru_lm_batch_first",
        "fixture": "lstm_lm.py",
        "build": "RNNLanguageModel('GRU', 40, 16, 16, 1, dropout=0.2, tie_weights=True, batch_first=True)",
        "inputs": [{"shape": [2, 6], "dtype": "int32", "high": 40}, {"expr": "net.init_hidden(2)"}],
    },
    {
        "id": "rnn_lm",
        "fixture": "lstm_lm.py",
        "build": "RNNLanguageModel('RNN_TANH', 30, 8, 12, 2)",
        "inputs": [{"shape": [4, 3], "dtype": "int32", "high": 30}, {"expr": "net.init_hidden(3)"}],
    },
    {
        "id": "encoder_classifier",
        "fixture": "lstm_lm.py",
        "build": "EncoderClassifier(60, 16, 4)",
        "inputs": [{"shape": [7, 2], "dtype": "int32", "high": 60}],
    },
    {
        "id": "dcgan_generator",
        "fixture": "dcgan.py",
        "build": "build_generator()",
        "inputs": [{"shape": [2, 16, 1, 1], "dtype": "float32"}],
    },
    {
        "id": "dcgan_discriminator",
        "fixture": "dcgan.py",
        "build": "build_discriminator()",
        "inputs": [{"shape": [2, 3, 32, 32], "dtype": "float32"}],
    },
    {
        "id": "densenet_mini",
        "fixture": "densenet_zoo.py",
        "build": "densenet_mini(num_classes=10)",
        "inputs": [IMG],
    },
    {
        "id": "densenet121",
        "fixture": "densenet_zoo.py",
        "build": "densenet121()",
        "inputs": [IMG],
        "forward": False,
    },
    {
        "id": "mobilenet_v2",
        "fixture": "mobile_squeeze.py",
        "build": "mobilenet_v2(num_classes=10)",
        "inputs": [IMG],
    },
    {
        "id": "mobilenet_v3_like",
        "fixture": "mobile_squeeze.py",
        "build": "mobilenet_v3_like(num_classes=10)",
        "inputs": [IMG],
    },
    {
        "id": "squeezenet1_1",
        "fixture": "mobile_squeeze.py",
        "build": "SqueezeNet('1_1', num_classes=10)",
        "inputs": [{"shape": [1, 3, 64, 64], "dtype": "float32"}],
    },
    {
        "id": "squeezenet1_0",
        "fixture": "mobile_squeeze.py",
        "build": "SqueezeNet('1_0')",
        "inputs": [IMG],
        "forward": False,
    },
]


def load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def shapes(value):
    if isinstance(value, (tuple, list)):
        out = []
        for item in value:
            out.extend(shapes(item))
        return out
    return [list(value.shape)]


def main() -> int:
    import torch

    torch.manual_seed(0)
    results = []
    for case in CASES:
        module = load(FIXTURES / case["fixture"])
        net = eval(case["build"], vars(module))
        params = sum(p.numel() for p in net.parameters() if p.requires_grad)
        record = dict(case, params=params)
        if case.get("forward", True):
            net.eval()
            inputs = []
            for spec in case["inputs"]:
                if "expr" in spec:
                    inputs.append(eval(spec["expr"], dict(vars(module), net=net)))
                elif spec["dtype"].startswith("int"):
                    inputs.append(torch.randint(0, spec["high"], spec["shape"]))
                else:
                    inputs.append(torch.rand(*spec["shape"]))
            with torch.no_grad():
                out = net(*inputs)
            record["outputs"] = shapes(out)
        results.append(record)
        print(f"{case['id']}: {params} params, outputs {record.get('outputs')}")
    OUT.write_text(
        json.dumps({"torch_version": torch.__version__, "cases": results}, indent=1) + "\n"
    )
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
