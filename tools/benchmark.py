"""Measure conversion wall time and peak memory (a benchmark that prints; not a test).

    python tools/benchmark.py                       # the models bundled in tests/fixtures
    python tools/benchmark.py m1.onnx m2.onnx       # any models (shapes: dynamic sizes -> 1 / 16)
    python tools/benchmark.py DIR/*.onnx --repeat 3 --against /path/to/other/checkout

Each conversion runs in a fresh process (``mindconverter --model_file ...``); wall time
is measured around it and peak memory is the process's peak resident set (``ru_maxrss``, file
pages it touched included). Runs are interleaved (model by model, tool by tool, ``--repeat``
rounds) so a busy machine slows every tool alike; the table shows medians. With onnx2torch
importable in this Python, it is measured too (convert + save the state dict) and the ratio
column compares against it. ``--against DIR`` also measures another mindconverter source tree
(e.g. a checkout of main before a change) in the same run. Big models to try:
``tools/make_benchmark_models.py`` (needs torch and transformers).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import onnx

from mindconverter.frontends.skeleton import split_weights

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = sorted((ROOT / "tests" / "fixtures").glob("*.onnx"))

_ONNX2TORCH = """
import sys, onnx, torch
from onnx2torch import convert
model = convert(onnx.load(sys.argv[1]))
torch.save(model.state_dict(), sys.argv[2])
"""


@dataclass
class Tool:
    """One converter under measurement: how to run it on a model into a folder."""

    name: str
    command: callable
    env: dict = field(default_factory=dict)


def _graph_only(path: Path) -> onnx.ModelProto:
    """The model without its weight bytes: this process stays small, and a child's peak memory
    (``ru_maxrss`` counts what the parent held when it forked) is the child's own."""
    split = split_weights(path)
    if split is not None:
        return split.model
    return onnx.load(str(path), load_external_data=False)


def example_shapes(path: Path) -> list[str]:
    """``--shape`` arguments for every input: declared sizes, dynamic ones as 1 (first axis) or 16."""
    model = _graph_only(path)
    weights = {init.name for init in model.graph.initializer}
    shapes = []
    for inp in model.graph.input:
        if inp.name in weights:
            continue
        dims = [
            str(d.dim_value) if d.HasField("dim_value") else ("1" if axis == 0 else "16")
            for axis, d in enumerate(inp.type.tensor_type.shape.dim)
        ]
        shapes.append(f"{inp.name}={','.join(dims)}")
    return shapes


def mindconverter_tool(name: str, source_tree: Path | None) -> Tool:
    def command(model: Path, out: Path) -> list[str]:
        return [
            sys.executable,
            "-m",
            "mindconverter",
            "--model_file",
            str(model),
            "--shape",
            *example_shapes(model),
            "--output",
            str(out),
        ]  # stderr is a pipe: no progress output to pay for

    env = {"PYTHONPATH": str(source_tree)} if source_tree else {}
    return Tool(name, command, env)


def onnx2torch_tool() -> Tool:
    def command(model: Path, out: Path) -> list[str]:
        return [sys.executable, "-c", _ONNX2TORCH, str(model), str(out / "state_dict.pt")]

    return Tool("onnx2torch", command)


def measure(tool: Tool, model: Path) -> tuple[float, float] | None:
    """(wall seconds, peak MB) of one run, or None when the tool failed."""
    with tempfile.TemporaryDirectory(prefix="mcbench-") as out:
        env = {**os.environ, **tool.env}
        started = time.perf_counter()
        process = subprocess.Popen(
            tool.command(model, Path(out)),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        error = process.stderr.read().decode(errors="replace").strip()
        process.stderr.close()
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            print(f"  {tool.name} failed on {model.name}: {error.splitlines()[-1:]}")
            return None
        return wall, usage.ru_maxrss / 1024


def model_size_mb(path: Path) -> float:
    """The model file plus its external-data files, in MB."""
    total = path.stat().st_size
    model = _graph_only(path)
    locations = {
        entry.value
        for init in model.graph.initializer
        for entry in init.external_data
        if entry.key == "location"
    }
    for location in locations:
        data = path.parent / location
        if data.is_file():
            total += data.stat().st_size
    return total / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", type=Path, help="ONNX models (default: bundled)")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--against", type=Path, help="another mindconverter source tree")
    parser.add_argument("--no-onnx2torch", action="store_true", help="skip onnx2torch")
    args = parser.parse_args()
    models = args.models or BUNDLED
    tools = [mindconverter_tool("mindconverter", None)]
    if args.against:
        tools.append(mindconverter_tool(f"mindconverter@{args.against.name}", args.against))
    if not args.no_onnx2torch and importlib.util.find_spec("onnx2torch") is not None:
        tools.append(onnx2torch_tool())
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for round_index in range(args.repeat):
        print(f"round {round_index + 1}/{args.repeat}", flush=True)
        for model in models:
            for tool in tools:
                result = measure(tool, model)
                if result is not None:
                    runs.setdefault((model.name, tool.name), []).append(result)
    print()
    print(
        "| model (size) | tool | wall (median) | peak memory (median) | peak / size | wall ratio |"
    )
    print("|---|---|---|---|---|---|")
    for model in models:
        size = model_size_mb(model)
        reference = runs.get((model.name, "onnx2torch"))
        reference_wall = statistics.median(w for w, _ in reference) if reference else None
        for tool in tools:
            results = runs.get((model.name, tool.name))
            if not results:
                print(f"| {model.name} ({size:.0f} MB) | {tool.name} | failed | | | |")
                continue
            wall = statistics.median(w for w, _ in results)
            peak = statistics.median(p for _, p in results)
            ratio = f"{wall / reference_wall:.2f}x" if reference_wall else "-"
            print(
                f"| {model.name} ({size:.0f} MB) | {tool.name} | {wall:.2f} s | {peak:.0f} MB "
                f"| {peak / size:.2f}x | {ratio} |"
            )


if __name__ == "__main__":
    main()
