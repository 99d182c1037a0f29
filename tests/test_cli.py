"""The command line as a user runs it."""

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter import __version__
from mindconverter.cli import main
from tests.helpers import make_model

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_version_and_help(capsys):
    for argv, needle in ((["--version"], __version__), (["-h"], "--model_file")):
        try:
            main(argv)
        except SystemExit as stop:
            assert stop.code == 0
        assert needle in capsys.readouterr().out


def test_convert_prints_summary_and_detected_io(tmp_path, capsys):
    code = main(
        [
            "--model_file",
            str(FIXTURES / "tiny_mobilenet_torchscript.onnx"),
            "--shape",
            "1,3,32,32",
            "--output",
            str(tmp_path),
        ]
    )
    captured = capsys.readouterr()
    assert code == 0
    assert "Detected inputs:  input: float32[batch, 3, 32, 32]" in captured.out
    assert "Detected outputs: logits" in captured.out
    assert captured.err == ""  # no progress lines: stderr is not a terminal here
    assert "(100.00%)" in captured.out
    assert captured.out.rstrip().splitlines()[-1].startswith("Wall time ")
    assert " peak memory " in captured.out
    assert (tmp_path / "tiny_mobilenet_torchscript.py").exists()


def test_existing_outputs_are_kept_unless_overwrite(tmp_path, capsys):
    args = [
        "--model_file",
        str(FIXTURES / "tiny_resnet_torchscript.onnx"),
        "--shape",
        "1,3,32,32",
        "--output",
        str(tmp_path),
    ]
    assert main(args) == 0
    script = tmp_path / "tiny_resnet_torchscript.py"
    script.write_text("# edited by the user\n")
    assert main(args) == 1
    assert "code 3000001" in capsys.readouterr().err
    assert script.read_text() == "# edited by the user\n"
    assert main(args + ["--overwrite"]) == 0
    assert "MindSporeModel" in script.read_text()


def _model_with_unknown_op():
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("FancyOp", ["r"], ["y"], domain="com.example"),
    ]
    return make_model(
        nodes,
        [("x", np.float32, (1, 4))],
        [("y", np.float32, (1, 4))],
        extra_opsets={"com.example": 1},
    )


