"""Mutation fuzzing of model files through the real command line, in a separate process.

Small valid models (built here and two exporter fixtures) are mutated with seeded byte edits (bit
flips, overwritten bytes, truncation, duplicated or deleted chunks) and structured edits made on
the protobuf (dims, dtypes, attribute values, op types, dropped or duplicated inputs, swapped
names, huge values, in the main graph or a subgraph). Each mutant is converted by
``mindconverter.cli.main`` in a driver process (``mutation_driver.py``, many mutants per process;
a hang or a crash is pinned to its mutant by a timeout per mutant). Every mutant must end in:

- exit 0, nothing on stderr, exactly the four results (script, checkpoint, report, weight map)
  and no staged or hidden file, and a script that imports and builds its network with the
  checkpoint; or
- exit 1 or 2 with exactly one stderr line in the coded format (docs/errors.md), a code of the
  table other than INTERNAL_ERROR, and no output folder left (or an empty one);

never a traceback, never a change to the input file or a file written beside it.
MINDCONVERTER_FUZZ_SCALE multiplies the number of mutants (default 1: 96 mutants);
MINDCONVERTER_FUZZ_FINDINGS=DIR copies every failing mutant there with what it printed.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import selectors
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from mindconverter.errors import ERROR_CODES
from tests.helpers import make_model
from tests.robustness.util import ERROR_LINE, valid_model

SCALE = float(os.environ.get("MINDCONVERTER_FUZZ_SCALE", "1"))
FINDINGS = os.environ.get("MINDCONVERTER_FUZZ_FINDINGS")
BATCHES = 4
MUTANTS = max(BATCHES, int(96 * SCALE))
TIMEOUT = 60.0  # seconds per mutant (conversion and import of the script)
STARTUP = 60.0  # seconds for the driver process to import its libraries
DRIVER = Path(__file__).resolve().with_name("mutation_driver.py")
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CODE_TO_KEY = {entry.number: key for key, entry in ERROR_CODES.items()}
RESULT_NAMES = ["m.ckpt", "m.py", "report_of_m.txt", "weight_map_of_m.json"]
F = np.float32


def conv_model() -> onnx.ModelProto:
    """Conv + BatchNorm + MaxPool, then exporter-style flatten (Shape, Gather, Concat, Reshape)
    and Gemm: weights, attributes, shape arithmetic and a Constant node."""
    rng = np.random.default_rng(0)
    minus_one = numpy_helper.from_array(np.array([-1], np.int64))
    nodes = [
        helper.make_node(
            "Conv", ["x", "cw", "cb"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="conv"
        ),
        helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], epsilon=1e-5),
        helper.make_node("Relu", ["n"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Shape", ["p"], ["sh"]),
        helper.make_node("Gather", ["sh", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes"], ["b1"]),
        helper.make_node("Constant", [], ["minus1"], value=minus_one),
        helper.make_node("Concat", ["b1", "minus1"], ["newshape"], axis=0),
        helper.make_node("Reshape", ["p", "newshape"], ["flat"]),
        helper.make_node("Gemm", ["flat", "fw", "fb"], ["y"], transB=1, alpha=1.0),
    ]
    inits = {
        "cw": rng.standard_normal((2, 1, 3, 3)).astype(F),
        "cb": np.zeros(2, F),
        "s": np.ones(2, F),
        "b": np.zeros(2, F),
        "m": np.zeros(2, F),
        "v": np.ones(2, F),
        "zero": np.array(0, np.int64),
        "axes": np.array([0], np.int64),
        "fw": rng.standard_normal((3, 8)).astype(F),
        "fb": np.zeros(3, F),
    }
    return make_model(nodes, [("x", F, [1, 1, 4, 4])], [("y", F, None)], inits, opset=13)


def branchy_model() -> onnx.ModelProto:
    """An If on a constant condition and a Loop of three iterations: subgraphs to mutate."""
    info = helper.make_tensor_value_info
    one = numpy_helper.from_array(np.array([1.0, 2.0], F))
    then_branch = helper.make_graph(
        [
            helper.make_node("Constant", [], ["k"], value=one),
            helper.make_node("Mul", ["x", "k"], ["t"]),
        ],
        "then",
        [],
        [info("t", TensorProto.FLOAT, [2])],
    )
    else_branch = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["e"])], "else", [], [info("e", TensorProto.FLOAT, [2])]
    )
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Add", ["acc_in", "step"], ["acc_out"]),
            helper.make_node("Cast", ["i"], ["i_float"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["acc_out", "i_float"], ["scan_out"]),
        ],
        "body",
        [
            info("i", TensorProto.INT64, []),
            info("cond_in", TensorProto.BOOL, []),
            info("acc_in", TensorProto.FLOAT, [2]),
        ],
        [
            info("cond_out", TensorProto.BOOL, []),
            info("acc_out", TensorProto.FLOAT, [2]),
            info("scan_out", TensorProto.FLOAT, [2]),
        ],
    )
    nodes = [
        helper.make_node("If", ["cond"], ["r"], then_branch=then_branch, else_branch=else_branch),
        helper.make_node("Loop", ["trips", "", "r"], ["acc", "scans"], body=body),
        helper.make_node("ReduceSum", ["scans", "axis0"], ["total"], keepdims=0),
        helper.make_node("Add", ["acc", "total"], ["y"]),
    ]
    inits = {
        "cond": np.array(True),
        "trips": np.array(3, np.int64),
        "step": np.array([0.5, -0.5], F),
        "axis0": np.array([0], np.int64),
    }
    return make_model(nodes, [("x", F, [2])], [("y", F, [2])], inits, opset=13)


SEEDS: dict[str, tuple[bytes, list[str]]] = {
    "mlp": (valid_model().SerializeToString(), []),
    "conv": (conv_model().SerializeToString(), []),
    "branchy": (branchy_model().SerializeToString(), []),
    "cnn-export": ((FIXTURES / "tiny_cnn_training.onnx").read_bytes(), ["--shape", "1,3,8,8"]),
    "lstm-export": ((FIXTURES / "tiny_lstm_torchscript.onnx").read_bytes(), ["--shape", "1,5"]),
}

# --- mutations -------------------------------------------------------------------------------------

HUGE_INTS = [-1, 0, 2**31, 2**40, 2**62, -(2**62), 2**63 - 1]
OP_TYPES = ["Relu", "Conv", "Reshape", "Gemm", "Loop", "If", "Cast", "Concat", "Expand", "Tile"]
OP_TYPES += ["Range", "ConstantOfShape", "Split", "Resize", "NoSuchOp", "", "relu"]


def _bytes_mutation(data: bytearray, rng: random.Random) -> bytearray:
    kind = rng.randrange(6)
    position = rng.randrange(len(data)) if data else 0
    if kind == 0:  # bit flips
        for _ in range(rng.choice([1, 1, 2, 8])):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif kind == 1:  # overwritten bytes
        for i in range(rng.choice([1, 2, 4])):
            if position + i < len(data):
                data[position + i] = rng.choice([0, 0xFF, 0x7F, 0x80, rng.randrange(256)])
    elif kind == 2:  # truncation
        del data[rng.randrange(1, len(data)) :]
    elif kind == 3:  # a chunk duplicated in place or elsewhere
        size = rng.randrange(1, 64)
        chunk = data[position : position + size]
        target = rng.randrange(len(data) + 1)
        data[target:target] = chunk
    elif kind == 4:  # a chunk deleted
        del data[position : position + rng.randrange(1, 64)]
    else:  # a chunk moved
        size = rng.randrange(1, 32)
        chunk = data[position : position + size]
        del data[position : position + size]
        target = rng.randrange(len(data) + 1)
        data[target:target] = chunk
    return data


def _graphs(graph: onnx.GraphProto) -> list[onnx.GraphProto]:
    """``graph`` and every subgraph below it."""
    found = [graph]
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                found += _graphs(attr.g)
            for sub in attr.graphs:
                found += _graphs(sub)
    return found


def _value_names(graph: onnx.GraphProto) -> list[str]:
    names = [v.name for v in graph.input] + [i.name for i in graph.initializer]
    return names + [o for n in graph.node for o in n.output] + ["", "ghost"]


def _mutate_attribute(attr: onnx.AttributeProto, rng: random.Random) -> None:
    if attr.type == onnx.AttributeProto.INT:
        attr.i = rng.choice(HUGE_INTS + [2, 3, -2])
    elif attr.type == onnx.AttributeProto.INTS:
        attr.ints[:] = [rng.choice(HUGE_INTS + [1, 2]) for _ in range(rng.randrange(0, 7))]
    elif attr.type == onnx.AttributeProto.FLOAT:
        attr.f = rng.choice([float("nan"), float("inf"), -1.0, 0.0, 1e38])
    elif attr.type == onnx.AttributeProto.STRING:
        attr.s = rng.choice([b"", b"NOTSET", b"SAME_UPPER", b"\xff\xfe", b"x" * 1000, b"nearest"])
    elif attr.type == onnx.AttributeProto.TENSOR:
        attr.t.dims[:] = [rng.choice([0, 1, 3, 2**40]) for _ in range(rng.randrange(0, 3))]
    elif attr.type == onnx.AttributeProto.GRAPH:
        del attr.g.output[:]
    else:
        attr.type = rng.choice([onnx.AttributeProto.INT, onnx.AttributeProto.FLOATS, 0])


def _structured_mutation(model: onnx.ModelProto, rng: random.Random) -> None:
    graph = rng.choice(_graphs(model.graph))
    if not graph.node:
        graph = model.graph
    node = rng.choice(graph.node)
    kind = rng.randrange(15)
    if kind == 0 and graph.initializer:  # dims of a weight (its data no longer fits)
        tensor = rng.choice(graph.initializer)
        tensor.dims[:] = [rng.choice([0, 1, 2, 3, 7, -1, 2**31, 2**62]) for _ in tensor.dims]
    elif kind == 1:  # dims of a declared input or output
        value = rng.choice(list(graph.input) + list(graph.output))
        for dim in value.type.tensor_type.shape.dim:
            if rng.random() < 0.5:
                dim.dim_value = rng.choice([0, 1, 3, 2**40, 2**62])
            else:
                dim.dim_param = rng.choice(["N", "", "1", "batch"])
    elif kind == 2:  # a dtype
        target = rng.choice(["init", "input", "cast"])
        new = rng.choice([0, 2, 3, 5, 6, 7, 9, 10, 11, 13, 16, 17, 23, 99])
        if target == "init" and graph.initializer:
            rng.choice(graph.initializer).data_type = new
        elif target == "input" and graph.input:
            rng.choice(graph.input).type.tensor_type.elem_type = new
        else:
            node.attribute.append(helper.make_attribute("to", new))
    elif kind == 3 and node.attribute:  # an attribute value
        _mutate_attribute(rng.choice(node.attribute), rng)
    elif kind == 4:  # an attribute added or dropped
        if node.attribute and rng.random() < 0.5:
            del node.attribute[rng.randrange(len(node.attribute))]
        else:
            name = rng.choice(["axis", "axes", "perm", "pads", "group", "kernel_shape", "to"])
            node.attribute.append(
                helper.make_attribute(name, rng.choice([5, -9, [1, 2], [0, 0, 2**40], 0.5]))
            )
    elif kind == 5:  # the operator type
        node.op_type = rng.choice(OP_TYPES)
    elif kind == 6 and node.input:  # an input dropped
        del node.input[rng.randrange(len(node.input))]
    elif kind == 7:  # an input duplicated or added
        node.input.append(rng.choice(list(node.input) or _value_names(graph)))
    elif kind == 8:  # names swapped or redirected
        names = _value_names(graph)
        if node.input and rng.random() < 0.5:
            node.input[rng.randrange(len(node.input))] = rng.choice(names)
        else:
            other = rng.choice(graph.node)
            node.output[0], other.output[0] = other.output[0], node.output[0]
    elif kind == 9 and graph.initializer:  # huge or odd weight values
        tensor = rng.choice(graph.initializer)
        try:
            array = numpy_helper.to_array(tensor).copy()
        except Exception:  # an earlier mutation broke it already
            return
        if array.size:
            flat = array.reshape(-1)
            if array.dtype.kind == "f":
                flat[rng.randrange(flat.size)] = rng.choice([np.nan, np.inf, -np.inf, 1e38])
            elif array.dtype.kind in "iu":
                flat[rng.randrange(flat.size)] = rng.choice(
                    [np.iinfo(array.dtype).max, np.iinfo(array.dtype).min, 2**31, -1]
                )
            tensor.CopyFrom(numpy_helper.from_array(array, tensor.name))
    elif kind == 10:  # a node removed or duplicated
        index = rng.randrange(len(graph.node))
        if rng.random() < 0.5:
            del graph.node[index]
        else:
            graph.node.insert(index, graph.node[index])
    elif kind == 11:  # the opset or IR version
        if rng.random() < 0.5:
            model.opset_import[0].version = rng.choice([1, 6, 7, 10, 13, 18, 21, 27, 99])
        else:
            model.ir_version = rng.choice([0, 1, 3, 7, 10, 13, 99])
    elif kind == 12:  # a graph output or input removed, renamed or added
        choice = rng.randrange(3)
        if choice == 0 and len(graph.output):
            del graph.output[rng.randrange(len(graph.output))]
        elif choice == 1 and len(graph.input):
            graph.input[rng.randrange(len(graph.input))].name = rng.choice(_value_names(graph))
        else:
            graph.output.append(
                helper.make_tensor_value_info(rng.choice(_value_names(graph)), 1, None)
            )
    elif kind == 13:  # the node's domain
        node.domain = rng.choice(["com.microsoft", "ai.onnx.ml", "unknown.domain", "ai.onnx"])
    else:  # raw data of a weight cut or grown
        if graph.initializer:
            tensor = rng.choice(graph.initializer)
            raw = tensor.raw_data
            tensor.raw_data = raw[: rng.randrange(len(raw) + 1)] + b"\x01" * rng.randrange(3)


def mutant(index: int) -> tuple[str, bytes, list[str]]:
    """The ``index``-th mutant: (seed name, bytes, extra CLI arguments); deterministic."""
    rng = random.Random(f"mutant-{index}")
    name = list(SEEDS)[index % len(SEEDS)]
    data, extra = SEEDS[name]
    if rng.random() < 0.35:
        mutated = bytearray(data)
        for _ in range(rng.choice([1, 1, 2])):
            if mutated:
                mutated = _bytes_mutation(mutated, rng)
        return name, bytes(mutated), extra
    model = onnx.ModelProto()
    model.ParseFromString(data)
    for _ in range(rng.choice([1, 1, 2, 3])):
        _structured_mutation(model, rng)
    return name, model.SerializeToString(), extra


# --- running and judging -------------------------------------------------------------------


class Driver:
    """A driver process running jobs; yields (job id, result or failure kind)."""

    def __init__(self, jobs: list[dict], folder: Path):
        self.jobs_file = folder / f"jobs-{jobs[0]['id']}.json"
        self.jobs_file.write_text(json.dumps(jobs))
        self.log = open(folder / f"driver-{jobs[0]['id']}.log", "wb")  # noqa: SIM115
        env = {**os.environ, "GLOG_v": "3", "PYTHONWARNINGS": "ignore"}
        self.process = subprocess.Popen(
            [sys.executable, str(DRIVER), str(self.jobs_file)],
            stdout=subprocess.PIPE,
            stderr=self.log,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.process.stdout, selectors.EVENT_READ)
        self.buffer = b""

    def next_line(self, timeout: float) -> dict | None:
        """The next control line, or None on timeout or end of output."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not self.selector.select(left):
                return None
            chunk = os.read(self.process.stdout.fileno(), 65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def stop(self) -> tuple[int, bool]:
        """Ends the process (killed when still running); (exit code, whether it was killed)."""
        killed = self.process.poll() is None
        if killed:
            os.killpg(self.process.pid, signal.SIGKILL)
        code = self.process.wait()
        self.selector.close()
        self.process.stdout.close()
        self.log.close()
        return code, killed


def run_jobs(jobs: list[dict], folder: Path) -> dict[int, dict]:
    """Results by job id: the driver's end line, or {"failure": "hang ..." / "crash ..."}."""
    results: dict[int, dict] = {}
    pending = list(jobs)
    while pending:
        driver = Driver(pending, folder)
        current, first = None, True
        try:
            while True:
                line = driver.next_line(STARTUP + TIMEOUT if first else TIMEOUT)
                first = False
                if line is None:
                    break
                if "start" in line:
                    current = line["start"]
                else:
                    results[line["end"]] = line
                    current = None
        finally:
            code, killed = driver.stop()
        done = {job["id"] for job in pending if job["id"] in results}
        if current is not None:  # the driver hung or died during this job
            what = "hang (no result within the timeout)" if killed else "crash"
            log = (folder / f"driver-{pending[0]['id']}.log").read_text(errors="replace")
            results[current] = {"failure": f"{what}; driver exit code {code}; log: {log[-2000:]}"}
            done.add(current)
        elif len(done) < len(pending):
            log = (folder / f"driver-{pending[0]['id']}.log").read_text(errors="replace")
            missing = pending[len(done)]["id"]
            results[missing] = {"failure": f"driver exited ({code}) before the job: {log[-2000:]}"}
            done.add(missing)
        pending = [job for job in pending if job["id"] not in done]
    return results


def judge(job: dict, result: dict) -> str | None:
    """What is wrong with this outcome (None when it is clean)."""
    if "failure" in result:
        return result["failure"]
    case = Path(job["case"])
    out = case / "out"
    stdout = Path(job["stdout"]).read_text(errors="replace")
    stderr = Path(job["stderr"]).read_text(errors="replace")
    problems = []
    code = result["code"]
    if "Traceback" in stdout + stderr:
        problems.append("a traceback was printed")
    if hashlib.sha256((case / "m.onnx").read_bytes()).hexdigest() != job["sha256"]:
        problems.append("the input file changed")
    beside = sorted(p.name for p in case.iterdir() if p.name not in ("m.onnx", "out"))
    if beside:
        problems.append(f"files written beside the input: {beside}")
    if code == 0:
        files = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
        if files not in (RESULT_NAMES, [n.replace(".ckpt", ".safetensors") for n in RESULT_NAMES]):
            problems.append(f"exit 0 but the output folder holds {files}")
        if stderr.strip():
            problems.append("exit 0 but stderr is not empty")
        if result.get("import_error"):
            problems.append(f"the script does not import or build: {result['import_error']}")
    elif not isinstance(code, int):
        problems.append(str(code))
    else:
        lines = [line for line in stderr.splitlines() if line.strip()]
        match = ERROR_LINE.match(lines[0]) if len(lines) == 1 else None
        if code not in (1, 2):
            problems.append(f"exit code {code}")
        if match is None:
            problems.append("stderr is not exactly one coded error line")
        elif int(match["code"]) not in CODE_TO_KEY:
            problems.append(f"unknown error code {match['code']}")
        else:
            key = CODE_TO_KEY[int(match["code"])]
            if key == "INTERNAL_ERROR":
                problems.append("internal error")
            if ERROR_CODES[key].category != match["category"]:
                problems.append("the error class does not match the code")
        if out.exists() and any(out.iterdir()):
            problems.append(f"a failed run left {sorted(p.name for p in out.iterdir())}")
    if not problems:
        return None
    return f"{'; '.join(problems)}\n  stderr: {stderr[-1500:]!r}"


def _record(job: dict, problem: str) -> None:
    folder = Path(FINDINGS) / f"mutant_{job['id']:05d}_{job['seed']}"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(job["case"]) / "m.onnx", folder / "m.onnx")
    args = [
        "mindconverter",
        *[a if a != job["case"] + "/m.onnx" else "m.onnx" for a in job["argv"]],
    ]
    (folder / "command.txt").write_text(" ".join(args) + "\n")
    (folder / "observed.txt").write_text(
        f"{problem}\n\n--- stdout\n{Path(job['stdout']).read_text(errors='replace')}"
        f"\n--- stderr\n{Path(job['stderr']).read_text(errors='replace')}"
    )


@pytest.mark.parametrize("batch", range(BATCHES))
def test_mutants_convert_or_fail_cleanly(tmp_path, batch):
    jobs = []
    for index in range(batch, MUTANTS, BATCHES):
        seed, data, extra = mutant(index)
        case = tmp_path / f"case{index}"
        case.mkdir()
        (case / "m.onnx").write_bytes(data)
        argv = ["--model_file", str(case / "m.onnx"), "--output", str(case / "out"), *extra]
        jobs.append(
            {
                "id": index,
                "seed": seed,
                "case": str(case),
                "argv": argv,
                "stdout": str(tmp_path / f"stdout{index}.txt"),
                "stderr": str(tmp_path / f"stderr{index}.txt"),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        )
    results = run_jobs(jobs, tmp_path)
    failures = []
    for job in jobs:
        problem = judge(job, results[job["id"]])
        if problem:
            failures.append(f"mutant {job['id']} of {job['seed']}: {problem}")
            if FINDINGS:
                _record(job, problem)
    assert not failures, "\n".join(failures)
