"""Nothing half-written: results appear all together or not at all, existing results are kept,
the input is byte-identical afterwards and nothing is written beside it."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import mindconverter.outputs.atomic as output_module
import mindconverter.outputs.checkpoint as ckpt
from mindconverter import convert
from mindconverter.errors import MindConverterError
from tests.robustness.util import error_of, run_cli, save, snapshot, valid_model

RESULTS = ["m.ckpt", "m.py", "report_of_m.txt", "weight_map_of_m.json"]


@pytest.fixture()
def model(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    return save(valid_model(), src / "m.onnx")


def _failing_writer(exc):
    def write(stream, parameters, progress=None):
        stream.write(b"\x0a\x05partial")  # some bytes are already in the temporary file
        raise exc

    return write


@pytest.mark.parametrize(
    "exc, key",
    [
        (OSError(errno.ENOSPC, "No space left on device"), "OUTPUT_NOT_WRITABLE"),
        (RuntimeError("writer bug"), "INTERNAL_ERROR"),
    ],
)
def test_failure_while_writing_checkpoint_leaves_nothing(tmp_path, model, monkeypatch, exc, key):
    monkeypatch.setattr(ckpt, "write_checkpoint", _failing_writer(exc))
    before = snapshot(model.parent)
    out, report = tmp_path / "out" / "deep", tmp_path / "rep"
    code, _, stderr = run_cli(["--model_file", model, "--output", out, "--report", report])
    assert (code, error_of(stderr)[0]) == (1, key)
    assert not (tmp_path / "out").exists() and not report.exists(), (
        "folders created for a failed run remain"
    )
    assert snapshot(model.parent) == before


def test_failure_keeps_previous_results_even_with_overwrite(tmp_path, model, monkeypatch):
    out = tmp_path / "out"
    assert run_cli(["--model_file", model, "--output", out])[0] == 0
    before = snapshot(out)
    monkeypatch.setattr(ckpt, "write_checkpoint", _failing_writer(OSError(errno.EIO, "I/O error")))
    code, _, stderr = run_cli(["--model_file", model, "--output", out, "--overwrite"])
    assert code == 1 and error_of(stderr)[0] == "OUTPUT_NOT_WRITABLE"
    assert snapshot(out) == before  # no temporaries, old results intact


def test_failure_while_publishing_takes_back_what_was_placed(tmp_path, model, monkeypatch):
    real = output_module._place_new
    calls = []

    def flaky(tmp, final):
        calls.append(final)
        if len(calls) == 3:
            raise OSError(errno.EIO, "I/O error")
        real(tmp, final)

    monkeypatch.setattr(output_module, "_place_new", flaky)
    out = tmp_path / "out"
    code, _, stderr = run_cli(["--model_file", model, "--output", out])
    assert code == 1 and error_of(stderr)[0] == "OUTPUT_NOT_WRITABLE"
    assert len(calls) == 3
    assert not out.exists() or list(out.iterdir()) == []


def test_file_appearing_during_conversion_is_not_clobbered(tmp_path, model, monkeypatch):
    out = tmp_path / "out"
    real = ckpt.write_checkpoint

    def racing_writer(stream, parameters, progress=None):
        out.mkdir(exist_ok=True)
        (out / "m.py").write_text("# someone else's file\n")
        return real(stream, parameters, progress)

    monkeypatch.setattr(ckpt, "write_checkpoint", racing_writer)
    with pytest.raises(MindConverterError) as info:
        convert(model, output=out)
    assert info.value.key == "OUTPUT_EXISTS"
    assert sorted(p.name for p in out.iterdir()) == ["m.py"]
    assert (out / "m.py").read_text() == "# someone else's file\n"


def test_interrupt_leaves_no_temporaries(tmp_path, model, monkeypatch):
    monkeypatch.setattr(ckpt, "write_checkpoint", _failing_writer(KeyboardInterrupt()))
    code, _, stderr = run_cli(["--model_file", model, "--output", tmp_path / "out"])
    assert code == 130 and "nothing was written" in stderr
    assert not (tmp_path / "out").exists()


def test_success_writes_all_results_with_normal_permissions(tmp_path, model):
    before = snapshot(model.parent)
    out, report = tmp_path / "a" / "b" / "out", tmp_path / "reports" / "x"
    code, _, stderr = run_cli(["--model_file", model, "--output", out, "--report", report])
    assert code == 0 and stderr == ""
    assert sorted(p.name for p in out.iterdir()) == ["m.ckpt", "m.py"]
    assert sorted(p.name for p in report.iterdir()) == ["report_of_m.txt", "weight_map_of_m.json"]
    mask = os.umask(0)
    os.umask(mask)
    for path in list(out.iterdir()) + list(report.iterdir()):
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask
    assert snapshot(model.parent) == before  # input byte-identical, nothing beside it


def _as_nobody():
    if os.geteuid() != 0:
        return []
    tool = shutil.which("setpriv")
    if tool is None:
        pytest.skip(
            "running as root without setpriv: cannot drop privileges to test read-only folders"
        )
    return [tool, "--reuid=65534", "--regid=65534", "--clear-groups"]


def test_read_only_input_folder():
    """The input folder is read-only: conversion elsewhere works; output into it fails cleanly."""
    prefix = _as_nobody()
    base_dir = tempfile.mkdtemp(prefix="mc-readonly-")  # pytest's tmp_path is private to root
    src = Path(base_dir) / "src"
    src.mkdir()
    model = save(valid_model(), src / "m.onnx")
    before = snapshot(src)
    out = Path(base_dir) / "writable"
    out.mkdir()
    for path in (Path(base_dir), out):
        path.chmod(0o777)
    src.chmod(0o555)
    model.chmod(0o444)
    try:
        base = [*prefix, sys.executable, "-m", "mindconverter", "--model_file", str(model)]
        done = subprocess.run(
            base + ["--output", str(out / "o")],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
            cwd=src,
        )
        assert done.returncode == 0, done.stderr
        assert sorted(p.name for p in (out / "o").iterdir()) == RESULTS
        done = subprocess.run(
            base + ["--output", str(src / "o")],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
            cwd=src,
        )
        assert done.returncode == 1 and error_of(done.stderr)[0] == "OUTPUT_NOT_WRITABLE"
    finally:
        src.chmod(0o755)
    assert snapshot(src) == before
    shutil.rmtree(base_dir)
