"""Hostile inputs, round two: forged lines and terminal escapes, impossible sizes, noise on
stderr, script names that would hide a standard-library module."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from mindconverter.codegen.naming import module_name
from tests.helpers import make_model
from tests.robustness.util import error_of, run_cli, save

ESCAPE = "\x1b[31m"
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _relu(input_name: str = "x", output_name: str = "y") -> onnx.ModelProto:
    return make_model(
        [helper.make_node("Relu", [input_name], [output_name])],
        [(input_name, np.float32, [1, 4])],
        [(output_name, np.float32, [1, 4])],
    )


def _unknown_operator(op_type: str, domain: str) -> onnx.ModelProto:
    model = make_model(
        [helper.make_node(op_type, ["x"], ["y"], domain=domain)],
        [("x", np.float32, [1, 4])],
        [("y", np.float32, [1, 4])],
    )
    model.opset_import.append(helper.make_opsetid(domain, 1))
    return model


@pytest.mark.parametrize(
    "model",
    [
        _relu(f"x{ESCAPE}red\x1b[0m"),
        _relu(output_name="y\nConverted rate: 100.00%"),
        _unknown_operator("Op\n    Relu 99", f"my.domain{ESCAPE}\x1b[2J"),
    ],
    ids=["escape-in-input-name", "newline-in-output-name", "newline-in-op-type-and-domain"],
)
def test_model_text_never_forges_a_line_or_reaches_the_terminal_raw(tmp_path, model):
    path = save(model, tmp_path / "m.onnx")
    code, out, err = run_cli(["--model_file", str(path), "--output", str(tmp_path / "out")])
    assert code == 0 and err == ""
    report = (tmp_path / "out" / "report_of_m.txt").read_text()
    for text in (out, report):
        assert "\x1b" not in text
        assert not any(
            line.startswith(("Converted rate", "    Relu 99")) for line in text.split("\n")
        )
    assert "\\x1b" in out + report or "\\n" in out + report  # shown, escaped


def test_a_value_no_machine_could_hold_is_refused(tmp_path):
    model = make_model(
        [helper.make_node("Expand", ["x", "shape"], ["y"])],
        [("x", np.float32, [1, 1])],
        [("y", np.float32, None)],
        {"shape": np.array([2**31, 2**31], np.int64)},
    )
    path = save(model, tmp_path / "m.onnx")
    code, _, err = run_cli(["--model_file", str(path), "--output", str(tmp_path / "out")])
    assert code == 1 and error_of(err)[0] == "ABSURD_DIMENSION"
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_numpy_warnings_while_folding_go_to_the_report_not_stderr(tmp_path):
    model = make_model(
        [
            helper.make_node("Cast", ["c"], ["h"], to=onnx.TensorProto.FLOAT16),  # overflows
            helper.make_node("Cast", ["h"], ["f"], to=onnx.TensorProto.FLOAT),
            helper.make_node("Div", ["d", "d"], ["q"]),  # 0 / 0
            helper.make_node("Add", ["f", "q"], ["s"]),
            helper.make_node("Add", ["x", "s"], ["y"]),
        ],
        [("x", np.float32, [2])],
        [("y", np.float32, [2])],
        {
            "c": np.array([60000, 70000], np.float32),
            "d": np.array([0.0, 1.0], np.float32),
        },
    )
    path = save(model, tmp_path / "m.onnx")
    code, _, err = run_cli(["--model_file", str(path), "--output", str(tmp_path / "out")])
    assert code == 0 and err == ""
    report = (tmp_path / "out" / "report_of_m.txt").read_text()
    assert "Warning while converting: RuntimeWarning: overflow" in report


@pytest.mark.parametrize("stem", ["signal", "json", "types", "os", "Math", "numpy", "random"])
def test_script_names_never_hide_a_module_it_or_its_user_imports(stem):
    assert module_name(stem) == f"{stem}_model"
    assert module_name("resnet50") == "resnet50"


def test_a_model_named_like_a_standard_module_gives_an_importable_script(tmp_path):
    path = save(_relu(), tmp_path / "signal.onnx")
    code, out, _ = run_cli(["--model_file", str(path), "--output", str(tmp_path / "out")])
    assert code == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "report_of_signal_model.txt",
        "signal_model.ckpt",
        "signal_model.py",
        "weight_map_of_signal_model.json",
    ]


def test_folding_weights_is_silent_too(tmp_path):
    weight = numpy_helper.from_array(np.full((2, 2), 1e30, np.float32), "w")
    model = make_model(
        [
            helper.make_node("Mul", ["w", "w"], ["ww"]),  # inf: overflow while folding
            helper.make_node("MatMul", ["x", "ww"], ["y"]),
        ],
        [("x", np.float32, [1, 2])],
        [("y", np.float32, [1, 2])],
        {"w": numpy_helper.to_array(weight)},
    )
    path = save(model, tmp_path / "m.onnx")
    code, _, err = run_cli(["--model_file", str(path), "--output", str(tmp_path / "out")])
    assert code == 0 and err == ""


@pytest.mark.parametrize("kind", ["fifo", "device", "too-large"])
def test_in_file_reads_only_bounded_regular_files(tmp_path, kind):
    import os

    if kind == "fifo":
        path = tmp_path / "model.py"
        os.mkfifo(path)  # reading it would block forever
    elif kind == "device":
        path = "/dev/zero"  # reading it would never end
    else:
        path = tmp_path / "model.py"
        path.write_text("x = 1\n" * (2 << 20))  # 12 MB
    code, out, err = run_cli(["--in_file", str(path), "--output", str(tmp_path / "out")])
    assert code == 1 and error_of(err)[0] == "SCRIPT_UNREADABLE"
    assert len(err.strip().splitlines()) == 1  # the deprecation notice is on stdout
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_during_any_stage_leaves_the_previous_results_and_no_temporaries(
    tmp_path, signal_name
):
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "out"
    args = [sys.executable, "-m", "mindconverter", "--model_file"]
    args += [
        str(FIXTURES / "tiny_resnet_dynamo.onnx"),
        "--shape",
        "1,3,32,32",
        "--output",
        str(out),
    ]
    assert subprocess.run(args, capture_output=True, timeout=600).returncode == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    process = subprocess.Popen(
        args + ["--overwrite", "--verify"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 300
    while not any(".tmp" in p.name for p in out.iterdir()):  # staged: verification is next
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    process.send_signal(getattr(signal, signal_name))
    _, err = process.communicate(timeout=300)
    number = getattr(signal, signal_name)
    assert process.returncode == 128 + number, err
    assert err.decode().strip().splitlines() == [
        f"Interrupted by {signal_name}; nothing was written."
    ]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_failure_while_publishing_over_old_results_puts_them_back(tmp_path, monkeypatch):
    from mindconverter.outputs import atomic

    targets = [tmp_path / name for name in ("a.py", "a.ckpt", "report.txt")]
    for path in targets:
        path.write_text(f"old {path.name}")
    calls = []

    def failing_third(tmp, final):
        calls.append(final)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        real(tmp, final)

    real = atomic._place_new
    monkeypatch.setattr(atomic, "_place_new", failing_third)
    with pytest.raises(Exception) as info, atomic.AtomicOutputs(overwrite=True) as outputs:
        for path in targets:
            outputs.write_text(path, f"new {path.name}")
        outputs.publish()
    assert getattr(info.value, "key", "") == "OUTPUT_NOT_WRITABLE"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in targets)
    assert all(path.read_text() == f"old {path.name}" for path in targets)


def test_nested_loops_with_constant_trip_counts_stay_bounded(tmp_path):
    """Three nested Loops of 200 iterations would unroll to millions of nodes: the converter
    stops at its budget, says so, and finishes quickly."""
    import time

    from onnx import TensorProto

    def body(depth: int) -> onnx.GraphProto:
        d = str(depth)  # names unique across nesting levels (ONNX values are single-assignment)
        nodes = [helper.make_node("Identity", ["cond_in" + d], ["cond_out" + d])]
        value = "v_in" + d
        if depth:
            trip = numpy_helper.from_array(np.array(200, np.int64))
            nodes.append(helper.make_node("Constant", [], ["m" + d], value=trip))
            inner = body(depth - 1)
            nodes.append(helper.make_node("Loop", ["m" + d, "", value], ["w" + d], body=inner))
            value = "w" + d
        one = numpy_helper.from_array(np.array([1.0], np.float32))
        nodes.append(helper.make_node("Constant", [], ["one" + d], value=one))
        nodes.append(helper.make_node("Add", [value, "one" + d], ["v_out" + d]))
        info = helper.make_tensor_value_info
        inputs = [info("i" + d, TensorProto.INT64, []), info("cond_in" + d, TensorProto.BOOL, [])]
        inputs.append(info("v_in" + d, 1, [1]))
        outputs = [info("cond_out" + d, TensorProto.BOOL, []), info("v_out" + d, 1, [1])]
        return helper.make_graph(nodes, "body" + d, inputs, outputs)

    model = make_model(
        [helper.make_node("Loop", ["m", "", "x"], ["y"], body=body(3))],
        [("x", np.float32, [1])],
        [("y", np.float32, [1])],
        {"m": np.array(200, np.int64)},
    )
    path = save(model, tmp_path / "m.onnx")
    started = time.monotonic()
    code, out, err = run_cli(["--model_file", str(path), "--output", str(tmp_path / "out")])
    assert time.monotonic() - started < 60
    assert code == 0 and err == ""
    assert out.count("NOTE: Loops were left as they are") == 1


def test_a_network_without_weights_is_documented_as_such(tmp_path):
    path = save(_relu(), tmp_path / "m.onnx")
    code, _, _ = run_cli(["--model_file", str(path), "--output", str(tmp_path / "out")])
    script = (tmp_path / "out" / "m.py").read_text()
    assert code == 0
    assert "load_checkpoint" not in script
    assert "no weights" in script.split("\n\n")[0]


def test_shadowing_a_value_of_the_enclosing_graph_is_refused(tmp_path):
    info = helper.make_tensor_value_info
    hundred = numpy_helper.from_array(np.array([100.0], np.float32))
    then_branch = helper.make_graph(
        [
            helper.make_node("Constant", [], ["c"], value=hundred),
            helper.make_node("Add", ["x", "c"], ["t"]),  # 't' is also an outer value
        ],
        "then",
        [],
        [info("t", 1, [1])],
    )
    else_branch = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["o"])], "else", [], [info("o", 1, [1])]
    )
    model = make_model(
        [
            helper.make_node("Mul", ["x", "two"], ["t"]),
            helper.make_node(
                "If", ["cond"], ["r"], then_branch=then_branch, else_branch=else_branch
            ),
            helper.make_node("Add", ["r", "t"], ["y"]),
        ],
        [("x", np.float32, [1])],
        [("y", np.float32, [1])],
        {"two": np.array([2.0], np.float32), "cond": np.array(True)},
    )
    path = save(model, tmp_path / "m.onnx")
    code, _, err = run_cli(["--model_file", str(path), "--output", str(tmp_path / "out")])
    assert code == 1 and error_of(err)[0] == "INVALID_GRAPH" and "shadows" in err


def test_sparse_initializers_are_converted_dense(tmp_path):
    values = numpy_helper.from_array(np.array([1.5, -2.0], np.float32), "w")
    indices = numpy_helper.from_array(np.array([0, 3], np.int64), "w_indices")
    model = make_model(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        [("x", np.float32, [4])],
        [("y", np.float32, [4])],
    )
    model.graph.sparse_initializer.append(helper.make_sparse_tensor(values, indices, [4]))
    path = save(model, tmp_path / "m.onnx")
    code, out, err = run_cli(
        ["--model_file", str(path), "--output", str(tmp_path / "out"), "--verify"]
    )
    assert code == 0 and "Verification MATCH" in out, err
    model.graph.sparse_initializer[0].indices.int64_data[:] = [0, 9]  # outside dims [4]
    model.graph.sparse_initializer[0].indices.ClearField("raw_data")
    save(model, path)
    code, _, err = run_cli(["--model_file", str(path), "--output", str(tmp_path / "out2")])
    assert code == 1 and error_of(err)[0] == "INVALID_GRAPH"