def test_unsupported_operator_gets_a_placeholder(tmp_path, capsys):
    model_file = tmp_path / "odd.onnx"
    onnx.save(_model_with_unknown_op(), str(model_file))
    code = main(["--model_file", str(model_file), "--output", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert code == 0
    assert "WARNING: 1 operator(s) not converted (FancyOp)" in captured.out
    script = (tmp_path / "out" / "odd.py").read_text()
    report = (tmp_path / "out" / "report_of_odd.txt").read_text()
    line = next(
        i for i, text in enumerate(script.splitlines(), 1) if "self.unconverted_fancy_op(" in text
    )
    assert f"line {line}:" in report
    assert "[UnConvert] 'com.example::FancyOp' didn't convert." in report
    assert "Converted Rate: 50.00%." in report
    # the script imports and the network builds
    run = subprocess.run(
        [sys.executable, "-c", "import odd; odd.MindSporeModel()"],
        cwd=tmp_path / "out",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]


def test_strict_mode_fails_and_writes_nothing(tmp_path, capsys):
    model_file = tmp_path / "odd.onnx"
    onnx.save(_model_with_unknown_op(), str(model_file))
    code = main(["--model_file", str(model_file), "--output", str(tmp_path / "out"), "--strict"])
    assert code == 1
    assert "[ConversionError] code 4000001" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def test_module_entry_point(tmp_path):
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mindconverter",
            "--model_file",
            str(FIXTURES / "tiny_resnet_dynamo.onnx"),
            "--shape",
            "1,3,32,32",
            "--output",
            str(tmp_path),
            "--verify",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Verification MATCH" in run.stdout


def test_shape_conflict_is_a_usage_error(capsys):
    code = main(["--model_file", str(FIXTURES / "tiny_resnet_dynamo.onnx"), "--shape", "1,4,32,32"])
    assert code == 2
    err = capsys.readouterr().err
    assert "[ArgumentError] code 2000002" in err and "Traceback" not in err


@pytest.mark.parametrize("option", ["--output", "--report"])
def test_empty_output_folder_is_a_usage_error(tmp_path, capsys, monkeypatch, option):
    monkeypatch.chdir(tmp_path)
    model = FIXTURES / "tiny_resnet_dynamo.onnx"
    code = main(["--model_file", str(model), "--shape", "1,3,32,32", option, ""])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "BAD_ARGUMENT" not in err and "code 2" in err
    assert list(tmp_path.iterdir()) == []


def test_shapes_by_name_and_static_scalars_left_out(tmp_path, capsys):
    model = make_model(
        [
            helper.make_node("Cast", ["sr"], ["srf"], to=onnx.TensorProto.FLOAT),
            helper.make_node("Mul", ["x", "srf"], ["y"]),
        ],
        [("x", np.float32, ["batch", 4]), ("sr", np.int64, [])],
        [("y", np.float32, ["batch", 4])],
    )
    onnx.save(model, tmp_path / "m.onnx")
    for run, shape in enumerate((["2,4"], ["x=2,4", "sr="])):
        out = tmp_path / f"out{run}"
        code = main(
            ["--model_file", str(tmp_path / "m.onnx"), "--shape", *shape, "--output", str(out)]
        )
        assert code == 0, capsys.readouterr().err
        assert (out / "m.py").is_file()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("quiet", [False, True])
def test_a_terminal_sees_stage_progress_unless_quiet(tmp_path, monkeypatch, capsys, quiet):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    args = ["--model_file", str(FIXTURES / "tiny_resnet_dynamo.onnx"), "--shape", "1,3,32,32"]
    args += ["--output", str(tmp_path)] + (["--quiet"] if quiet else [])
    assert main(args) == 0
    shown = terminal.getvalue()
    if quiet:
        assert shown == ""
    else:
        assert "write the checkpoint ... " in shown
    assert "Wall time " in capsys.readouterr().out


def test_a_checkpoint_too_big_for_ckpt_is_written_as_safetensors(tmp_path, monkeypatch, capsys):
    """MindSpore reads a .ckpt as one protobuf message (2 GB at most): past that the weights go
    to <stem>.safetensors, the script header says how to load it, and --verify loads it."""
    from mindconverter.outputs import checkpoint

    monkeypatch.setattr(checkpoint, "CKPT_SIZE_LIMIT", 1000)
    args = ["--model_file", str(FIXTURES / "tiny_resnet_dynamo.onnx"), "--shape", "2,3,32,32"]
    assert main(args + ["--output", str(tmp_path), "--verify"]) == 0
    out = capsys.readouterr().out
    assert "Verification MATCH" in out and "safetensors" in out
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".json", ".py", ".safetensors", ".txt"]
    script = (tmp_path / "tiny_resnet_dynamo.py").read_text()
    assert 'ms.load_checkpoint("<this script\'s stem>.safetensors", format="safetensors")' in script
    assert (
        "tiny_resnet_dynamo.safetensors"
        in (tmp_path / "report_of_tiny_resnet_dynamo.txt").read_text()
    )


def test_a_reader_that_goes_away_does_not_stop_the_conversion(tmp_path):
    """`mindconverter ... | head -1`: the pipe closes after the first line; the conversion still
    writes every result and exits 0 (it was an internal error with nothing written)."""
    import subprocess
    import sys
    from pathlib import Path

    model = Path(__file__).resolve().parent / "fixtures" / "tiny_resnet_torchscript.onnx"
    args = [sys.executable, "-m", "mindconverter", "--model_file", str(model)]
    args += ["--shape", "1,3,32,32", "--output", str(tmp_path / "out"), "--quiet"]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = process.stdout.readline()
    process.stdout.close()
    _, err = process.communicate(timeout=300)
    assert first.startswith(b"Detected inputs:")
    assert process.returncode == 0 and err == b""
    assert len(list((tmp_path / "out").iterdir())) == 4


def _static_beside_shaped_model():
    return make_model(
        [
            helper.make_node("Cast", ["s"], ["sf"], to=onnx.TensorProto.FLOAT),
            helper.make_node("Mul", ["x", "sf"], ["xs"]),
            helper.make_node("ReduceSum", ["t"], ["ts"], keepdims=0),
            helper.make_node("Add", ["xs", "ts"], ["y"]),
        ],
        [("x", np.float32, [3, 4]), ("s", np.int64, []), ("t", np.float32, [2])],
        [("y", np.float32, None)],
    )


@pytest.mark.parametrize("shape", [[], ["3,4"], ["2"], ["x=3,4", "s=", "t=2"], ["3,4", "", "2"]])
def test_static_inputs_need_no_shape(tmp_path, capsys, shape):
    """A static model needs no --shape; one given for the shaped input leaves the scalar and the
    other static input alone; all of them named works too."""
    onnx.save(_static_beside_shaped_model(), tmp_path / "m.onnx")
    args = ["--model_file", str(tmp_path / "m.onnx"), "--output", str(tmp_path / "out"), "--quiet"]
    shape = [s for s in shape if s]  # "" stands for a shape a shell would drop
    code = main(args + (["--shape", *shape] if shape else []))
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "out" / "m.py").is_file()


