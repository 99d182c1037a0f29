"""Numeric verification: the converted MindSpore model against onnxruntime on the same inputs.

onnxruntime runs the reference model from memory (no temporary copy of the model is written);
MindSpore runs the generated script with the generated checkpoint.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from ..errors import MindConverterError, make_error
from ..graph import Graph
from ..graph.weight_store import WeightStore, weights_as_inputs
from .network import run_mindspore

DEFAULT_TOLERANCE = 1e-3


@dataclass
class OutputComparison:
    """How one output of the converted model compares with the reference."""

    name: str
    max_abs_error: float
    relative_error: float
    ok: bool
    random: bool = False  # drawn by a random generator: only the shape is compared


def index_bounds(graph: Graph) -> dict[str, int]:
    """For integer inputs used as Gather indices into a constant table, the table size."""
    bounds: dict[str, int] = {}
    inputs = set(graph.inputs)
    for node in graph.nodes:
        if node.op_type == "Gather" and len(node.inputs) > 1 and node.inputs[1] in inputs:
            name = node.inputs[1]
            table = graph.constants.get(node.inputs[0])
            shape = table.shape if table is not None else graph.shapes.get(node.inputs[0])
            if shape:
                size = int(shape[int(node.attrs.get("axis", 0))])
                bounds[name] = min(bounds.get(name, size), size)
    return bounds


def compared_values(graph: Graph) -> dict[str, int]:
    """For integer scalar inputs the network tests for equality with a constant (Silero VAD's
    ``sr == 16000`` choosing a branch), the first such constant: random integers would only
    ever take the other branch. Tensors (token ids tested against a padding id, masks against
    0) keep their random values."""
    values: dict[str, int] = {}
    inputs = {name for name in graph.inputs if graph.shapes.get(name) == ()}
    for node in graph.nodes:
        if node.op_type != "Equal" or len(node.inputs) != 2:
            continue
        for name, other in (node.inputs, node.inputs[::-1]):
            constant = graph.constants.get(other)
            dtype = graph.dtypes.get(name)
            if (
                name in inputs
                and constant is not None
                and constant.size == 1
                and dtype is not None
                and dtype.kind in "iu"
            ):
                values.setdefault(name, int(np.asarray(constant).reshape(-1)[0]))
    return values


def training_mode_operators(graph: Graph) -> list[str]:
    """Operators a training-mode export runs in training mode (onnxruntime then uses batch
    statistics and random dropout, which no converted network in eval mode reproduces)."""
    found = []
    for node in graph.nodes:
        if node.op_type == "BatchNormalization" and int(node.attrs.get("training_mode", 0)):
            found.append(node.op_type)
        elif node.op_type == "Dropout" and len(node.inputs) > 2 and node.inputs[2]:
            switch = graph.constants.get(node.inputs[2])
            if switch is not None and bool(np.asarray(switch).reshape(-1)[0]):
                found.append(node.op_type)
    return sorted(set(found))


RANDOM_OPERATORS = {
    "RandomNormal",
    "RandomNormalLike",
    "RandomUniform",
    "RandomUniformLike",
    "Bernoulli",
    "Multinomial",
}


def random_outputs(graph: Graph) -> set[str]:
    """Graph outputs that depend on a random generator (no two runtimes draw the same values)."""
    tainted: set[str] = set()
    for node in graph.nodes:  # topological order
        if node.op_type in RANDOM_OPERATORS or any(name in tainted for name in node.inputs):
            tainted.update(name for name in node.outputs if name)
    return tainted & set(graph.outputs)


def verification_shapes(
    graph: Graph, example: dict[str, tuple[int, ...]]
) -> list[dict[str, tuple[int, ...]]]:
    """The input shapes to verify at: the conversion's, then, when the network keeps named
    dimensions, candidates for a second set (equal names stay equal): each named dimension one
    larger, then each doubled, which keeps sums between dimensions (``total = past + sequence``
    of a KV cache) true. :func:`verify_conversion` verifies the first candidate the source runs
    at."""
    grown: dict[str, int] = {}
    doubled: dict[str, int] = {}
    for name in graph.inputs:
        for dim, size in zip(graph.symbolic_shapes.get(name, ()), example.get(name, ())):
            if isinstance(dim, str):
                grown.setdefault(dim, size + 1)
                doubled.setdefault(dim, max(2 * size, 1))
    if not grown:
        return [dict(example)]
    candidates = []
    for sizes in (grown, doubled):
        other = {
            name: tuple(
                sizes[dim] if isinstance(dim, str) else size
                for dim, size in zip(graph.symbolic_shapes.get(name, ()), example[name])
            )
            for name in graph.inputs
        }
        if other != example and other not in candidates:
            candidates.append(other)
    return [dict(example), *candidates]


# Random inputs are drawn in float64 first: 2^28 elements are 2 GiB, the most verification takes.
MAX_VERIFY_ELEMENTS = 1 << 28


def random_inputs(
    graph: Graph, seed: int = 0, shapes: dict[str, tuple[int, ...]] | None = None
) -> list[np.ndarray]:
    """Random inputs matching each graph input's shape (or ``shapes``) and dtype, in order."""
    rng = np.random.default_rng(seed)
    bounds = index_bounds(graph)
    compared = compared_values(graph)
    chosen = [shapes[n] if shapes and n in shapes else graph.shapes[n] for n in graph.inputs]
    total = sum(math.prod(shape) for shape in chosen)
    if total > MAX_VERIFY_ELEMENTS:  # checked before anything is allocated
        raise make_error(
            "VERIFY_FAILED",
            f"The inputs hold {total} elements; verification draws at most "
            f"{MAX_VERIFY_ELEMENTS}: verify at smaller sizes (--shape).",
        )
    arrays = []
    for name, shape in zip(graph.inputs, chosen):
        dtype = graph.dtypes.get(name, np.dtype(np.float32))
        if dtype.kind == "f":
            arrays.append(rng.standard_normal(shape).astype(dtype))
        elif name in compared:
            arrays.append(np.full(shape, compared[name], dtype))
        elif dtype.kind in "iu":
            arrays.append(rng.integers(0, bounds.get(name, 2), size=shape).astype(dtype))
        elif dtype.kind == "b":
            arrays.append(rng.integers(0, 2, size=shape).astype(bool))
        else:
            raise make_error(
                "VERIFY_FAILED", f"Cannot make random values for input '{name}' of dtype {dtype}."
            )
    return arrays


