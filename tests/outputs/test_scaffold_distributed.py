"""train_<stem>.py --distributed under msrun: two CPU workers (MCCL) train data-parallel on
shards of the synthetic data and end with the same weights as one process on the same global
batch."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import mindspore as ms
import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter import convert
from tests.helpers import make_model
from tests.outputs.test_scaffold import _run

pytestmark = pytest.mark.slow


def _mlp() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("MatMul", ["x", "W1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h2"]),
        helper.make_node("MatMul", ["h2", "W2"], ["y"]),
    ]
    weights = {
        "W1": rng.standard_normal((6, 8)).astype(np.float32),
        "b1": rng.standard_normal(8).astype(np.float32),
        "W2": rng.standard_normal((8, 3)).astype(np.float32),
    }
    return make_model(nodes, [("x", np.float32, ["n", 6])], [("y", np.float32, ["n", 3])], weights)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _msrun(script: Path, workers: int, *args: str) -> None:
    msrun = shutil.which("msrun", path=os.path.dirname(sys.executable)) or shutil.which("msrun")
    assert msrun, "msrun ships with mindspore"
    # msrun starts the workers with the "python" on PATH: this interpreter's
    env = {**os.environ, "GLOG_v": "3"}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    command = [msrun, f"--worker_num={workers}", f"--local_worker_num={workers}"]
    command += [f"--master_port={_free_port()}", "--log_dir=msrun_logs", "--join=True"]
    done = subprocess.run(
        [*command, script.name, *args],
        cwd=script.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    logs = "".join(p.read_text()[-1500:] for p in sorted((script.parent / "msrun_logs").glob("*")))
    assert done.returncode == 0, done.stderr[-2000:] + logs


def _weights(path: Path, names) -> dict[str, np.ndarray]:
    loaded = ms.load_checkpoint(str(path))
    return {name: loaded[name].asnumpy() for name in names}


def test_two_cpu_workers_train_like_one_process(tmp_path):
    onnx.save(_mlp(), tmp_path / "mlp.onnx")
    result = convert(tmp_path / "mlp.onnx", shape="2,6", output=tmp_path, scaffold=True)
    train = result.paths.train_script
    text = train.read_text()
    assert "msrun --worker_num=N --local_worker_num=N train_mlp.py --distributed" in text
    common = ["--synthetic", "--num_samples", "8", "--epochs", "2", "--no_shuffle", "--seed", "3"]
    _run(train, *common, "--batch_size", "4", "--ckpt_dir", "single")
    _msrun(train, 2, "--distributed", *common, "--batch_size", "2", "--ckpt_dir", "dist")

    names = list(ms.load_checkpoint(str(result.checkpoint_path)))
    start = _weights(result.checkpoint_path, names)
    single = _weights(tmp_path / "single" / "mlp-2_2.ckpt", names)
    ranks = [_weights(tmp_path / "dist" / f"rank_{r}" / "mlp-2_2.ckpt", names) for r in (0, 1)]
    for name in names:
        assert not np.allclose(single[name], start[name]), name  # training moved every weight
        np.testing.assert_array_equal(ranks[0][name], ranks[1][name])
        np.testing.assert_allclose(ranks[0][name], single[name], rtol=0, atol=1e-5)


def test_mixed_precision_is_refused_on_cpu(tmp_path):
    onnx.save(_mlp(), tmp_path / "mlp.onnx")
    result = convert(tmp_path / "mlp.onnx", shape="2,6", output=tmp_path, scaffold=True)
    done = subprocess.run(
        [sys.executable, result.paths.train_script.name, "--synthetic", "--amp", "O2"],
        cwd=tmp_path,
        env={**os.environ, "GLOG_v": "3"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and "--amp O2 needs a GPU or Ascend" in done.stderr
