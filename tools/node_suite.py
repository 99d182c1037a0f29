"""The ONNX backend node test suite as a conversion benchmark.

Each node test is a small ONNX model (usually one operator) with reference inputs and outputs.
:func:`run_node_test` converts one test with the real pipeline (:func:`mindconverter.convert`),
runs the generated script with the generated checkpoint in MindSpore and compares the outputs with
the suite's references. ``tools/run_node_suite.py`` runs all in-scope tests and regenerates
``docs/operators.md``; ``tests/tools/test_node_suite.py`` runs them under pytest (marker ``slow``).

Test data. The onnx wheel ships no node test data and ``backend-test-tools generate-data`` writes
only the model tests, so :func:`ensure_test_data` writes the node tests from
``onnx.backend.test.case.node.collect_testcases()`` in the same layout the onnx repository uses
(``<dir>/<test>/model.onnx`` and ``test_data_set_0/{input,output}_<i>.pb``) plus a
``manifest.json`` with per-test metadata, once per onnx version, into a cache folder.

Scope. Excluded are tests of the Gradient operator, sequence/optional values, strings, random
generators (and Dropout in training mode, which draws a random mask), see
:func:`exclusion_reason`; docs/operators.md argues each group. Expanded (``*_expanded``) tests are plain graphs and are in scope.

Frozen inputs. The suite feeds as graph inputs values that an exporter stores as constants (a
Reshape's shape, a Slice's starts, a Clip's min...). :func:`freeze_parameter_inputs` turns a graph
input into an initializer when (1) every node consuming it reads it at a *configuration* input —
a formal input whose ONNX schema name is in :data:`PARAMETER_INPUTS` (shape, axes, pads, starts,
ends, steps, repeats, K, split, sizes, scales, roi, min, max, CastLike's target_type (only its
dtype matters), ...); (2) it has rank <= 1 and at most
64 elements; and (3) freezing leaves every consuming node at least one runtime input, so the
operator itself still runs in MindSpore instead of being folded away (Range, ConstantOfShape and
the window generators keep their inputs). A graph input that no node reads (the ``_expanded`` CastLike tests keep ``like`` only for its
dtype) is frozen as well. Inputs holding a layer's trained parameters (:data:`WEIGHT_INPUTS`: Conv W/B, normalization
scale/bias/mean/var, RNN W/R/B/P, PRelu slope, Gemm B/C, and the scales, zero points and
integer weights of the quantization operators) are frozen too, whatever their size, as every
exporter and quantizer stores them as initializers. Other data inputs (operands, indices) are never frozen.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
import traceback
import warnings
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from mindconverter.graph.container_types import container_dtype

DATA_FORMAT = 4  # bump when the layout or manifest of the written test data changes
MAX_FROZEN_ELEMENTS = 64
DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-5

# -- scope -----------------------------------------------------------------------------------

TRAINING_OPS = {"Gradient"}  # gradients of a whole subgraph: no one-node MindSpore equivalent
SEQUENCE_OPS = {
    "SequenceAt",
    "SequenceConstruct",
    "SequenceEmpty",
    "SequenceErase",
    "SequenceInsert",
    "SequenceLength",
    "SequenceMap",
    "SplitToSequence",
    "ConcatFromSequence",
    "Optional",
    "OptionalGetElement",
    "OptionalHasElement",
}
STRING_OPS = {"StringNormalizer", "RegexFullMatch", "StringConcat", "StringSplit", "Tokenizer"}
RANDOM_OPS = {
    "RandomNormal",
    "RandomNormalLike",
    "RandomUniform",
    "RandomUniformLike",
    "Bernoulli",
    "Multinomial",
}
EXCLUDED_DOMAINS: dict[str, str] = {}

# Formal input names (from the ONNX operator schemas) that carry configuration an exporter
# writes as constants rather than data computed at run time.
PARAMETER_INPUTS = {
    "shape",
    "axes",
    "pads",
    "constant_value",
    "starts",
    "ends",
    "steps",
    "repeats",
    "K",
    "k",
    "split",
    "sizes",
    "scales",
    "roi",
    "depth",
    "values",
    "axis",
    "min",
    "max",
    "ratio",
    "training_mode",
    "output_shape",
    "image_shape",
    "block_shape",
    "max_output_boxes_per_class",
    "iou_threshold",
    "score_threshold",
    "frame_step",
    "frame_length",
    "dft_length",
    "size",
    "num_mel_bins",
    "sample_rate",
    "lower_edge_hertz",
    "upper_edge_hertz",
    "start",
    "limit",
    "delta",
    "input",
    "target_type",
}
# Formal inputs holding a layer's trained parameters: initializers in every exported model.
WEIGHT_INPUTS = {
    "Conv": {"W", "B"},
    "ConvTranspose": {"W", "B"},
    "DeformConv": {"W", "B"},
    "BatchNormalization": {"scale", "B", "input_mean", "input_var", "mean", "var"},
    "InstanceNormalization": {"scale", "B"},
    "LayerNormalization": {"Scale", "B"},
    "GroupNormalization": {"scale", "bias"},
    "RMSNormalization": {"scale"},
    "GRU": {"W", "R", "B"},
    "LSTM": {"W", "R", "B", "P"},
    "RNN": {"W", "R", "B"},
    "PRelu": {"slope"},
    "Gemm": {"B", "C"},
    # quantizers store scales, zero points and quantized weights as initializers
    "QuantizeLinear": {"y_scale", "y_zero_point"},
    "DequantizeLinear": {"x_scale", "x_zero_point"},
    "QLinearConv": {"x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale"}
    | {"y_zero_point", "B"},
    "QLinearMatMul": {"a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale"}
    | {"y_zero_point"},
    "MatMulInteger": {"B", "b_zero_point"},
    "ConvInteger": {"w", "w_zero_point"},
}
# "input" is only a configuration input for these operators (ConstantOfShape's shape).
_INPUT_IS_PARAMETER = {"ConstantOfShape"}
_EXPANDED = re.compile(r"_expanded(_ver\d+)?$")


# Why each group of excluded tests is out of scope (keys: the start of exclusion_reason's text).
OUT_OF_SCOPE_WHY = {
    "string": (
        "Strings. MindSpore tensors hold numbers and booleans only (there is no string dtype), so "
        "text cannot flow through a network; tokenizing and normalizing text belongs in the data "
        "pipeline (`mindspore.dataset.text`)."
    ),
    "random": (
        "Random values. The outputs are drawn by a random generator and MindSpore's generator "
        "cannot reproduce the reference's numbers, not even from the same seed. The operators "
        "convert (`mindconverter/mappers/random_values.py`); `tests/mappers/test_random_values.py` "
        "checks shapes, dtypes and distributions, and `--verify` compares only the shape of "
        "outputs drawn at random."
    ),
    "sequence": (
        "Sequence and optional values at the graph's boundary. These tests take or return an ONNX "
        "sequence or optional value. A converted network's inputs and outputs are tensors "
        "(`dynamic_inputs()`, the checkpoint and MindIR export describe tensors); inside a graph "
        "sequences convert as Python tuples (SplitToSequence, SequenceAt, SequenceConstruct, "
        "SequenceLength, ConcatFromSequence). MindSpore could take a tuple argument: this group is "
        "a limitation of ours, not of MindSpore."
    ),
    "optional": "(see sequence values)",
    "training operator": (
        "Gradient: the derivative of a whole subgraph as one node; MindSpore differentiates "
        "functions (`mindspore.grad`), not single nodes of a graph."
    ),
}


def out_of_scope_argument(reason: str) -> str:
    """The argument for an exclusion reason (see :data:`OUT_OF_SCOPE_WHY`)."""
    for key, why in OUT_OF_SCOPE_WHY.items():
        if reason.startswith(key):
            return OUT_OF_SCOPE_WHY["sequence"] if key == "optional" else why
    return reason


def _op_category(domain: str, op_type: str) -> str | None:
    if domain in EXCLUDED_DOMAINS:
        return EXCLUDED_DOMAINS[domain]
    if op_type in TRAINING_OPS:
        return "training operator"
    if op_type in SEQUENCE_OPS:
        return "sequence/optional operator"
    if op_type in STRING_OPS:
        return "string operator"
    if op_type in RANDOM_OPS:
        return "random operator"
    return None


def _all_nodes(graph: onnx.GraphProto) -> Iterable[onnx.NodeProto]:
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _all_nodes(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    yield from _all_nodes(sub)


def _value_kind(type_proto: onnx.TypeProto) -> str:
    if type_proto.HasField("tensor_type"):
        return "string" if type_proto.tensor_type.elem_type == onnx.TensorProto.STRING else "tensor"
    if type_proto.HasField("sequence_type"):
        return "sequence"
    if type_proto.HasField("optional_type"):
        return "optional"
    if type_proto.HasField("map_type"):
        return "map"
    return "other"


def op_types(model: onnx.ModelProto) -> list[str]:
    """Every operator the model uses (also inside subgraphs), as ``op`` or ``domain:op``."""
    found = set()
    for node in _all_nodes(model.graph):
        domain = "" if node.domain in ("", "ai.onnx") else node.domain
        found.add(f"{domain}:{node.op_type}" if domain else node.op_type)
    return sorted(found)


def exclusion_reason(name: str, model: onnx.ModelProto) -> str | None:
    """Why a node test is out of scope, or None when it is in scope."""
    if "training" in name and "zero_ratio" not in name and "Dropout" in op_types(model):
        return "random operator (Dropout in training mode draws a random mask)"
    for node in _all_nodes(model.graph):
        category = _op_category("" if node.domain == "ai.onnx" else node.domain, node.op_type)
        if category:
            return f"{category} ({node.op_type})"
    for value in list(model.graph.input) + list(model.graph.output):
        kind = _value_kind(value.type)
        if kind == "string":
            return "string values"
        if kind != "tensor":
            return f"{kind} values"
    for node in _all_nodes(model.graph):
        for attr in node.attribute:
            if (
                attr.type == onnx.AttributeProto.TENSOR
                and attr.t.data_type == onnx.TensorProto.STRING
            ):
                return "string values"
    return None


def base_test_name(name: str) -> str:
    """``test_softmax_axis_0_expanded`` -> ``test_softmax_axis_0``."""
    return _EXPANDED.sub("", name)


# -- test data -------------------------------------------------------------------------------


def default_data_dir() -> Path:
    """Where the node test data is cached (``MINDCONVERTER_NODE_TESTS`` overrides)."""
    if os.environ.get("MINDCONVERTER_NODE_TESTS"):
        return Path(os.environ["MINDCONVERTER_NODE_TESTS"])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "mindconverter" / f"onnx-{onnx.__version__}-node-tests-v{DATA_FORMAT}"


@dataclass
class NodeTest:
    """Metadata of one node test (as stored in the manifest)."""

    name: str
    op_types: list[str]
    primary_op: str | None
    excluded: str | None
    rtol: float
    atol: float
    opset: int
    expanded: bool = False

    def path(self, data_dir: Path) -> Path:
        return Path(data_dir) / self.name


def _write_value(path: Path, value, name: str) -> None:
    tensor = (
        value
        if isinstance(value, onnx.TensorProto)
        else numpy_helper.from_array(np.asarray(value), name)
    )
    path.write_bytes(tensor.SerializeToString())


def _primary_ops(cases) -> dict[str, str | None]:
    primary = {}
    for case in cases:
        ops = {node.op_type for node in case.model.graph.node if node.op_type != "Constant"}
        if not ops:
            ops = {node.op_type for node in case.model.graph.node}
        primary[case.name] = next(iter(ops)) if len(ops) == 1 else None
    for case in cases:
        if _EXPANDED.search(case.name):
            primary[case.name] = primary.get(base_test_name(case.name))
    return primary


def write_test_data(target: Path) -> Path:
    """Write every node test of the installed onnx into ``target`` (replaced atomically)."""
    import onnx.backend.test.case.node as node_cases

    target = Path(target)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            cases = node_cases.collect_testcases()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    manifest = []
    primary = _primary_ops(cases)
    for case in cases:
        excluded = exclusion_reason(case.name, case.model)
        graph = case.model.graph
        opset = max(
            (o.version for o in case.model.opset_import if o.domain in ("", "ai.onnx")), default=0
        )
        manifest.append(
            NodeTest(
                name=case.name,
                op_types=op_types(case.model),
                primary_op=primary[case.name],
                excluded=excluded,
                rtol=float(case.rtol),
                atol=float(case.atol),
                opset=int(opset),
                expanded=bool(_EXPANDED.search(case.name)),
            )
        )
        folder = staging / case.name
        folder.mkdir()
        (folder / "model.onnx").write_bytes(case.model.SerializeToString())
        if excluded:
            continue  # sequences, maps and strings need writers we do not need
        for index, (inputs, outputs) in enumerate(case.data_sets):
            data = folder / f"test_data_set_{index}"
            data.mkdir()
            for j, value in enumerate(inputs):
                _write_value(data / f"input_{j}.pb", value, graph.input[j].name)
            for j, value in enumerate(outputs):
                _write_value(data / f"output_{j}.pb", value, graph.output[j].name)
    (staging / "manifest.json").write_text(
        json.dumps(
            {
                "onnx": onnx.__version__,
                "format": DATA_FORMAT,
                "tests": [asdict(t) for t in manifest],
            },
            indent=1,
        )
    )
    try:
        staging.rename(target)
    except OSError:  # another process finished first
        shutil.rmtree(staging, ignore_errors=True)
    return target


def ensure_test_data(data_dir: Path | None = None) -> Path:
    """The node test data folder, written first if missing."""
    data_dir = Path(data_dir) if data_dir else default_data_dir()
    if not (data_dir / "manifest.json").is_file():
        write_test_data(data_dir)
    return data_dir


def load_manifest(data_dir: Path | None = None) -> list[NodeTest]:
    """Every node test (in and out of scope), sorted by name."""
    data_dir = ensure_test_data(data_dir)
    raw = json.loads((data_dir / "manifest.json").read_text())
    return sorted((NodeTest(**entry) for entry in raw["tests"]), key=lambda t: t.name)


def in_scope_tests(data_dir: Path | None = None) -> list[NodeTest]:
    """The node tests this project converts (see the module docstring for the rules)."""
    return [test for test in load_manifest(data_dir) if not test.excluded]


# -- documented failures ---------------------------------------------------------------------

KNOWN_FAILURES_FILE = (
    Path(__file__).resolve().parent.parent / "docs" / "node_suite_known_failures.json"
)


@dataclass
class KnownFailure:
    """A test that fails for a documented reason; ``ops`` are the operators it counts against
    (empty: every operator of the test); ``status``, when given, is the outcome it fails with (a
    different kind of failure is then a change to look at, not the documented one)."""

    reason: str
    ops: list[str] = field(default_factory=list)
    status: str = ""

    def explains(self, outcome: Outcome) -> bool:
        return not outcome.passed and (not self.status or self.status == outcome.status)


def load_known_failures(path: Path | None = None) -> dict[str, KnownFailure]:
    """``docs/node_suite_known_failures.json``: test name -> reason (a string, or an object with
    ``reason`` and optionally ``ops`` and ``status``). Keys starting with ``_`` are comments."""
    path = Path(path) if path else KNOWN_FAILURES_FILE
    if not path.is_file():
        return {}
    raw = json.loads(path.read_text())
    known = {}
    for name, entry in raw.items():
        if name.startswith("_"):
            continue
        if isinstance(entry, str):
            known[name] = KnownFailure(entry)
        else:
            known[name] = KnownFailure(
                entry["reason"], list(entry.get("ops", [])), entry.get("status", "")
            )
    return known


# -- one test --------------------------------------------------------------------------------


@dataclass
class Outcome:
    """The result of one node test.

    ``status`` is one of ``pass``, ``unconverted`` (an operator had no mapper or its mapper
    declined), ``conversion_error``, ``runtime_error`` (MindSpore failed to build or run the
    script), ``mismatch`` (wrong values, shape or dtype), ``timeout``, ``crash``.
    """

    name: str
    status: str
    reason: str = ""
    ops: list[str] = field(default_factory=list)  # operators blamed for a failure, when known
    frozen: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == "pass"


def read_data_set(
    folder: Path, model: onnx.ModelProto
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The inputs and reference outputs of ``test_data_set_0``."""
    data = folder / "test_data_set_0"

    def read(path: Path) -> np.ndarray:
        tensor = onnx.TensorProto()
        tensor.ParseFromString(path.read_bytes())
        return numpy_helper.to_array(tensor)

    inputs = [read(data / f"input_{i}.pb") for i in range(len(model.graph.input))]
    outputs = [read(data / f"output_{i}.pb") for i in range(len(model.graph.output))]
    return inputs, outputs