def run_onnxruntime(
    model: onnx.ModelProto,
    feeds: dict[str, np.ndarray],
    outputs: list[str],
    store: WeightStore | None = None,
) -> list[np.ndarray]:
    """Run the reference model in onnxruntime from memory (weights held by ``store`` are fed
    from their buffers)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 4  # its errors come back as exceptions; nothing on stderr
    # the reference follows the ONNX definitions: the extended level fuses e.g. a 4-bit
    # DequantizeLinear + MatMul into a kernel that rounds differently (errors near 1e-2)
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    try:
        weights = {}
        if store is not None:
            model, weights = weights_as_inputs(model, store)
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        return session.run(outputs, {**weights, **feeds})
    except Exception as exc:  # onnxruntime raises its own exception types
        raise make_error(
            "VERIFY_FAILED", f"onnxruntime could not run the source model: {exc}"
        ) from None


def compare_outputs(
    names: list[str],
    actual: list[np.ndarray],
    expected: list[np.ndarray],
    tolerance: float = DEFAULT_TOLERANCE,
) -> list[OutputComparison]:
    """Max absolute error and error relative to the reference's scale, per output."""
    rows = []
    for name, got, want in zip(names, actual, expected):
        got, want = np.asarray(got), np.asarray(want)
        if got.shape != want.shape:
            rows.append(OutputComparison(name, float("inf"), float("inf"), False))
            continue
        if want.size == 0:
            rows.append(OutputComparison(name, 0.0, 0.0, True))
            continue
        if want.dtype.kind == "b" or got.dtype.kind == "b":
            mismatch = float(np.mean(got.astype(bool) != want.astype(bool)))
            rows.append(OutputComparison(name, mismatch, mismatch, mismatch == 0.0))
            continue
        got64, want64 = got.astype(np.float64), want.astype(np.float64)
        both_nan = np.isnan(got64) & np.isnan(want64)
        same_inf = np.isinf(want64) & (got64 == want64)
        diff = np.where(both_nan | same_inf, 0.0, np.abs(got64 - want64))
        finite = want64[np.isfinite(want64)]
        scale = max(float(np.max(np.abs(finite))) if finite.size else 0.0, 1e-6)
        max_abs = float(np.nanmax(diff)) if diff.size else 0.0
        if np.isnan(diff).any():
            max_abs = float("inf")
        relative = max_abs / scale
        rows.append(
            OutputComparison(name, max_abs, relative, relative <= tolerance or max_abs <= 1e-6)
        )
    return rows


