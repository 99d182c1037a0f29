"""Names and shapes for a .pb: required, validated against the graph, with candidates listed."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")
pytest.importorskip("tf2onnx")

from mindconverter import convert
from mindconverter.cli import main
from mindconverter.errors import MindConverterError

from .tfutil import freeze_keras, keras_module

keras = keras_module()


@pytest.fixture(scope="module")
def small_pb(tmp_path_factory):
    inp = keras.Input((8, 8, 3))
    x = keras.layers.Conv2D(4, 3, padding="same", activation="relu")(inp)
    model = keras.Model(inp, keras.layers.GlobalAveragePooling2D()(x))
    pb = tmp_path_factory.mktemp("tf") / "small.pb"
    freeze_keras(model, [(1, 8, 8, 3)], pb)
    return pb


def _error(pb, tmp_path, **kwargs) -> MindConverterError:
    with pytest.raises(MindConverterError) as info:
        convert(pb, output=tmp_path / "out", **kwargs)
    return info.value


def test_names_required_lists_candidates(small_pb, tmp_path):
    error = _error(small_pb, tmp_path, shape="1,8,8,3")
    assert error.key == "TF_NAMES_REQUIRED" and error.exit_code == 2
    assert "x:0 float32[1,8,8,3]" in str(error) and "Identity:0" in str(error)


def test_unknown_input_lists_placeholders(small_pb, tmp_path):
    error = _error(
        small_pb, tmp_path, shape="1,8,8,3", input_nodes=["input:0"], output_nodes=["Identity:0"]
    )
    assert error.key == "UNKNOWN_NODE" and "Placeholders: x:0" in str(error)


def test_unknown_output_and_bad_port(small_pb, tmp_path):
    error = _error(
        small_pb, tmp_path, shape="1,8,8,3", input_nodes=["x:0"], output_nodes=["logits:0"]
    )
    assert error.key == "UNKNOWN_NODE" and "Likely outputs: Identity:0" in str(error)
    error = _error(
        small_pb, tmp_path, shape="1,8,8,3", input_nodes=["x:0"], output_nodes=["Identity:3"]
    )
    assert error.key == "UNKNOWN_NODE" and "has 1 output(s)" in str(error)


def test_shape_required_and_checked(small_pb, tmp_path):
    names = {"input_nodes": ["x:0"], "output_nodes": ["Identity:0"]}
    assert _error(small_pb, tmp_path, **names).key == "SHAPE_REQUIRED"
    assert _error(small_pb, tmp_path, shape="1,8,8,4", **names).key == "SHAPE_CONFLICT"
    assert _error(small_pb, tmp_path, shape="1,3,8,8,1", **names).key == "SHAPE_CONFLICT"
    assert _error(small_pb, tmp_path, shape=["1,8,8,3", "1,8,8,3"], **names).key == "SHAPE_COUNT"
    assert not (tmp_path / "out" / "small.py").exists()


def test_cli(small_pb, tmp_path, capsys):
    code = main(
        [
            "--model_file",
            str(small_pb),
            "--shape",
            "1,8,8,3",
            "--input_nodes",
            "x:0",
            "--output_nodes",
            "Identity:0",
            "--output",
            str(tmp_path / "out"),
        ]
    )
    assert code == 0, capsys.readouterr()
    assert (tmp_path / "out" / "small.py").exists() and (tmp_path / "out" / "small.ckpt").exists()
    code = main(
        ["--model_file", str(small_pb), "--shape", "1,8,8,3", "--output", str(tmp_path / "o2")]
    )
    assert code == 2
    assert "code 2000009" in capsys.readouterr().err


@pytest.mark.parametrize("named", [True, False])
def test_native_logging_stays_off_stderr(small_pb, tmp_path, named):
    """TensorFlow's C++ runtime (absl, oneDNN) writes straight to the stderr descriptor: a fresh
    process shows nothing of it, so success leaves stderr empty and an error is one line."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_")}
    names = ["--input_nodes", "x:0", "--output_nodes", "Identity:0"] if named else []
    args = ["--model_file", str(small_pb), "--output", str(tmp_path / "out"), "--shape", "1,8,8,3"]
    done = subprocess.run(
        [sys.executable, "-m", "mindconverter", *args, *names],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    if named:
        assert done.returncode == 0 and done.stderr == ""
    else:
        assert done.returncode == 2
        assert done.stderr.count("\n") == 1 and "code 2000009" in done.stderr
