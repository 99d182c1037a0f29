"""Record the PyTorch half of the training-parity test (needs torch; the tests do not).

    /work/venv-torch/bin/python tools/make_training_reference.py

Writes tests/fixtures/training_parity.onnx (a small MLP with an exact GELU and a LayerNorm inside
an nn.Sequential, exported by TorchScript at opset 20) and tests/fixtures/training_parity.npz:
the batches and PyTorch's trajectory (loss, gradients and weights per step) for SGD with
momentum on cross-entropy, as mindconverter.check.training.Trajectory saves it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from mindconverter.check.training import torch_trajectory  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
# What the test repeats on the MindSpore side.
LOSS, OPTIMIZER, LR, STEPS = "cross_entropy", "momentum", 0.1, 6


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.seq = nn.Sequential(
            nn.Linear(6, 16), nn.GELU(), nn.LayerNorm(16, eps=1e-3), nn.Linear(16, 4)
        )

    def forward(self, x):
        return self.seq(x)


def main() -> None:
    torch.manual_seed(0)
    model = Mlp().eval()
    torch.onnx.export(
        model,
        (torch.zeros(5, 6),),
        str(FIXTURES / "training_parity.onnx"),
        input_names=["x"],
        output_names=["logits"],
        dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
        opset_version=20,
        dynamo=False,
        do_constant_folding=False,
    )
    rng = np.random.default_rng(0)
    batches = [
        (
            (2 * rng.standard_normal((5, 6))).astype(np.float32),
            rng.integers(0, 4, 5).astype(np.int32),
        )
        for _ in range(3)
    ]
    trajectory = torch_trajectory(model, batches, LOSS, OPTIMIZER, LR, STEPS)
    trajectory.save(FIXTURES / "training_parity_trajectory.npz")
    np.savez_compressed(
        FIXTURES / "training_parity_batches.npz",
        **{
            f"{kind}{i}": batch[j] for i, batch in enumerate(batches) for j, kind in enumerate("xy")
        },
    )
    print("losses:", trajectory.losses)


if __name__ == "__main__":
    main()
