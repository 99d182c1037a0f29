"""Symbol merges of the symbolic inference chosen the same way on every run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import sympy

from mindconverter.graph.symbolic_merges import merge_target

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_the_target_is_a_number_then_an_input_dimension_then_a_plain_symbol_then_the_shortest():
    dims = {
        "batch": sympy.Symbol("batch"),
        "past + sequence": sympy.Symbol("p") + sympy.Symbol("s"),
    }
    dims["sequence + 4095"] = sympy.Symbol("s") + 4095
    assert merge_target(["past + sequence", "4", "batch"], {"batch"}, dims) == "4"
    assert merge_target(["past + sequence", "batch"], {"batch"}, dims) == "batch"
    assert merge_target(["past + sequence", "batch"], set(), dims) == "batch"
    # two expressions of one length: the first text in order, whatever the set order was
    for symbols in (["sequence + 4095", "past + sequence"], ["past + sequence", "sequence + 4095"]):
        assert merge_target(symbols, set(), dims) == "past + sequence"
    assert merge_target(["s + 1", "past + sequence"], set(), dims) == "s + 1"


@pytest.mark.slow
def test_a_sliding_window_decoder_converts_to_the_same_script_under_any_hash_seed(tmp_path):
    """Gemma-2's cache lengths broadcast against each other: the script used to depend on
    PYTHONHASHSEED (``past + sequence`` against ``sequence + 4095``)."""
    shapes = ["input_ids=1,2", "attention_mask=1,5"]
    shapes += [f"past_{kind}_{i}=1,1,3,8" for i in (0, 1) for kind in ("key", "value")]
    scripts = set()
    for seed in ("1", "3", "5"):
        out = tmp_path / seed
        command = [sys.executable, "-m", "mindconverter", "--model_file"]
        command += [str(FIXTURES / "tiny_gemma2_kv_torchscript.onnx"), "--shape", *shapes]
        command += ["--output", str(out)]
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run(command, env=env, check=True, capture_output=True, timeout=600)
        scripts.add((out / "tiny_gemma2_kv_torchscript.py").read_text())
    assert len(scripts) == 1
