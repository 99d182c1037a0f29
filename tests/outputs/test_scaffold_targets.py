"""--scaffold on models no default loss fits (issue 24 class 5): integer, boolean and scalar
outputs and input-less models are refused with SCAFFOLD_NO_LOSS before anything is written;
--train_output and --loss name what to train instead, and the scripts then train it."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter import convert
from mindconverter.cli import main
from mindconverter.errors import MindConverterError
from tests.helpers import make_model
from tests.outputs.test_scaffold import _epoch_means, _run

rng = np.random.default_rng(3)


def _labels_and_logits() -> onnx.ModelProto:
    """``labels`` (int64 argmax) first, then the float ``logits`` it is computed from."""
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["logits"]),
        helper.make_node("ArgMax", ["logits"], ["labels"], axis=1, keepdims=0),
    ]
    return make_model(
        nodes,
        [("x", np.float32, ["n", 4])],
        [("labels", np.int64, ["n"]), ("logits", np.float32, ["n", 3])],
        {"W": rng.standard_normal((4, 3)).astype(np.float32)},
    )


def _mask_output() -> onnx.ModelProto:
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["h"]),
        helper.make_node("Greater", ["h", "zero"], ["mask"]),
    ]
    inits = {"W": rng.standard_normal((4, 3)).astype(np.float32), "zero": np.float32(0)}
    return make_model(nodes, [("x", np.float32, ["n", 4])], [("mask", np.bool_, ["n", 3])], inits)


def _scalar_loss() -> onnx.ModelProto:
    """A model that returns one number for the whole batch: the mean of its squared output."""
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["h"]),
        helper.make_node("Mul", ["h", "h"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["loss"], keepdims=0),
    ]
    inits = {"W": rng.standard_normal((4, 3)).astype(np.float32)}
    return make_model(nodes, [("x", np.float32, ["n", 4])], [("loss", np.float32, [])], inits)


def _input_less() -> onnx.ModelProto:
    nodes = [helper.make_node("Mul", ["W", "W"], ["y"])]
    inits = {"W": rng.standard_normal((2, 3)).astype(np.float32)}
    return make_model(nodes, [], [("y", np.float32, [2, 3])], inits)


@pytest.mark.parametrize(
    "name, model, detail",
    [
        ("argmax", _labels_and_logits(), "labels is not a float tensor"),
        ("mask", _mask_output(), "mask is not a float tensor"),
        ("scalar", _scalar_loss(), "loss has no batch axis: only --loss output"),
        ("inputless", _input_less(), "no input with a batch axis"),
    ],
)
def test_models_no_default_loss_fits_are_refused(tmp_path, capsys, name, model, detail):
    onnx.save(model, tmp_path / f"{name}.onnx")
    out = tmp_path / "out"
    shape = None if name == "inputless" else "2,4"
    with pytest.raises(MindConverterError) as caught:
        convert(tmp_path / f"{name}.onnx", shape=shape, output=out, scaffold=True)
    assert caught.value.key == "SCAFFOLD_NO_LOSS" and detail in str(caught.value)
    assert not out.exists() or not any(out.iterdir())  # nothing written
    args = ["--model_file", str(tmp_path / f"{name}.onnx"), "--output", str(out), "--scaffold"]
    assert main(args + ["--shape", "2,4"] if name != "inputless" else args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "code 2000010" in err and "--train_output NAME" in err
    if name == "argmax":
        assert "Float outputs: logits." in err


def test_a_loss_that_does_not_fit_and_unknown_names_are_refused(tmp_path):
    onnx.save(_labels_and_logits(), tmp_path / "m.onnx")
    model = tmp_path / "m.onnx"
    with pytest.raises(MindConverterError) as caught:
        convert(model, shape="2,4", output=tmp_path / "a", scaffold=True, train_output="labels")
    assert caught.value.key == "SCAFFOLD_NO_LOSS"
    with pytest.raises(MindConverterError) as caught:
        convert(model, shape="2,4", output=tmp_path / "b", scaffold=True, train_output="nope")
    assert caught.value.key == "BAD_ARGUMENT" and "labels, logits" in str(caught.value)
    with pytest.raises(MindConverterError, match="add --scaffold"):
        convert(model, shape="2,4", output=tmp_path / "c", train_output="logits")
    with pytest.raises(MindConverterError, match="--loss must be one of"):
        convert(model, shape="2,4", output=tmp_path / "d", scaffold=True, train_loss="hinge")
    # cross-entropy needs a class axis: a [batch] output has none
    onnx.save(_scalar_loss(), tmp_path / "s.onnx")
    with pytest.raises(MindConverterError) as caught:
        convert(
            tmp_path / "s.onnx",
            shape="2,4",
            output=tmp_path / "e",
            scaffold=True,
            train_loss="cross_entropy",
        )
    assert caught.value.key == "SCAFFOLD_NO_LOSS" and "--loss cross_entropy does not fit" in str(
        caught.value
    )


def _weights_changed(converted, folder, prefix) -> bool:
    """The newest checkpoint training saved holds other weights than the converted ones."""
    import mindspore as ms

    start = ms.load_checkpoint(str(converted))
    saved = ms.load_checkpoint(str(sorted(folder.glob(f"{prefix}-*.ckpt"))[-1]))
    assert start and set(start) <= set(saved)
    return any(not np.allclose(saved[k].asnumpy(), v.asnumpy()) for k, v in start.items())


@pytest.mark.slow
def test_a_named_float_output_trains(tmp_path):
    """--train_output logits: the script trains the second output with cross-entropy (the
    weights change and the loss falls), the evaluation script reports on that output."""
    model = _labels_and_logits()
    onnx.save(model, tmp_path / "m.onnx")
    result = convert(
        tmp_path / "m.onnx", shape="2,4", output=tmp_path, scaffold=True, train_output="logits"
    )
    text = result.paths.train_script.read_text()
    assert "TRAIN_OUTPUT = 1" in text and 'DEFAULT_LOSS = "cross_entropy"' in text
    assert "training uses logits." in text
    fit = ["--synthetic", "--num_samples", "8", "--batch_size", "4", "--prefix", "m"]
    out = _run(result.paths.train_script, *fit, "--epochs", "3", "--lr", "0.5")
    means = _epoch_means(out)
    assert means[-1] < means[0], means
    assert _weights_changed(result.checkpoint_path, tmp_path / "checkpoints", "m")
    out = _run(result.paths.eval_script, "--synthetic", "--num_samples", "4")
    assert "accuracy" in out
    out = _run(result.paths.train_script, *fit, "--epochs", "1", "--loss", "bce", "--prefix", "b")
    assert len(_epoch_means(out)) == 1


@pytest.mark.slow
def test_a_scalar_output_trains_as_its_own_loss(tmp_path):
    """--loss output: the model's scalar output is the loss; it falls with training."""
    model = _scalar_loss()
    onnx.save(model, tmp_path / "s.onnx")
    result = convert(
        tmp_path / "s.onnx", shape="2,4", output=tmp_path, scaffold=True, train_loss="output"
    )
    text = result.paths.train_script.read_text()
    assert 'LOSSES = ("output",)' in text and 'DEFAULT_LOSS = "output"' in text
    fit = ["--synthetic", "--num_samples", "8", "--batch_size", "4", "--prefix", "s"]
    out = _run(
        result.paths.train_script, *fit, "--epochs", "3", "--lr", "0.05", "--optimizer", "sgd"
    )
    losses = [float(v) for v in re.findall(r"loss is ([-+.\deE]+)", out)]
    means = _epoch_means(out)
    assert len(losses) == 6 and means[-1] < means[0], out
    assert _weights_changed(result.checkpoint_path, tmp_path / "checkpoints", "s")
    out = _run(result.paths.eval_script, "--synthetic", "--num_samples", "4")
    assert "Metrics: loss " in out


def test_scripts_are_ruff_clean_and_formatted(tmp_path):
    """As the network script: ``ruff check --isolated`` and ``ruff format --check``."""
    onnx.save(_labels_and_logits(), tmp_path / "m.onnx")
    result = convert(
        tmp_path / "m.onnx", shape="2,4", output=tmp_path, scaffold=True, train_output="logits"
    )
    scripts = [str(result.paths.train_script), str(result.paths.eval_script)]
    for command in (
        ["check", "--isolated"],
        ["format", "--check", "--isolated"],  # ruff's defaults, as for the network script
    ):
        run = subprocess.run(
            [sys.executable, "-m", "ruff", *command, *scripts], capture_output=True, text=True
        )
        assert run.returncode == 0, run.stdout + run.stderr
