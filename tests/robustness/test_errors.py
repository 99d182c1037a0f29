"""Every kind of bad input gives one error line with a stable code, the right exit code, no
traceback, no output files and an untouched input folder."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from mindconverter.errors import ERROR_CODES
from tests.helpers import make_model
from tests.robustness.util import dynamic_model, error_of, run_cli, save, snapshot, valid_model

F = np.float32


def _model_case(model: onnx.ModelProto, name: str = "m.onnx"):
    def build(src: Path):
        return ["--model_file", save(model, src / name)]

    return build


def _bytes_case(data: bytes, name: str):
    def build(src: Path):
        (src / name).write_bytes(data)
        return ["--model_file", src / name]

    return build


def _valid_with(*extra, model=None):
    def build(src: Path):
        return ["--model_file", save(model or valid_model(), src / "m.onnx"), *extra]

    return build


def _external(location: str, content: bytes | None = None, offset: str | None = None):
    def build(src: Path):
        model = make_model(
            [helper.make_node("Add", ["x", "w"], ["y"])],
            [("x", F, [1, 4])],
            [("y", F, None)],
            {"w": np.ones(4, F)},
        )
        tensor = model.graph.initializer[0]
        tensor.ClearField("raw_data")
        tensor.data_location = TensorProto.EXTERNAL
        entry = tensor.external_data.add()
        entry.key, entry.value = "location", location
        if offset is not None:
            entry = tensor.external_data.add()
            entry.key, entry.value = "offset", offset
        if content is not None:
            (src / location).write_bytes(content)
        return ["--model_file", save(model, src / "m.onnx")]

    return build


def _tweak(change):
    model = valid_model()
    change(model)
    return model


VALID = valid_model().SerializeToString()
RELU = [helper.make_node("Relu", ["x"], ["y"])]


def _cycle():
    return make_model(
        [
            helper.make_node("Add", ["x", "b"], ["a"]),
            helper.make_node("Relu", ["a"], ["b"]),
            helper.make_node("Relu", ["a"], ["y"]),
        ],
        [("x", F, [1, 4])],
        [("y", F, [1, 4])],
    )


def _with_attribute(op_type: str, attr: onnx.AttributeProto, perm=None) -> onnx.ModelProto:
    node = helper.make_node(op_type, ["x"], ["y"], **({"perm": perm} if perm else {}))
    node.attribute.append(attr)
    return make_model([node], [("x", F, [1, 4])], [("y", F, None)])


def _init_lie(dims):
    model = make_model(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        [("x", F, [1, 4])],
        [("y", F, None)],
        {"w": np.ones(4, F)},
    )
    model.graph.initializer[0].dims[:] = dims
    return model


def _not_graphdef_pb(src: Path):
    (src / "model.pb").write_bytes(b"this is not a graph\x00\x01")
    return ["--model_file", src / "model.pb"]


def _graphdef_pb(src: Path):
    # A real GraphDef on the wire: node { name: "x" op: "Placeholder" } node { name: "y" op: "Identity" input: "x" }
    def node(name, op, inputs=()):
        body = b"\x0a" + bytes([len(name)]) + name + b"\x12" + bytes([len(op)]) + op
        for i in inputs:
            body += b"\x1a" + bytes([len(i)]) + i
        return b"\x0a" + bytes([len(body)]) + body

    (src / "frozen.pb").write_bytes(node(b"x", b"Placeholder") + node(b"y", b"Identity", [b"x"]))
    return ["--model_file", src / "frozen.pb"]


CASES = {
    # the model file
    "missing file": (lambda src: ["--model_file", src / "nope.onnx"], "FILE_NOT_FOUND", 1),
    "a directory": (lambda src: ["--model_file", src], "FILE_IS_DIRECTORY", 1),
    "empty file": (_bytes_case(b"", "m.onnx"), "FILE_EMPTY", 1),
    "truncated half": (_bytes_case(VALID[: len(VALID) // 2], "m.onnx"), "FILE_CORRUPT", 1),
    "truncated end": (_bytes_case(VALID[:-3], "m.onnx"), "FILE_CORRUPT", 1),
    "random bytes": (
        _bytes_case(np.random.default_rng(0).bytes(4096), "m.onnx"),
        "FILE_CORRUPT",
        1,
    ),
    "text as .onnx": (_bytes_case(b"hello, I am not a model\n", "m.onnx"), "FILE_CORRUPT", 1),
    "png as .onnx": (_bytes_case(b"\x89PNG\r\n\x1a\n" + bytes(64), "m.onnx"), "FILE_CORRUPT", 1),
    "zip as .onnx": (_bytes_case(b"PK\x03\x04" + bytes(64), "m.onnx"), "FILE_CORRUPT", 1),
    "pb that is not a GraphDef": (_not_graphdef_pb, "NOT_A_GRAPHDEF", 1),
    "onnx named .pb": (_bytes_case(VALID, "model.pb"), "NOT_A_GRAPHDEF", 1),
    # without the TF stack the extra is named; with it, a GraphDef still needs its node names
    "GraphDef without TensorFlow"
    if importlib.util.find_spec("tensorflow") is None
    else "GraphDef without names": (_graphdef_pb, "TF_STACK_MISSING", 1)
    if importlib.util.find_spec("tensorflow") is None
    else (_graphdef_pb, "TF_NAMES_REQUIRED", 2),
    "unknown suffix": (_bytes_case(VALID, "model.mlmodel"), "UNKNOWN_SUFFIX", 1),
    "no suffix": (_bytes_case(VALID, "model"), "UNKNOWN_SUFFIX", 1),
    "parent is a file": (lambda src: ["--model_file", "/dev/null/x.onnx"], "FILE_NOT_FOUND", 1),
    "a pipe": (
        lambda src: (os.mkfifo(src / "p.onnx"), ["--model_file", src / "p.onnx"])[1],
        "FILE_UNREADABLE",
        1,
    ),
    # --shape
    "shape letters": (_valid_with("--shape", "a,b"), "BAD_SHAPE", 2),
    "shape float": (_valid_with("--shape", "1.5,4"), "BAD_SHAPE", 2),
    # 0 is a valid (empty) size, but this axis is static 4
    "shape zero dim": (_valid_with("--shape", "1,0"), "SHAPE_CONFLICT", 2),
    "shape negative dim": (_valid_with("--shape", "1,-4"), "BAD_SHAPE", 2),
    "shape leading negative": (_valid_with("--shape", "-1,4"), "BAD_ARGUMENT", 2),
    "shape empty": (_valid_with("--shape", ""), "BAD_SHAPE", 2),
    "shape empty dim": (_valid_with("--shape", "1,,4"), "BAD_SHAPE", 2),
    "shape huge": (_valid_with("--shape", "1,99999999999999999999999"), "BAD_SHAPE", 2),
    "shape unicode digits": (_valid_with("--shape", "\u0661,\u0664"), "BAD_SHAPE", 2),
    "shape wrong rank": (_valid_with("--shape", "1,4,5"), "SHAPE_CONFLICT", 2),
    "shape conflicts with static": (_valid_with("--shape", "2,4"), "SHAPE_CONFLICT", 2),
    "shape wrong count": (_valid_with("--shape", "1,4", "1,4"), "SHAPE_COUNT", 2),
    "shape too few": (
        _valid_with("--shape", "2,4", model=dynamic_model(second_batch="M")),
        "SHAPE_COUNT",
        2,
    ),
    "shape required": (_valid_with(model=dynamic_model()), "SHAPE_REQUIRED", 2),
    "shape rank vs dynamic": (
        _valid_with("--shape", "2,4,1", "2,4,1", model=dynamic_model()),
        "SHAPE_CONFLICT",
        2,
    ),
    # node names
    "unknown input node": (_valid_with("--input_nodes", "nope"), "UNKNOWN_NODE", 2),
    "duplicate input node": (_valid_with("--input_nodes", "x", "x"), "DUPLICATE_NODE", 2),
    "unknown output node": (_valid_with("--output_nodes", "nope"), "UNKNOWN_NODE", 2),
    "duplicate output node": (_valid_with("--output_nodes", "y", "y"), "DUPLICATE_NODE", 2),
    "weight as input node": (_valid_with("--input_nodes", "w"), "UNKNOWN_NODE", 2),
    "empty node name": (_valid_with("--input_nodes", ""), "BAD_ARGUMENT", 2),
    # other usage errors
    "no model": (lambda src: [], "MISSING_ARGUMENT", 2),
    "unknown option": (_valid_with("--bogus"), "BAD_ARGUMENT", 2),
    "abbreviated option": (_valid_with("--out", "o"), "BAD_ARGUMENT", 2),
    "bad tolerance": (_valid_with("--tolerance", "nan"), "BAD_ARGUMENT", 2),
    # the graph
    "cycle": (_model_case(_cycle()), "INVALID_GRAPH", 1),
    "dangling input": (
        _model_case(
            make_model(
                [helper.make_node("Add", ["x", "ghost"], ["y"])],
                [("x", F, [1, 4])],
                [("y", F, None)],
            )
        ),
        "INVALID_GRAPH",
        1,
    ),
    "output produced by nothing": (
        _model_case(make_model(RELU, [("x", F, [1, 4])], [("zz", F, None)])),
        "INVALID_GRAPH",
        1,
    ),
    "value written twice": (
        _model_case(
            make_model(
                RELU + [helper.make_node("Sigmoid", ["x"], ["y"])],
                [("x", F, [1, 4])],
                [("y", F, None)],
            )
        ),
        "INVALID_GRAPH",
        1,
    ),
    "no outputs": (_model_case(make_model(RELU, [("x", F, [1, 4])], [])), "INVALID_GRAPH", 1),
    "duplicate graph inputs": (
        _model_case(
            make_model(
                [helper.make_node("Add", ["x", "x"], ["y"])],
                [("x", F, [1, 4]), ("x", F, [1, 4])],
                [("y", F, None)],
            )
        ),
        "INVALID_GRAPH",
        1,
    ),
    "empty op_type": (
        _model_case(
            make_model([helper.make_node("", ["x"], ["y"])], [("x", F, [1, 4])], [("y", F, None)])
        ),
        "INVALID_GRAPH",
        1,
    ),
    "domain not imported": (
        _model_case(
            make_model(
                [helper.make_node("Op", ["x"], ["y"], domain="com.x")],
                [("x", F, [1, 4])],
                [("y", F, None)],
            )
        ),
        "INVALID_GRAPH",
        1,
    ),
    # a mistyped attribute made onnxoptimizer crash the process (SIGSEGV, no error line)
    "attribute of the wrong type": (
        _model_case(_with_attribute("Transpose", helper.make_attribute("perm", 0.5))),
        "INVALID_GRAPH",
        1,
    ),
    "attribute given twice": (
        _model_case(_with_attribute("Transpose", helper.make_attribute("perm", [0, 1]), [1, 0])),
        "INVALID_GRAPH",
        1,
    ),
    "unknown element type": (
        _model_case(_tweak(lambda m: setattr(m.graph.input[0].type.tensor_type, "elem_type", 999))),
        "INVALID_GRAPH",
        1,
    ),
    "initializer data too short": (_model_case(_init_lie([8])), "INVALID_GRAPH", 1),
    "initializer negative dim": (_model_case(_init_lie([-4])), "INVALID_GRAPH", 1),
    "initializer absurd dims": (_model_case(_init_lie([1 << 50, 1 << 20])), "ABSURD_DIMENSION", 1),
    "input absurd dim": (
        _model_case(make_model(RELU, [("x", F, [1, 1 << 50])], [("y", F, None)])),
        "ABSURD_DIMENSION",
        1,
    ),
    "input negative dim": (
        _model_case(make_model(RELU, [("x", F, [1, -3])], [("y", F, None)])),
        "ABSURD_DIMENSION",
        1,
    ),
    "opset zero": (_model_case(valid_model(opset=0)), "OPSET_UNSUPPORTED", 1),
    "opset too new": (_model_case(valid_model(opset=99)), "OPSET_UNSUPPORTED", 1),
    "IR version too new": (
        _model_case(_tweak(lambda m: setattr(m, "ir_version", 999))),
        "OPSET_UNSUPPORTED",
        1,
    ),
    "no default opset": (
        _model_case(
            _tweak(lambda m: (m.opset_import.pop(), m.opset_import.add(domain="x", version=1)))
        ),
        "OPSET_UNSUPPORTED",
        1,
    ),
    "no graph": (
        _bytes_case(onnx.ModelProto(ir_version=8).SerializeToString(), "m.onnx"),
        "FILE_CORRUPT",
        1,
    ),
    # external data
    "external data missing": (_external("weights.bin"), "EXTERNAL_DATA_MISSING", 1),
    "external data too short": (_external("weights.bin", b"\x00" * 5), "EXTERNAL_DATA_MISSING", 1),
    "external data escapes folder": (_external("../../etc/passwd"), "EXTERNAL_DATA_MISSING", 1),
    "external data absolute path": (_external("/etc/passwd"), "EXTERNAL_DATA_MISSING", 1),
    "external data bad offset": (
        _external("weights.bin", b"\x00" * 16, offset="abc"),
        "EXTERNAL_DATA_MISSING",
        1,
    ),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_bad_input_gives_one_clean_error(case, tmp_path):
    build, key, exit_code = CASES[case]
    src = tmp_path / "src"
    src.mkdir()
    argv = [str(a) for a in build(src)]
    if "--output" not in argv and "--out" not in argv:
        argv += ["--output", str(tmp_path / "out")]
    before = snapshot(src)
    code, stdout, stderr = run_cli(argv, cwd=tmp_path)
    got, message = error_of(stderr)
    assert "Traceback" not in stdout
    assert got == key, f"{case}: expected {key}, got {got}: {message}"
    assert code == exit_code
    fix = ERROR_CODES[key].fix
    assert (
        message.endswith(fix) and len(message) > len(fix) + 10
    )  # says what is wrong, then what to do
    assert snapshot(src) == before, "the input folder changed"
    assert not (tmp_path / "out").exists(), "a failed run left an output folder"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"], "a failed run left files behind"


def _out_case(tmp_path, layout):
    src = tmp_path / "src"
    src.mkdir()
    model = save(valid_model(), src / "m.onnx")
    return model, layout(tmp_path)


@pytest.mark.parametrize("option", ["--output", "--report"])
def test_output_or_report_path_is_a_file(tmp_path, option):
    model, target = _out_case(tmp_path, lambda t: t / "file.txt")
    target.write_text("mine")
    argv = ["--model_file", model, "--output", tmp_path / "out", option, target]
    code, _, stderr = run_cli(argv)
    assert (code, error_of(stderr)[0]) == (1, "OUTPUT_IS_FILE")
    assert target.read_text() == "mine"
    assert not (tmp_path / "out").exists()


def test_output_below_a_file(tmp_path):
    model, target = _out_case(tmp_path, lambda t: t / "file.txt")
    target.write_text("mine")
    code, _, stderr = run_cli(["--model_file", model, "--output", target / "sub"])
    assert (code, error_of(stderr)[0]) == (1, "OUTPUT_IS_FILE")


def test_output_not_writable(tmp_path, monkeypatch):
    model, target = _out_case(tmp_path, lambda t: t / "locked")
    target.mkdir()
    real_access = os.access
    monkeypatch.setattr(
        os,
        "access",
        lambda p, mode, **kw: False if Path(p) == target else real_access(p, mode, **kw),
    )
    code, _, stderr = run_cli(["--model_file", model, "--output", target / "deeper"])
    assert (code, error_of(stderr)[0]) == (1, "OUTPUT_NOT_WRITABLE")
    assert list(target.iterdir()) == []


def test_output_cannot_be_created(tmp_path):
    model, _ = _out_case(tmp_path, lambda t: None)
    code, _, stderr = run_cli(["--model_file", model, "--output", "/proc/mindconverter-test/out"])
    assert code == 1 and error_of(stderr)[0] in ("OUTPUT_NOT_WRITABLE", "OUTPUT_IS_FILE")


def test_existing_outputs_are_kept_unless_overwrite(tmp_path):
    model, out = _out_case(tmp_path, lambda t: t / "out")
    assert run_cli(["--model_file", model, "--output", out])[0] == 0
    before = snapshot(out)
    (out / "m.py").write_text("# my edits\n")
    code, _, stderr = run_cli(["--model_file", model, "--output", out])
    assert (code, error_of(stderr)[0]) == (1, "OUTPUT_EXISTS")
    assert (out / "m.py").read_text() == "# my edits\n"
    code, _, stderr = run_cli(["--model_file", model, "--output", out, "--overwrite"])
    assert code == 0 and stderr == ""
    assert snapshot(out) == before


def test_strict_with_unknown_domain_operator(tmp_path):
    model = make_model(
        [helper.make_node("Mystery", ["x"], ["y"], domain="com.vendor")],
        [("x", F, [1, 4])],
        [("y", F, None)],
        extra_opsets={"com.vendor": 1},
    )
    path = save(model, tmp_path / "m.onnx")
    code, _, stderr = run_cli(["--model_file", path, "--output", tmp_path / "out", "--strict"])
    assert (code, error_of(stderr)[0]) == (1, "UNSUPPORTED_OPERATORS")
    assert not (tmp_path / "out").exists()
    code, stdout, stderr = run_cli(["--model_file", path, "--output", tmp_path / "out"])
    assert code == 0 and stderr == "" and "not converted" in stdout


def test_internal_error_is_one_line_with_its_code(tmp_path, monkeypatch):
    from mindconverter.conversion import stages

    def boom(*args, **kwargs):
        raise RuntimeError("simulated bug\nwith two lines")

    monkeypatch.setattr(stages, "render_script", boom)
    path = save(valid_model(), tmp_path / "m.onnx")
    code, _, stderr = run_cli(["--model_file", path, "--output", tmp_path / "out"])
    key, message = error_of(stderr)
    assert (code, key) == (
        1,
        "INTERNAL_ERROR",
    ) and "RuntimeError: simulated bug with two lines" in message
    code, _, stderr = run_cli(["--model_file", path, "--output", tmp_path / "out", "--debug"])
    assert code == 1 and "Traceback" in stderr  # tracebacks only when asked for
    assert not (tmp_path / "out").exists()


def test_help_and_version_exit_zero():
    assert run_cli(["--help"])[0] == 0
    code, stdout, _ = run_cli(["--version"])
    assert code == 0 and "mindconverter" in stdout


@pytest.mark.parametrize("kind", ["random", "shape", "pb"])
def test_real_process_prints_no_traceback(tmp_path, kind):
    """The installed entry point, in its own process: one line on stderr, the documented exit code."""
    if kind == "random":
        path = tmp_path / "m.onnx"
        path.write_bytes(np.random.default_rng(1).bytes(2048))
        argv, key, exit_code = ["--model_file", path], "FILE_CORRUPT", 1
    elif kind == "shape":
        path = save(valid_model(), tmp_path / "m.onnx")
        argv, key, exit_code = ["--model_file", path, "--shape", "1,x"], "BAD_SHAPE", 2
    else:
        path = tmp_path / "m.pb"
        path.write_bytes(b"\xff" * 100)
        argv, key, exit_code = ["--model_file", path], "NOT_A_GRAPHDEF", 1
    done = subprocess.run(
        [sys.executable, "-m", "mindconverter", *map(str, argv), "--output", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == exit_code
    assert error_of(done.stderr)[0] == key
    assert "Traceback" not in done.stdout + done.stderr
    assert not (tmp_path / "o").exists()