def _schema_input_name(node: onnx.NodeProto, index: int, opset: int) -> str | None:
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
    except Exception:
        return None
    formal = schema.inputs
    if not formal:
        return None
    if index >= len(formal):
        last = formal[-1]
        return (
            last.name if last.option == onnx.defs.OpSchema.FormalParameterOption.Variadic else None
        )
    return formal[index].name


def parameter_inputs(
    model: onnx.ModelProto, inputs: list[np.ndarray], weights: bool = True
) -> list[str]:
    """The graph inputs to freeze into initializers (rules in the module docstring); with
    ``weights=False`` layer weights stay graph inputs (run-time weights, as the suite has them)."""
    graph = model.graph
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=1)
    referenced_below = set()
    for node in graph.node:
        for attr in node.attribute:
            if attr.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                for sub in (
                    [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
                ):
                    for inner in _all_nodes(sub):
                        referenced_below.update(inner.input)
    candidates = set()
    for value, array in zip(graph.input, inputs):
        name = value.name
        uses = [(node, i) for node in graph.node for i, n in enumerate(node.input) if n == name]
        if name in referenced_below:
            continue
        if not uses and name not in {value.name for value in graph.output}:
            candidates.add(name)  # read by no node: only its declared dtype mattered
            continue
        if not uses:
            continue
        formals = [(node.op_type, _schema_input_name(node, index, opset)) for node, index in uses]
        small = np.ndim(array) <= 1 and np.size(array) <= MAX_FROZEN_ELEMENTS
        if (
            weights
            and all(formal in WEIGHT_INPUTS.get(op, ()) for op, formal in formals)
            or small
            and all(
                formal in PARAMETER_INPUTS and (formal != "input" or op in _INPUT_IS_PARAMETER)
                for op, formal in formals
            )
        ):
            candidates.add(name)
    # keep at least one runtime input on every consuming node
    frozen = set(candidates)
    graph_inputs = {value.name for value in graph.input}
    produced = {name for node in graph.node for name in node.output}
    for node in graph.node:
        feeds = [n for n in node.input if n in graph_inputs or n in produced]
        if feeds and all(n in frozen for n in feeds):
            frozen.difference_update(feeds)
    return [value.name for value in graph.input if value.name in frozen]


def freeze_parameter_inputs(model: onnx.ModelProto, inputs: list[np.ndarray], weights: bool = True):
    """A copy of ``model`` with :func:`parameter_inputs` made initializers.

    Returns ``(model, remaining_inputs, frozen_names)``.
    """
    frozen = parameter_inputs(model, inputs, weights)
    if not frozen:
        return model, list(inputs), []
    result = onnx.ModelProto()
    result.CopyFrom(model)
    values = {value.name: array for value, array in zip(model.graph.input, inputs)}
    kept = [value for value in model.graph.input if value.name not in frozen]
    del result.graph.input[:]
    result.graph.input.extend(kept)
    for name in frozen:
        result.graph.initializer.append(numpy_helper.from_array(np.asarray(values[name]), name))
    return result, [values[value.name] for value in kept], frozen


def compare(
    actual: list[np.ndarray], expected: list[np.ndarray], rtol: float, atol: float
) -> str | None:
    """None when every output matches (same shape and dtype; values within tolerance, exact for
    integers and booleans, NaN where the reference has NaN); else what differs. An output of a
    type MindSpore cannot hold (float8, int4...) comes in its container type, which holds the
    reference's values exactly."""
    if len(actual) != len(expected):
        return f"{len(actual)} outputs, expected {len(expected)}"
    for index, (got, want) in enumerate(zip(actual, expected)):
        got, want = np.asarray(got), np.asarray(want)
        if got.shape != want.shape:
            return f"output {index}: shape {got.shape}, expected {want.shape}"
        if container_dtype(want.dtype) == got.dtype:  # float8, int4...: exact in the container
            want = want.astype(got.dtype)
        if (
            got.dtype != want.dtype and got.dtype.name != want.dtype.name
        ):  # MindSpore has its own bfloat16
            return f"output {index}: dtype {got.dtype}, expected {want.dtype}"
        if want.dtype.kind in "biuU" or want.dtype == object:
            bad = got != want
            if np.any(bad):
                return f"output {index}: {int(np.sum(bad))} of {want.size} values differ"
            continue
        g, w = got.astype(np.float64), want.astype(np.float64)
        bad = ~np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        if np.any(bad):
            with np.errstate(all="ignore"):
                diff = np.abs(g - w)
            finite = diff[np.isfinite(diff)]
            worst = float(finite.max()) if finite.size else float("nan")
            return (
                f"output {index}: {int(bad.sum())} of {want.size} values differ "
                f"(max abs error {worst:.3g}, rtol={rtol:g}, atol={atol:g})"
            )
    return None


def _one_line(text: str, limit: int = 400) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _ms_error(exc: BaseException) -> str:
    """The informative part of a MindSpore exception (its C++ trace is long)."""
    text = str(exc)
    for marker in ("- C++ Call Stack", "----------------------------------------------------\n- "):
        if marker in text:
            text = text.split(marker)[0]
    return f"{type(exc).__name__}: {_one_line(text)}"


def run_node_test(
    test: NodeTest, data_dir: Path | None = None, work_dir: Path | None = None, registry=None
) -> Outcome:
    """Convert one node test, run it in MindSpore and compare with the references."""
    from mindconverter import convert
    from mindconverter.check.network import run_mindspore
    from mindconverter.errors import MindConverterError

    started = time.perf_counter()
    data_dir = Path(data_dir) if data_dir else default_data_dir()
    folder = test.path(data_dir)
    own_dir = work_dir is None
    work = Path(tempfile.mkdtemp(prefix="node_test_")) if own_dir else Path(work_dir)

    def done(status: str, reason: str = "", ops=(), frozen=()) -> Outcome:
        if own_dir:
            shutil.rmtree(work, ignore_errors=True)
        return Outcome(
            test.name,
            status,
            reason,
            sorted(set(ops)),
            list(frozen),
            round(time.perf_counter() - started, 3),
        )

    model = onnx.load(str(folder / "model.onnx"))
    inputs, expected = read_data_set(folder, model)
    model, inputs, frozen = freeze_parameter_inputs(model, inputs)
    model_file = work / f"{test.name}.onnx"
    onnx.save(model, str(model_file))
    shapes = None
    dynamic = any(
        not dim.HasField("dim_value")
        for value in model.graph.input
        for dim in value.type.tensor_type.shape.dim
    ) or any(not value.type.tensor_type.HasField("shape") for value in model.graph.input)
    if dynamic and all(np.ndim(a) > 0 and np.size(a) > 0 for a in inputs):
        shapes = [tuple(int(d) for d in np.shape(a)) for a in inputs]
    try:
        result = convert(
            model_file, shape=shapes, output=work / "out", overwrite=True, registry=registry
        )
    except MindConverterError as exc:
        return done("conversion_error", _one_line(str(exc)), frozen=frozen)
    except Exception as exc:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return done(
            "conversion_error",
            _one_line(
                f"internal error {type(exc).__name__}: {exc} (at {Path(where.filename).name}:{where.lineno})"
            ),
            frozen=frozen,
        )
    if result.unconverted:
        sites = {}
        for site in result.unconverted:
            sites.setdefault(site.op_type, site.reason or "no mapper")
        reason = "; ".join(f"{op}: {why}" for op, why in sorted(sites.items()))
        return done("unconverted", _one_line(reason), ops=sites, frozen=frozen)
    blamed = [op for op in test.op_types if op != "Constant"] or test.op_types
    try:
        with np.errstate(all="ignore"):
            actual = run_mindspore(result.script_path, result.checkpoint_path, inputs)
    except Exception as exc:
        return done("runtime_error", _ms_error(exc), ops=blamed, frozen=frozen)
    difference = compare(
        actual, expected, max(test.rtol, DEFAULT_RTOL), max(test.atol, DEFAULT_ATOL)
    )
    if difference:
        return done("mismatch", difference, ops=blamed, frozen=frozen)
    return done("pass", frozen=frozen)
