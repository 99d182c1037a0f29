"""--scaffold: the training and evaluation scripts written beside the network, run as a user
runs them (tiny sizes: MindSpore on CPU is slow)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter import convert
from mindconverter.cli import main
from mindconverter.errors import MindConverterError
from tests.helpers import make_model

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
STEP = re.compile(r"epoch: (\d+) step: (\d+), loss is ([-+.\deE]+)")


def _run(script: Path, *args: str) -> str:
    """Run a generated script in its folder as a user would; returns its stdout."""
    env = {**os.environ, "GLOG_v": "3"}
    done = subprocess.run(
        [sys.executable, script.name, *args],
        cwd=script.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done.stdout


def _check_training(out: str, folder: Path, prefix: str, epochs: int, steps: int) -> None:
    """LossMonitor printed every step, the mean loss fell and a checkpoint per epoch is named
    <prefix>-<epoch>_<step>.ckpt."""
    seen = [(int(epoch), int(step)) for epoch, step, _ in STEP.findall(out)]
    assert seen == [(e, s) for e in range(1, epochs + 1) for s in range(1, steps + 1)], out
    means = _epoch_means(out)
    assert len(means) == epochs and means[-1] < means[0], means
    names = sorted(p.name for p in folder.glob("*.ckpt"))
    assert names == [f"{prefix}-{epoch}_{steps}.ckpt" for epoch in range(1, epochs + 1)]


def _epoch_means(out: str) -> list[float]:
    return [float(v) for v in re.search(r"Mean loss per epoch: (.*)", out)[1].split(" -> ")]


def test_cnn_classifier_trains_in_both_modes_and_evaluates(tmp_path):
    """Cross-entropy over the [batch, 10] logits; 6 samples in batches of 4 (the last one has
    2), starting from the converted weights."""
    result = convert(
        FIXTURES / "tiny_resnet_torchscript.onnx", shape="2,3,32,32", output=tmp_path, scaffold=True
    )
    train, evaluate = result.paths.train_script, result.paths.eval_script
    assert (train.name, evaluate.name) == (
        "train_tiny_resnet_torchscript.py",
        "eval_tiny_resnet_torchscript.py",
    )
    text = train.read_text()
    assert 'DEFAULT_LOSS = "cross_entropy"' in text and "OUTPUT_SHAPE = (10,)" in text
    assert 'INPUTS = (("input_", (3, 32, 32), np.float32),)' in text
    assert "drop_remainder=False" in text
    common = ["--synthetic", "--num_samples", "6", "--batch_size", "4"]
    fit = common + ["--optimizer", "adam", "--lr", "0.003", "--prefix", "net"]
    out = _run(train, *fit, "--epochs", "4", "--ckpt_dir", "ck_pynative")
    assert "Loaded weights from " in out and "tiny_resnet_torchscript.ckpt" in out
    _check_training(out, tmp_path / "ck_pynative", "net", epochs=4, steps=2)
    out = _run(train, *fit, "--epochs", "3", "--ckpt_dir", "ck_graph", "--mode", "graph")
    _check_training(out, tmp_path / "ck_graph", "net", epochs=3, steps=2)

    out = _run(evaluate, *common, "--checkpoint", "ck_pynative/net-4_2.ckpt")
    metrics = dict(re.findall(r"(\w+) ([-+.\deE]+)", out.split("Metrics:")[1]))
    assert set(metrics) == {"loss", "accuracy"} and 0 <= float(metrics["accuracy"]) <= 1
    out = _run(evaluate, *common, "--no_labels", "--mode", "graph")
    assert "Ran 6 sample(s):" in out and "logits: shape [4, 10], [2, 10]; mean " in out


def _multi_input_model() -> onnx.ModelProto:
    """Two batched inputs (one named 'input.1', one of int64), a scalar without batch axis, and
    two outputs whose first, [batch, 5, 3], is no [batch, classes] logits."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("MatMul", ["input.1", "W"], ["h"]),
        helper.make_node("Add", ["h", "B"], ["h2"]),
        helper.make_node("Cast", ["mask"], ["mf"], to=onnx.TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mf", "axis2"], ["mu"]),
        helper.make_node("Mul", ["h2", "mu"], ["y0"]),
        helper.make_node("Add", ["y0", "offset"], ["y"]),
        helper.make_node("ReduceMean", ["y"], ["aux"], axes=[1], keepdims=0),
    ]
    return make_model(
        nodes,
        [
            ("input.1", np.float32, ["batch", 5, 4]),
            ("mask", np.int64, ["batch", 5]),
            ("offset", np.float32, []),
        ],
        [("y", np.float32, ["batch", 5, 3]), ("aux", np.float32, ["batch", 3])],
        {
            "W": rng.standard_normal((4, 3)).astype(np.float32),
            "B": np.zeros(3, np.float32),
            "axis2": np.array([2], np.int64),
        },
    )