def in_reference_dtypes(
    reference: onnx.ModelProto, feeds: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """The inputs in the source model's dtypes (they differ when a float16 model was widened)."""
    declared = {inp.name: inp.type.tensor_type.elem_type for inp in reference.graph.input}
    converted = {}
    for name, array in feeds.items():
        elem_type = declared.get(name)
        dtype = onnx.helper.tensor_dtype_to_np_dtype(elem_type) if elem_type else array.dtype
        converted[name] = array if array.dtype == dtype else array.astype(dtype)
    return converted


def verify_conversion(
    reference: onnx.ModelProto,
    graph: Graph,
    script: Path,
    checkpoint: Path,
    tolerance: float = DEFAULT_TOLERANCE,
    samples: int = 1,
    graph_mode: bool = False,
    shape_sets: list[dict[str, tuple[int, ...]]] | None = None,
    advance: Callable[[int], None] | None = None,
) -> dict:
    """Compare MindSpore with onnxruntime on ``samples`` random input sets at each of
    ``shape_sets`` (default: the graph's input shapes); returns a summary dict."""
    if importlib.util.find_spec("mindspore") is None:
        raise make_error("MINDSPORE_MISSING")
    worst: dict[str, OutputComparison] = {}
    drawn = random_outputs(graph)
    shape_sets = shape_sets or [{}]
    verified: list[dict[str, tuple[int, ...]]] = []
    skipped: list[dict[str, tuple[int, ...]]] = []
    for index, shapes in enumerate(shape_sets):
        if index > 1 and len(verified) > 1:
            break  # one second shape is enough
        try:
            rows = [
                row
                for seed in range(samples)
                for row in _compare_once(
                    graph, reference, (script, checkpoint), seed, shapes, tolerance, graph_mode
                )
            ]
        except _SourceCannotRun as exc:
            # a candidate second shape the source itself cannot run at (dimensions tied in
            # ways the model does not declare) is skipped; the conversion's own shape is not
            if index == 0:
                raise exc.error from None
            skipped.append(shapes)
            continue
        verified.append(shapes)
        for row in rows:
            if row.name in drawn:
                row = OutputComparison(row.name, 0.0, 0.0, row.max_abs_error != float("inf"), True)
            if row.name not in worst or row.relative_error > worst[row.name].relative_error:
                worst[row.name] = row
        if advance is not None:
            advance(1)
    rows = [worst[name] for name in graph.outputs if name in worst]
    return {
        "samples": samples,
        "shapes": [shapes for shapes in verified if shapes],
        "skipped_shapes": [shapes for shapes in skipped if shapes],
        "tolerance": tolerance,
        "outputs": rows,
        "ok": all(row.ok for row in rows),
        "max_relative_error": max((row.relative_error for row in rows), default=0.0),
    }


class _SourceCannotRun(Exception):
    """onnxruntime could not run the source model at the shapes tried (``error`` says why)."""

    def __init__(self, error: Exception):
        super().__init__(str(error))
        self.error = error


def _compare_once(
    graph: Graph,
    reference: onnx.ModelProto,
    network: tuple[Path, Path],
    seed: int,
    shapes: dict[str, tuple[int, ...]],
    tolerance: float,
    graph_mode: bool,
) -> list[OutputComparison]:
    """One random input set at ``shapes``, run by onnxruntime and MindSpore, compared."""
    inputs = random_inputs(graph, seed, shapes)
    feeds = in_reference_dtypes(reference, dict(zip(graph.inputs, inputs)))
    try:
        expected = run_onnxruntime(reference, feeds, graph.outputs, graph.store)
    except MindConverterError as exc:
        raise _SourceCannotRun(exc) from None
    script, checkpoint = network
    try:
        actual = run_mindspore(script, checkpoint, inputs, graph_mode=graph_mode)
    except Exception as exc:
        if hasattr(exc, "error_code"):
            raise
        message = " ".join(str(exc).split())[:300]
        raise make_error(
            "VERIFY_FAILED", f"MindSpore failed to run the converted model: {message}"
        ) from None
    return compare_outputs(graph.outputs, actual, expected, tolerance)


def describe(summary: dict | None) -> str:
    """One line for the console."""
    if not summary:
        return ""
    parts = [
        f"{row.name}: drawn at random, shape compared"
        if row.random
        else f"{row.name}: rel {row.relative_error:.2e} (abs {row.max_abs_error:.2e})"
        for row in summary["outputs"]
    ]
    verdict = "MATCH" if summary["ok"] else "MISMATCH"
    shapes = summary.get("shapes") or []
    at = f" at {len(shapes)} input shapes" if len(shapes) > 1 else ""
    text = f"Verification {verdict} vs onnxruntime{at}: " + "; ".join(parts)
    if summary.get("divergence"):
        text += f". First diverging: {summary['divergence']}"
    return text