def test_a_shape_that_fits_no_input_is_refused(tmp_path, capsys):
    onnx.save(_static_beside_shaped_model(), tmp_path / "m.onnx")
    code = main(["--model_file", str(tmp_path / "m.onnx"), "--shape", "5,5", "--output", "o"])
    error = capsys.readouterr().err
    assert code == 2 and "code 2000003" in error and error.count("\n") == 1
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_zero_size_inputs_convert_and_run(tmp_path):
    """An empty input (--shape x=0,3) and an empty type carrier (CastLike's like) convert, and
    the network gives onnxruntime's results at an empty and a non-empty size."""
    from mindconverter.check.network import run_mindspore
    from mindconverter.check.verify import run_onnxruntime

    model = make_model(
        [
            helper.make_node("Relu", ["x"], ["r"]),
            helper.make_node("CastLike", ["r", "like"], ["y"]),
        ],
        [("x", np.float32, ["n", 3]), ("like", np.float16, [0])],
        [("y", np.float16, None)],
        opset=19,
    )
    onnx.save(model, tmp_path / "m.onnx")
    out = tmp_path / "out"
    code = subprocess.run(
        [sys.executable, "-m", "mindconverter", "--model_file", str(tmp_path / "m.onnx")]
        + ["--shape", "x=0,3", "like=0", "--output", str(out), "--quiet"],
        capture_output=True,
        text=True,
    )
    assert code.returncode == 0, code.stderr
    like = np.zeros(0, np.float16)
    for rows in (0, 2):
        x = np.random.default_rng(rows).standard_normal((rows, 3)).astype(np.float32)
        want = run_onnxruntime(model, {"x": x, "like": like}, ["y"])
        got = run_mindspore(out / "m.py", out / "m.ckpt", [x, like])
        assert got[0].shape == want[0].shape and got[0].dtype == want[0].dtype
        np.testing.assert_allclose(got[0], want[0], rtol=1e-3)


def test_a_repeated_flag_adds_to_the_earlier_one():
    """``--shape a=1,8 --shape b=1,8`` gives both shapes (argparse's default keeps the last)."""
    from mindconverter.cli import build_parser

    args = build_parser().parse_args(
        ["--model_file", "m.onnx", "--shape", "a=1,8", "--shape", "b=2,8", "c=3,8"]
        + ["--input_nodes", "a", "--input_nodes", "b", "--output_nodes", "y", "--output_nodes", "z"]
    )
    assert args.shape == ["a=1,8", "b=2,8", "c=3,8"]
    assert args.input_nodes == ["a", "b"] and args.output_nodes == ["y", "z"]
