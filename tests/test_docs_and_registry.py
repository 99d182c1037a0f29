"""Docs generated from code stay current; the mapper registry's contract."""

import subprocess
import sys
from pathlib import Path

import numpy as np
from onnx import helper

from mindconverter.mappers import Call, Input, default_registry
from tests.helpers import assert_matches, make_model

ROOT = Path(__file__).resolve().parent.parent


def test_cli_doc_is_current():
    run = subprocess.run(
        [sys.executable, "tools/gen_cli_docs.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr


def test_readme_has_both_commands():
    readme = (ROOT / "README.md").read_text()
    assert "<!-- demo-command -->" in readme and "<!-- test-command -->" in readme
    assert "--model_file tests/fixtures/" in readme


def test_registry_dispatches_by_version_range():
    registry = default_registry()
    assert registry.lookup("Clip", 9).__name__ == "clip_attributes"
    assert registry.lookup("Clip", 13).__name__ == "clip_inputs"
    assert registry.lookup("NoSuchOp", 13) is None
    assert len(registry.op_types()) >= 40


def test_user_mapper_overrides_builtin_and_adds_custom_domain(tmp_path):
    registry = default_registry()

    @registry.register("Relu")
    def relu_as_relu6(ctx):
        return Call("ops.relu6", [Input(0)])

    @registry.register("Twice", domain="com.example")
    def twice(ctx):
        from mindconverter.mappers import BinOp, Lit

        return BinOp("*", Input(0), Lit(2.0))

    nodes = [helper.make_node("Relu", ["x"], ["r"])]
    model = make_model(nodes, [("x", np.float32, (2, 3))], [("r", np.float32, None)])
    result = assert_matches(
        model, tmp_path / "a", feeds={"x": np.full((2, 3), 0.5, np.float32)}, registry=registry
    )
    assert "ops.relu6" in result.script_path.read_text()
    assert default_registry().lookup("Relu", 13).__name__ != "relu_as_relu6"  # no global state
