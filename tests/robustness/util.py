"""Helpers for the robustness tests: small models, a CLI runner, error-line parsing."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

from mindconverter.cli import main
from mindconverter.errors import ERROR_CODES
from tests.helpers import make_model

ERROR_LINE = re.compile(r"^\[(?P<category>[A-Za-z]+)\] code (?P<code>\d{7}): (?P<text>\S.*)$")
CODE_TO_KEY = {entry.number: key for key, entry in ERROR_CODES.items()}


def valid_model(opset: int = 17) -> onnx.ModelProto:
    """x[1,4] -> MatMul(w) -> Add(b) -> Relu -> y: small, with weights, every stage exercised."""
    w = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    b = np.array([0.5, -0.5, 0.25], np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="/fc/MatMul"),
        helper.make_node("Add", ["h", "b"], ["h2"], name="/fc/Add"),
        helper.make_node("Relu", ["h2"], ["y"], name="/act/Relu"),
    ]
    return make_model(
        nodes,
        [("x", np.float32, [1, 4])],
        [("y", np.float32, [1, 3])],
        {"w": w, "b": b},
        opset=opset,
    )


def dynamic_model(second_batch: str = "N") -> onnx.ModelProto:
    """Two inputs with dynamic batch: a[N,4] + c[N,4] -> Relu (c's batch named
    ``second_batch``: another name needs a --shape of its own)."""
    nodes = [helper.make_node("Add", ["a", "c"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    return make_model(
        nodes,
        [("a", np.float32, ["N", 4]), ("c", np.float32, [second_batch, 4])],
        [("y", np.float32, None)],
    )


def save(model: onnx.ModelProto, path: Path) -> Path:
    path.write_bytes(model.SerializeToString())
    return path


@contextlib.contextmanager
def _cwd(path: Path | None):
    if path is None:
        yield
        return
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def run_cli(argv: Sequence[str], cwd: Path | None = None) -> tuple[int, str, str]:
    """Run ``mindconverter.cli.main`` in-process; returns (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _cwd(cwd):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def error_of(stderr: str) -> tuple[str, str]:
    """(error key, message) of the single error line on stderr; fails on anything else."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected exactly one stderr line, got:\n{stderr}"
    assert "Traceback" not in stderr
    match = ERROR_LINE.match(lines[0])
    assert match, f"not an error line: {lines[0]!r}"
    number = int(match["code"])
    assert number in CODE_TO_KEY, f"code {number} is not in ERROR_CODES"
    key = CODE_TO_KEY[number]
    assert match["category"] == ERROR_CODES[key].category
    return key, match["text"]


def snapshot(folder: Path) -> dict[str, str]:
    """Every file below ``folder`` (relative path -> sha256), to prove nothing changed."""
    result = {}
    for path in sorted(Path(folder).rglob("*")):
        if path.is_file():
            result[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif path.is_dir():
            result[str(path.relative_to(folder)) + "/"] = "dir"
    return result