def test_multi_input_regression_trains_on_its_first_output(tmp_path):
    onnx.save(_multi_input_model(), tmp_path / "multi.onnx")
    result = convert(
        tmp_path / "multi.onnx", shape=["input.1=2,5,4", "mask=2,5"], output=tmp_path, scaffold=True
    )
    train, evaluate = result.paths.train_script, result.paths.eval_script
    text = train.read_text()
    assert 'DEFAULT_LOSS = "mse"' in text and "OUTPUT_SHAPE = (5, 3)" in text
    assert 'FIXED_INPUTS = (("offset", (), np.float32),)' in text
    assert "def construct(self, input_1, mask, label):" in text
    assert "training uses y." in text and "TRAIN_OUTPUT = 0" in text
    common = ["--num_samples", "5", "--batch_size", "2", "--prefix", "m"]
    fit = ["--synthetic", *common, "--optimizer", "momentum", "--lr", "0.05"]
    out = _run(train, *fit, "--epochs", "3", "--ckpt_dir", "ck_py", "--lr_schedule", "cosine")
    _check_training(out, tmp_path / "ck_py", "m", epochs=3, steps=3)
    out = _run(train, *fit, "--epochs", "2", "--ckpt_dir", "ck_graph", "--mode", "graph")
    _check_training(out, tmp_path / "ck_graph", "m", epochs=2, steps=3)
    first = _epoch_means(out)

    # resuming: the weights (not an optimizer moment of the same name) and the moments load
    resume = ["--epochs", "1", "--ckpt_dir", "ck_resume", "--checkpoint", "ck_graph/m-2_3.ckpt"]
    out = _run(train, *fit, *resume)
    assert _epoch_means(out)[0] < first[0], (first, out)

    # DataSource reads <column>.npy files; MSE labels are shaped like the first output
    rng = np.random.default_rng(1)
    data = tmp_path / "data"
    data.mkdir()
    np.save(data / "input_1.npy", rng.standard_normal((5, 5, 4)))
    np.save(data / "mask.npy", rng.integers(0, 2, (5, 5)))
    np.save(data / "label.npy", rng.standard_normal((5, 5, 3)))
    out = _run(
        evaluate, "--data_dir", "data", "--checkpoint", "ck_graph/m-2_3.ckpt", "--mode", "graph"
    )
    metrics = dict(re.findall(r"(\w+) ([-+.\deE]+)", out.split("Metrics:")[1]))
    assert set(metrics) == {"mae", "mse", "loss"}


def test_static_batch_and_weightless_networks(tmp_path):
    """A network converted for one batch size keeps it (whole batches only); a network without
    weights has no checkpoint to start from."""
    static = make_model(
        [helper.make_node("MatMul", ["x", "W"], ["y"])],
        [("x", np.float32, [2, 6])],
        [("y", np.float32, [2, 4])],
        {"W": np.ones((6, 4), np.float32)},
    )
    weightless = make_model(
        [helper.make_node("ReduceMean", ["x"], ["y"], axes=[1], keepdims=0)],
        [("x", np.float32, ["n", 6])],
        [("y", np.float32, ["n"])],
    )
    for name, model in (("static", static), ("weightless", weightless)):
        onnx.save(model, tmp_path / f"{name}.onnx")
        convert(tmp_path / f"{name}.onnx", shape="2,6", output=tmp_path, scaffold=True)
    text = (tmp_path / "train_static.py").read_text()
    assert "BATCH_SIZE = 2" in text and "drop_remainder=True" in text
    assert 'DEFAULT_LOSS = "cross_entropy"' in text and "OUTPUT_SHAPE = (4,)" in text
    text = (tmp_path / "eval_weightless.py").read_text()
    assert "DEFAULT_CHECKPOINT = None" in text and 'DEFAULT_LOSS = "mse"' in text
    assert "OUTPUT_SHAPE = ()" in text


def test_existing_scripts_are_kept_unless_overwrite(tmp_path, capsys):
    args = ["--model_file", str(FIXTURES / "tiny_resnet_torchscript.onnx"), "--shape", "1,3,32,32"]
    args += ["--output", str(tmp_path), "--scaffold"]
    train = tmp_path / "train_tiny_resnet_torchscript.py"
    train.write_text("# the user's training script\n")
    assert main(args) == 1
    assert "code 3000001" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == [train.name]  # nothing else written
    assert main(args + ["--overwrite"]) == 0
    out = capsys.readouterr().out
    assert f"Training:   {train}" in out and "Evaluation: " in out
    assert "NetWithLoss" in train.read_text()
    with pytest.raises(MindConverterError, match="scaffold must be True or False"):
        convert(FIXTURES / "tiny_resnet_torchscript.onnx", output=tmp_path, scaffold="yes")


def test_names_from_the_model_stay_out_of_code(tmp_path):
    """A hostile file name and input name reach the scripts only as sanitized identifiers,
    repr literals or one-line comments."""
    hostile = 'x"""\nimport os; os.system("boom")  #'
    model = make_model(
        [helper.make_node("Relu", [hostile], ["y"])],
        [(hostile, np.float32, ["n", 3])],
        [("y", np.float32, ["n", 3])],
    )
    model_file = tmp_path / 'net"""; os.system(1).onnx'
    onnx.save(model, model_file)
    result = convert(model_file, shape="2,3", output=tmp_path / "out", scaffold=True)
    for script in (result.paths.train_script, result.paths.eval_script):
        text = script.read_text()
        tree = ast.parse(text)
        calls = {ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
        assert "os.system" not in calls
        for line in text.splitlines():
            if "os.system" in line:
                assert line.lstrip().startswith("#"), line


def test_weights_written_as_safetensors_are_the_default(tmp_path, monkeypatch):
    """Past the 2 GB a .ckpt holds the weights go to <stem>.safetensors; the scripts load it."""
    from mindconverter.outputs import checkpoint

    monkeypatch.setattr(checkpoint, "CKPT_SIZE_LIMIT", 1000)
    result = convert(
        FIXTURES / "tiny_resnet_torchscript.onnx", shape="2,3,32,32", output=tmp_path, scaffold=True
    )
    assert result.checkpoint_path.suffix == ".safetensors"
    evaluate = result.paths.eval_script
    text = evaluate.read_text()
    assert 'DEFAULT_CHECKPOINT = os.path.join(HERE, "tiny_resnet_torchscript.safetensors")' in text
    out = _run(evaluate, "--synthetic", "--num_samples", "3", "--no_labels")
    assert "Loaded weights from " in out and "logits: shape [3, 10]; mean " in out
    assert "WARNING" not in out
