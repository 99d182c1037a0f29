"""Run node tests the way a user runs mindconverter: the CLI in a subprocess, then the generated
script and checkpoint in a fresh MindSpore process.

For each test, :func:`prepare_case` writes the test's model (configuration inputs frozen into
initializers, see :func:`tools.node_suite.parameter_inputs` with ``weights=False``: layer weights
stay graph inputs, as the suite gives them) and its data into a work folder, and
:func:`convert_case` runs ``python -m mindconverter --model_file model.onnx --shape NAME=D,D ...``
with every remaining input named and shaped as the test data has it (``NAME=`` for a scalar,
``NAME=0`` or ``NAME=2,0`` for an empty one). The converted cases are then checked in batches by
:func:`check_cases`: one ``python tools/node_suite_cli.py --check-batch FILE`` process per batch
imports MindSpore once, loads each script + checkpoint (``load_checkpoint`` +
``load_param_into_net``, strict), feeds the test's inputs and compares with the expected outputs.
A batch process that stalls past the timeout or dies is replaced; the case it was on is recorded
as ``timeout`` / ``crash``.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools import node_suite as suite  # noqa: E402 - after the sys.path set-up above

_UNCONVERTED_LINE = re.compile(r"\[UnConvert\] '(?:[^':]*::)?([^']+)' didn't convert\. (.*)")


def shape_arguments(model: onnx.ModelProto, inputs: list[np.ndarray]) -> list[str]:
    """``--shape`` values naming every graph input with its test-data shape."""
    return [
        f"{value.name}={','.join(str(int(d)) for d in np.shape(array))}"
        for value, array in zip(model.graph.input, inputs)
    ]


def prepare_case(test: suite.NodeTest, data_dir: Path, work: Path) -> dict:
    """Write ``model.onnx`` and ``inputs.npz`` for one test into ``work``; returns the case."""
    folder = test.path(data_dir)
    model = onnx.load(str(folder / "model.onnx"))
    inputs, expected = suite.read_data_set(folder, model)
    model, inputs, frozen = suite.freeze_parameter_inputs(model, inputs, weights=False)
    work.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(work / "model.onnx"))
    # pickled, not .npz: ml_dtypes arrays (int4, float8...) keep their dtype
    (work / "data.pickle").write_bytes(pickle.dumps((list(inputs), list(expected))))
    return {
        "name": test.name,
        "work": str(work),
        "shape": shape_arguments(model, inputs),
        "frozen": frozen,
        "rtol": max(test.rtol, suite.DEFAULT_RTOL),
        "atol": max(test.atol, suite.DEFAULT_ATOL),
    }


def cli_command(case: dict) -> list[str]:
    """The command line a user would type for this case."""
    command = [sys.executable, "-m", "mindconverter", "--model_file", "model.onnx"]
    if case["shape"]:
        command += ["--shape", *case["shape"]]
    return command + ["--output", "out", "--quiet", "--overwrite"]


def unconverted_operators(report: Path) -> dict[str, str]:
    """Operator -> reason for every ``[UnConvert]`` line of a report."""
    found: dict[str, str] = {}
    if report.is_file():
        for line in report.read_text(errors="replace").splitlines():
            match = _UNCONVERTED_LINE.search(line)
            if match:
                found.setdefault(match.group(1), match.group(2))
    return found


def convert_case(case: dict, timeout: float) -> suite.Outcome | None:
    """Run the CLI on a prepared case; an Outcome when it failed, None when it converted."""
    work = Path(case["work"])
    env = dict(os.environ, GLOG_v="3", PYTHONPATH=str(ROOT))
    started = time.perf_counter()
    try:
        done = subprocess.run(
            cli_command(case), cwd=work, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return _outcome(case, "timeout", f"the CLI took over {timeout:g} s", started=started)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        reason = lines[-1] if lines else f"exit code {done.returncode}"
        return _outcome(case, "conversion_error", reason, started=started)
    missing = unconverted_operators(work / "out" / "report_of_model.txt")
    if missing:
        reason = "; ".join(f"{op}: {why}" for op, why in sorted(missing.items()))
        return _outcome(case, "unconverted", reason, sorted(missing), started=started)
    case["convert_seconds"] = round(time.perf_counter() - started, 3)
    return None


def _outcome(case, status, reason="", ops=(), started=None, seconds=0.0) -> suite.Outcome:
    if started is not None:
        seconds = time.perf_counter() - started
    return suite.Outcome(
        case["name"],
        status,
        suite._one_line(reason),
        list(ops),
        list(case.get("frozen", [])),
        round(seconds, 3),
    )


# -- the fresh-process check -----------------------------------------------------------------


def check_one(case: dict) -> dict:
    """Load one converted case in this process, run it and compare (the batch process's work)."""
    from mindconverter.check.network import run_mindspore

    work = Path(case["work"])
    inputs, expected = pickle.loads((work / "data.pickle").read_bytes())  # the harness's own file
    started = time.perf_counter()
    try:
        with np.errstate(all="ignore"):
            actual = run_mindspore(work / "out" / "model.py", work / "out" / "model.ckpt", inputs)
    except Exception as exc:
        return {"status": "runtime_error", "reason": suite._ms_error(exc)}
    difference = suite.compare(actual, expected, case["rtol"], case["atol"])
    seconds = round(time.perf_counter() - started, 3)
    if difference:
        return {"status": "mismatch", "reason": difference, "seconds": seconds}
    return {"status": "pass", "seconds": seconds}


def check_batch_main(batch_file: Path, results_file: Path) -> None:
    """Entry of a batch process: one JSON line per case into ``results_file``, as each ends."""
    os.environ.setdefault("GLOG_v", "3")
    import mindspore  # noqa: F401 - imported once, before the first case

    cases = json.loads(Path(batch_file).read_text())
    with open(results_file, "a", encoding="utf-8") as out:
        for case in cases:
            result = {"name": case["name"], **check_one(case)}
            out.write(json.dumps(result) + "\n")
            out.flush()


def _read_results(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            break  # a line cut by a dying process
    return rows


def _start_batch(cases: list[dict], folder: Path, index: int):
    batch_file = folder / f"batch_{index}.json"
    results_file = folder / f"batch_{index}.results"
    batch_file.write_text(json.dumps(cases))
    results_file.unlink(missing_ok=True)
    env = dict(os.environ, GLOG_v="3", PYTHONPATH=str(ROOT))
    command = [sys.executable, str(Path(__file__).resolve()), "--check-batch", str(batch_file)]
    process = subprocess.Popen(
        command + [str(results_file)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return {"process": process, "cases": cases, "results": results_file, "seen": 0, "at": 0.0}


def check_cases(
    cases: list[dict], folder: Path, batch_size: int, workers: int, timeout: float, record
) -> None:
    """Check converted cases in fresh batch processes; ``record(case, outcome)`` for each."""
    queue = [cases[i : i + batch_size] for i in range(0, len(cases), batch_size)]
    running: list[dict] = []
    counter = 0
    while queue or running:
        while queue and len(running) < workers:
            counter += 1
            running.append(_start_batch(queue.pop(0), folder, counter))
            running[-1]["at"] = time.monotonic()
        time.sleep(0.5)
        for batch in list(running):
            rows = _read_results(batch["results"])
            for row in rows[batch["seen"] :]:
                case = batch["cases"][batch["seen"]]
                batch["seen"] += 1
                batch["at"] = time.monotonic()
                seconds = case.get("convert_seconds", 0.0) + row.get("seconds", 0.0)
                record(case, _outcome(case, row["status"], row.get("reason", ""), seconds=seconds))
            finished = batch["process"].poll() is not None
            stalled = time.monotonic() - batch["at"] > timeout
            if batch["seen"] == len(batch["cases"]) and finished:
                running.remove(batch)
            elif finished or stalled:
                batch["process"].kill()
                batch["process"].wait()
                case = batch["cases"][batch["seen"]]
                status = "timeout" if stalled and not finished else "crash"
                why = (
                    f"no result within {timeout:g} s"
                    if status == "timeout"
                    else f"the check process died (exit code {batch['process'].returncode})"
                )
                record(case, _outcome(case, status, why))
                running.remove(batch)
                rest = batch["cases"][batch["seen"] + 1 :]
                if rest:
                    queue.insert(0, rest)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--check-batch":
        check_batch_main(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        sys.exit("usage: node_suite_cli.py --check-batch BATCH.json RESULTS.jsonl")
