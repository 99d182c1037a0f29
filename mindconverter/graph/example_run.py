"""Ranks that shape inference could not find, observed by running the graph once.

Some values' ranks only follow from data (a Reshape to a shape computed in the network, an
operator whose inference gives up). onnxruntime runs the model on example inputs (the
--shape sizes; random floats, integers all 1, 2 or 0) and reports the rank of each such
value; their sizes stay unknown (named), since another input may give others. Graphs with a
Loop are not run (its trip count and condition come from the data: the run could be endless).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import resource
import select
import signal
import time

import numpy as np
import onnx
from onnx import helper

from .weight_store import WeightStore, weights_as_inputs

# Values whose rank is observed in one run at most (a run outputs each of them).
MAX_OBSERVED = 2000


def example_inputs(model: onnx.ModelProto, sizes: dict[str, tuple[int, ...]], fill: int) -> dict:
    """An example value for every graph input that is not a weight (integers and booleans all
    ``fill``)."""
    weights = {init.name for init in model.graph.initializer}
    rng = np.random.default_rng(0)
    feeds = {}
    for inp in model.graph.input:
        if inp.name in weights or inp.name not in sizes:
            continue
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(inp.type.tensor_type.elem_type))
        shape = sizes[inp.name]
        if dtype.kind == "f":
            feeds[inp.name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[inp.name] = np.full(shape, fill, dtype)
    return feeds


def observed_ranks(
    model: onnx.ModelProto,
    store: WeightStore,
    sizes: dict[str, tuple[int, ...]],
    wanted: list[str],
) -> dict[str, tuple[int, int]]:
    """The element type and rank of each tensor value of ``wanted`` in one run (onnxruntime,
    else onnx's reference evaluator); empty when the model cannot run so."""
    if _loops(model.graph):  # a Loop may run as long as its data says: never started here
        return {}
    names = list(wanted)[:MAX_OBSERVED]
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    del copy.graph.value_info[:]  # onnxruntime infers its own (ours may hold observed ranks)
    existing = {out.name for out in copy.graph.output}
    for name in names:
        if name not in existing:
            copy.graph.output.append(helper.make_empty_tensor_value_info(name))
    copy, weights = weights_as_inputs(copy, store)
    try:
        feeds_for = [{**weights, **example_inputs(model, sizes, fill)} for fill in (1, 2, 0)]
    except (KeyError, ValueError, TypeError):  # an input of no known or numeric type
        return {}
    return _in_child(lambda: _observe(copy, names, feeds_for))


def fails_to_run(model: onnx.ModelProto, sizes: dict[str, tuple[int, ...]]) -> bool:
    """Whether onnxruntime accepts ``model`` but every example run of it at ``sizes`` raises
    (a control-flow branch the source itself cannot take at those sizes). False when it runs,
    or when that cannot be told (a Loop, an input of no numeric type, a refused session)."""
    weights = {init.name for init in model.graph.initializer}
    fed = {inp.name for inp in model.graph.input} - weights
    if _loops(model.graph) or not fed <= set(sizes):
        return False
    try:
        feeds_for = [example_inputs(model, sizes, fill) for fill in (1, 2, 0)]
    except (KeyError, ValueError, TypeError):
        return False
    # onnxruntime checks shapes when it builds a session: with the sizes fixed it may refuse
    # the model outright, which tells no failure of ours from one of the source. Every size is
    # left open (and inferred types dropped), so the session builds and the run itself fails.
    opened = onnx.ModelProto()
    opened.CopyFrom(model)
    del opened.graph.value_info[:]
    for index, inp in enumerate(opened.graph.input):
        if inp.name in fed:
            for axis, dim in enumerate(inp.type.tensor_type.shape.dim):
                dim.dim_param = f"open_{index}_{axis}"
    return _in_child(lambda: {"failed": _every_run_raises(opened, feeds_for)}).get("failed", False)


def _every_run_raises(model: onnx.ModelProto, feeds_for: list[dict]) -> bool:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 4
    try:
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
    except Exception:  # noqa: BLE001 - refused before running: nothing learned
        return False
    for feeds in feeds_for:
        try:
            session.run(None, feeds)
        except Exception:  # noqa: BLE001 - onnxruntime raises its own types
            continue
        return False
    return True


def _observe(model: onnx.ModelProto, names: list[str], feeds_for: list[dict]) -> dict:
    # integer inputs are often sizes (small ones are safe) or indices (0 is)
    values = _run_onnxruntime(model, names, feeds_for) or _run_reference(model, names, feeds_for)
    return {
        name: (helper.np_dtype_to_tensor_dtype(value.dtype), value.ndim)
        for name, value in zip(names, values or [])
        if isinstance(value, np.ndarray)
    }


def _in_child(work) -> dict:
    """``work()`` in a forked child with a time and memory limit (an example run of a hostile
    model must not run forever or exhaust memory); empty when it fails or is stopped."""
    if not hasattr(os, "fork"):
        return {}
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what it found, then leave without cleanup
        os.close(read_end)
        try:
            resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))
            data = pickle.dumps(work())
        except BaseException:  # noqa: BLE001 - the child only reports what it found
            data = pickle.dumps({})
        with os.fdopen(write_end, "wb") as stream:
            stream.write(data)
        os._exit(0)
    os.close(write_end)
    chunks, deadline = [], time.monotonic() + CHILD_SECONDS
    with os.fdopen(read_end, "rb") as stream:
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([stream], [], [], left)
            chunk = stream.read1(1 << 20) if ready else b""
            if not chunk:
                break
            chunks.append(chunk)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    try:
        return pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001 - stopped before it finished: nothing found
        return {}


# Limits of the example run's child process.
CHILD_SECONDS = 60
CHILD_MEMORY = 16 * 2**30


def _loops(graph: onnx.GraphProto) -> bool:
    for node in graph.node:
        if node.op_type == "Loop":
            return True
        for attr in node.attribute:
            nested = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
            if any(_loops(sub) for sub in nested):
                return True
    return False


def _run_onnxruntime(model: onnx.ModelProto, names: list[str], feeds_for: list[dict]):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 4
    try:
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
    except Exception:  # noqa: BLE001 - its static checks refuse some folded graphs
        return None
    for feeds in feeds_for:
        try:
            return session.run(names, feeds)
        except Exception:  # noqa: BLE001 - onnxruntime raises its own types
            continue
    return None


def _run_reference(model: onnx.ModelProto, names: list[str], feeds_for: list[dict]):
    """onnx's reference evaluator, which checks nothing before running (slow: small graphs)."""
    from onnx.reference import ReferenceEvaluator

    if sum(init.ByteSize() for init in model.graph.initializer) > REFERENCE_LIMIT:
        return None
    for feeds in feeds_for:
        try:
            return ReferenceEvaluator(model).run(names, feeds)
        except Exception:  # noqa: BLE001 - any failure leaves the ranks unknown
            continue
    return None


# The reference evaluator is only used for graphs whose weights take up to this many bytes.
REFERENCE_LIMIT = 64 * 2**20
