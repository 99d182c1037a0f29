"""The public Python API: :func:`convert` runs every stage and writes the results.

It raises :class:`~mindconverter.errors.MindConverterError` subclasses and never exits the
process.
"""

from __future__ import annotations

import contextlib
import math
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .bodies import body_converter
from .codegen.naming import module_name
from .codegen.rendered import RenderedModel, UnconvertedSite
from .codegen.script import load_from_safetensors, render_script
from .diagnose import first_divergence, layer_errors, locate_line
from .errors import make_error
from .frontends.loading import check_model_path, load_model
from .graph import Graph
from .graph.specs import TensorSpec
from .graph.weight_store import WeightStore
from .mappers.base import MappedNode
from .mappers.registry import MapperRegistry, default_registry
from .outputs import checkpoint as ckpt
from .outputs.atomic import AtomicOutputs, check_targets, prepare_folder
from .outputs.mindir import export_mindir
from .outputs.report import converted_rate, op_counts, render_report
from .outputs.scaffold import render_scaffold, scaffold_paths
from .outputs.weight_map import weight_map
from .passes.context import PassContext
from .passes.fix_shapes import parse_shape, parse_shape_request
from .passes.pipeline import PIPELINE, run_passes
from .progress import Progress, peak_memory_mb
from .text import one_line
from .verify import (
    DEFAULT_TOLERANCE,
    describe,
    random_inputs,
    training_mode_operators,
    verification_shapes,
    verify_conversion,
)

ShapeArg = str | Sequence[int]


@dataclass
class OutputPaths:
    """Where the four results of one conversion go."""

    script: Path
    checkpoint: Path
    report: Path
    weight_map: Path
    mindir: Path | None = None  # with --mindir
    train_script: Path | None = None  # with --scaffold
    eval_script: Path | None = None  # with --scaffold

    def all(self) -> list[Path]:
        extras = [self.mindir, self.train_script, self.eval_script]
        extras = [path for path in extras if path is not None]
        return [self.script, self.checkpoint, self.report, self.weight_map, *extras]


@dataclass(frozen=True)
class WriteOptions:
    """How the results are written and checked."""

    overwrite: bool = False
    tolerance: float = DEFAULT_TOLERANCE
    graph_mode: bool = False
    mindir: bool = False
    verify_layers: bool = False  # the per-layer error table in the report, even on a match
    # the same conversion with other outputs (for finding where a mismatch starts)
    convert_with_outputs: Callable[[list[str]], tuple] | None = None


@dataclass
class ConversionResult:
    """What a conversion produced and how it went."""

    paths: OutputPaths
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    converted_rate: float
    unconverted: list[UnconvertedSite]
    operator_counts: dict[str, int]
    parameter_count: int
    seconds: float
    verification: dict | None = None
    peak_memory_mb: float = 0.0
    messages: list[str] = field(default_factory=list)

    @property
    def script_path(self) -> Path:
        return self.paths.script

    @property
    def checkpoint_path(self) -> Path:
        return self.paths.checkpoint

    @property
    def report_path(self) -> Path:
        return self.paths.report

    @property
    def weight_map_path(self) -> Path:
        return self.paths.weight_map

    @property
    def fully_converted(self) -> bool:
        return not self.unconverted


def output_paths(model_file: Path, output: Path, report: Path | None) -> OutputPaths:
    """The result file names for ``model_file`` (``<stem>.py``, ``<stem>.ckpt``, ...)."""
    has_suffix = model_file.suffix and not model_file.is_dir()  # a SavedModel folder: whole name
    stem = module_name(
        model_file.name[: -len(model_file.suffix)] if has_suffix else model_file.name
    )
    report_dir = report if report is not None else output
    return OutputPaths(
        script=output / f"{stem}.py",
        checkpoint=output / f"{stem}.ckpt",
        report=report_dir / f"report_of_{stem}.txt",
        weight_map=report_dir / f"weight_map_of_{stem}.json",
    )


def _normalise_shapes(
    shape: Sequence[ShapeArg] | None,
) -> list[tuple[str | None, tuple[int, ...]]] | None:
    """Shape requests as (input name or None, dims): from ``"1,3,8,8 2,4"``, ``["x=1,3,8,8"]``,
    ``(1, 3, 8, 8)`` or ``[(1, 3, 8, 8), ()]`` (``()`` is a scalar)."""
    if shape is None:
        return None
    if isinstance(shape, str):
        shape = shape.split()
    if not isinstance(shape, (list, tuple)):
        raise make_error(
            "BAD_SHAPE", f"shape must be a string or a sequence, not {type(shape).__name__}."
        )
    if shape and all(_is_whole_number(d) for d in shape):
        shape = [shape]
    result = []
    for item in shape:
        if isinstance(item, str):
            result.append(parse_shape_request(item))
        elif isinstance(item, (list, tuple)) and all(_is_whole_number(d) for d in item):
            dims = ",".join(str(int(d)) for d in item)
            result.append((None, parse_shape(dims) if item else ()))
        else:
            raise make_error(
                "BAD_SHAPE", f"{item!r} is not a shape: give whole numbers, e.g. (1, 3, 224, 224)."
            )
    return result or None


def _check_arguments(model_file, input_nodes, output_nodes, output, report, tolerance) -> None:
    """Reject argument values and types the CLI could never pass, with the CLI's error codes."""
    for label, value in (("model_file", model_file), ("output", output), ("report", report)):
        if value is None and label == "report":
            continue
        if not isinstance(value, (str, Path)):
            raise make_error("BAD_ARGUMENT", f"{label} must be a path, not {type(value).__name__}.")
        if not str(value).strip():
            raise make_error("BAD_ARGUMENT", f"{label} is empty; give a file or folder name.")
    for label, names in (("input_nodes", input_nodes), ("output_nodes", output_nodes)):
        if names is None:
            continue
        if isinstance(names, str) or not isinstance(names, (list, tuple)):
            raise make_error("BAD_ARGUMENT", f"{label} must be a list of names.")
        if not all(isinstance(name, str) and name for name in names):
            raise make_error("BAD_ARGUMENT", f"{label} has an empty name or one that is not text.")
    if (
        isinstance(tolerance, bool)
        or not isinstance(tolerance, (int, float))
        or not math.isfinite(tolerance)
        or tolerance <= 0
    ):
        raise make_error("BAD_ARGUMENT", f"tolerance must be a positive number, not {tolerance!r}.")


def _check_options(flags: dict, registry, log, progress) -> None:
    """Reject option values of the wrong kind with BAD_ARGUMENT (never a TypeError later on)."""
    for label, value in flags.items():
        if not isinstance(value, bool):
            raise make_error("BAD_ARGUMENT", f"{label} must be True or False, not {value!r}.")
    for label, value, kind in (
        ("registry", registry, MapperRegistry),
        ("progress", progress, Progress),
    ):
        if value is not None and not isinstance(value, kind):
            raise make_error("BAD_ARGUMENT", f"{label} must be a {kind.__name__} or None.")
    if log is not None and not callable(log):
        raise make_error("BAD_ARGUMENT", "log must be a function taking one message, or None.")


def _in_input_order(
    shapes: list[tuple[str | None, tuple[int, ...]]] | None, input_nodes: Sequence[str] | None
) -> list[tuple[int, ...]] | None:
    """Plain shapes in ``input_nodes`` order (a TensorFlow graph needs one per input)."""
    if not shapes:
        return None
    named = {name: dims for name, dims in shapes if name is not None}
    positional = iter(dims for name, dims in shapes if name is None)
    ordered = [
        named[name] if name in named else next(positional, None) for name in input_nodes or []
    ]
    ordered += list(positional)
    return [dims for dims in ordered if dims is not None]


def _is_whole_number(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def convert(
    model_file: str | Path,
    shape: Sequence[ShapeArg] | None = None,
    input_nodes: Sequence[str] | None = None,
    output_nodes: Sequence[str] | None = None,
    output: str | Path = "output",
    report: str | Path | None = None,
    *,
    overwrite: bool = False,
    strict: bool = False,
    verify: bool = False,
    verify_layers: bool = False,
    tolerance: float = DEFAULT_TOLERANCE,
    graph_mode: bool = False,
    dynamic: bool = True,
    float32: bool = False,
    mindir: bool = False,
    scaffold: bool = False,
    registry: MapperRegistry | None = None,
    debug: bool = False,
    log: Callable[[str], None] | None = None,
    progress: Progress | None = None,
) -> ConversionResult:
    """Convert an ONNX model file into a MindSpore script, checkpoint, report and weight map.

    ``shape`` holds one shape per input (``"1,3,224,224"`` or ``(1, 3, 224, 224)``); it may be
    omitted when the model's input shapes are static; it gives the example sizes used for shape
    inference and verification. The dimensions the model declares dynamic stay dynamic in the
    generated network (shape arithmetic on them is computed from tensors at run time);
    ``dynamic=False`` fixes every dimension to ``shape``; ``float32=True`` computes a float16 or
    bfloat16 model in float32; ``mindir=True`` also exports ``<stem>.mindir`` for deployment;
    ``scaffold=True`` also writes ``train_<stem>.py`` and ``eval_<stem>.py`` beside the script.
    ``log`` receives progress messages and ``progress`` shows stage timings and progress bars
    (the CLI passes one for its terminal). Raises ``MindConverterError`` subclasses.
    """
    started = time.perf_counter()
    _check_options(
        dict(
            overwrite=overwrite,
            strict=strict,
            verify=verify,
            verify_layers=verify_layers,
            graph_mode=graph_mode,
            dynamic=dynamic,
            float32=float32,
            mindir=mindir,
            scaffold=scaffold,
            debug=debug,
        ),
        registry,
        log,
        progress,
    )
    say = log or (lambda message: None)
    progress = progress or Progress()
    verify = verify or verify_layers
    _check_arguments(model_file, input_nodes, output_nodes, output, report, tolerance)
    model_path = check_model_path(model_file)
    shapes = _normalise_shapes(shape)
    output_dir = prepare_folder(Path(output))
    report_dir = prepare_folder(Path(report)) if report is not None else output_dir
    paths = output_paths(model_path, output_dir, report_dir)
    if mindir:
        paths.mindir = paths.script.with_suffix(".mindir")
    if scaffold:
        paths.train_script, paths.eval_script = scaffold_paths(paths.script)
    check_targets(paths.all(), overwrite)

    settings = dict(
        registry=registry or default_registry(),
        shapes=shapes,
        keep_reference=verify,
        float32=float32,
        debug=debug,
        progress=progress,
    )
    graph, context, rendered, dynamic = _convert_with_fallback(
        model_path, input_nodes, output_nodes, settings, dynamic, say
    )
    if strict and rendered.unconverted:
        ops = sorted({site.op_type for site in rendered.unconverted})
        raise make_error(
            "UNSUPPORTED_OPERATORS",
            f"{len(rendered.unconverted)} node(s) not converted: {', '.join(ops)}.",
        )
    quiet = {**settings, "progress": Progress()}
    options = WriteOptions(
        overwrite,
        tolerance,
        graph_mode,
        mindir,
        verify_layers,
        lambda outputs: _convert_graph(model_path, input_nodes, outputs, quiet, dynamic, None),
    )
    verification = _write_outputs(paths, graph, context, rendered, model_path.name, options, say)
    seconds = time.perf_counter() - started
    mapped = context.mapped
    result = ConversionResult(
        paths=paths,
        inputs=context.input_specs,
        outputs=context.output_specs,
        converted_rate=converted_rate(mapped),
        unconverted=rendered.unconverted,
        operator_counts={row.op: row.total for row in op_counts(mapped)},
        parameter_count=len(rendered.entries),
        seconds=seconds,
        verification=verification,
        peak_memory_mb=peak_memory_mb(),
    )
    if verification is not None and not verification["ok"]:
        raise make_error("VERIFY_MISMATCH", describe(verification))
    return result


@contextlib.contextmanager
def warnings_as_notes(notes: list[str], limit: int = 20) -> Iterator[None]:
    """Python warnings raised inside (numpy overflow while folding constants, a library's
    deprecation) become report notes instead of lines on stderr."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for item in caught:
        text = "Warning while converting: " + one_line(
            f"{item.category.__name__}: {item.message}", 300
        )
        if text not in notes and len(notes) < limit:
            notes.append(text)


def _convert_with_fallback(model_path, input_nodes, output_nodes, settings, dynamic, say):
    """Convert with dynamic dimensions, or with fixed sizes when those leave fewer operators
    unconverted: (graph, context, rendered, whether dimensions stayed dynamic)."""
    graph, context, rendered = _convert_graph(
        model_path, input_nodes, output_nodes, settings, dynamic, say
    )
    if not (dynamic and graph.dynamic_dims and rendered.unconverted):
        return graph, context, rendered, dynamic
    # a network that runs at the example sizes beats one with placeholders
    quiet = {**settings, "progress": Progress()}
    static = _convert_graph(model_path, input_nodes, output_nodes, quiet, False, None)
    if len(static[2].unconverted) >= len(rendered.unconverted):
        return graph, context, rendered, dynamic
    kinds = ", ".join(sorted({site.op_type for site in rendered.unconverted}))
    note = (
        f"Every dimension is kept at the --shape sizes: with dynamic dimensions "
        f"{len(rendered.unconverted)} operator(s) ({kinds}) could not be converted, "
        f"with fixed sizes {len(static[2].unconverted)}."
    )
    graph, context, rendered = static
    context.log = say
    context.notes.append(one_line(note, 400))
    say(f"NOTE: {context.notes[-1]}")
    return graph, context, rendered, False


def _convert_graph(model_path, input_nodes, output_nodes, settings, dynamic, say):
    """Load the model and run the pipeline and code generation: (graph, context, rendered)."""
    notes: list[str] = []
    with warnings_as_notes(notes):
        graph, context, rendered = _run_pipeline(
            model_path, input_nodes, output_nodes, settings, dynamic, say
        )
    context.notes.extend(note for note in notes if note not in context.notes)
    return graph, context, rendered


def _run_pipeline(model_path, input_nodes, output_nodes, settings, dynamic, say):
    graphdef_shapes = _in_input_order(settings["shapes"], input_nodes)
    store = WeightStore()
    with settings["progress"].stage("load the model"):
        model = load_model(model_path, input_nodes, output_nodes, graphdef_shapes, store)
        graph = Graph(model, store)
    if model_path.suffix.lower() == ".pb":  # tf2onnx names the tensors in TF's form (x -> x:0)
        input_nodes = [inp.name for inp in graph.model.graph.input]
        output_nodes = [out.name for out in graph.model.graph.output]
    context = PassContext(
        input_nodes=list(input_nodes or []),
        output_nodes=list(output_nodes or []),
        dynamic=dynamic,
        log=say,
        convert_body=body_converter(settings["registry"]),
        **settings,
    )
    run_passes(graph, context, PIPELINE)
    with context.progress.stage("generate the script"):
        rendered = render_script(graph, context.mapped, context.tree, model_path.name)
    return graph, context, rendered


def _write_outputs(
    paths: OutputPaths,
    graph: Graph,
    context: PassContext,
    rendered: RenderedModel,
    model_name: str,
    options: WriteOptions,
    say: Callable[[str], None],
) -> dict | None:
    """Write script, checkpoint, report and weight map (and MindIR) at once, verifying the
    staged files."""
    input_lines = [
        f"{spec.name} -> {var}: {_shape_text(graph, spec.name)}"
        for spec, var in zip(context.input_specs, rendered.input_names)
    ]
    output_lines = [f"{name}: {_shape_text(graph, name)}" for name in graph.outputs]
    verification = None
    progress = context.progress
    parameters = [(entry.name, entry.array) for entry in rendered.entries]
    code, write = rendered.code, ckpt.write_checkpoint
    if not ckpt.fits_ckpt(parameters):
        paths.checkpoint = paths.checkpoint.with_suffix(".safetensors")
        check_targets([paths.checkpoint], options.overwrite)
        code, write = load_from_safetensors(code), ckpt.write_safetensors
        context.notes.append(
            "The weights exceed the 2 GB a MindSpore .ckpt can hold: the checkpoint is written "
            'as safetensors; load it with ms.load_checkpoint(path, format="safetensors").'
        )
        say(f"NOTE: {context.notes[-1]}")
    with AtomicOutputs(overwrite=options.overwrite) as outputs:
        outputs.write_text(paths.script, code)
        total = sum(array.nbytes for _, array in parameters)
        with progress.bar("write the checkpoint", total) as advance:
            outputs.write_with(paths.checkpoint, lambda stream: write(stream, parameters, advance))
        if context.reference is not None:
            verification = _verify_staged(outputs, paths, graph, context, rendered, options, say)
        if paths.mindir is not None:
            _export_staged_mindir(outputs, paths, graph, context, rendered, say)
        report_text = render_report(
            graph=graph,
            mapped=context.mapped,
            rendered=rendered,
            model_name=model_name,
            script_name=paths.script.name,
            checkpoint_name=paths.checkpoint.name,
            inputs=input_lines,
            outputs=output_lines,
            verification=verification,
            notes=context.notes,
        )
        outputs.write_text(paths.report, report_text)
        outputs.write_text(paths.weight_map, weight_map(rendered, paths.script.stem))
        if paths.train_script is not None and paths.eval_script is not None:
            train, evaluate = render_scaffold(
                graph, context.resolved_shapes, rendered, paths.script, paths.checkpoint, model_name
            )
            outputs.write_text(paths.train_script, train)
            outputs.write_text(paths.eval_script, evaluate)
        outputs.publish()
    return verification


def _verify_staged(outputs, paths, graph, context, rendered, options, say) -> dict | None:
    """Run the staged script and checkpoint against onnxruntime (None when it cannot be)."""
    training = training_mode_operators(graph)
    if rendered.unconverted:
        say("Verification skipped: the script contains unconverted operators.")
        return None
    if training:
        say(
            "Verification skipped: a training-mode export (training-mode "
            f"{' and '.join(training)} in onnxruntime use batch statistics or random "
            "dropout); the network follows set_train() like the source's train()/eval()."
        )
        return None
    shape_sets = verification_shapes(graph, context.resolved_shapes)
    total = sum(entry.array.nbytes for entry in rendered.entries)
    if total > VERIFY_MEMORY_NOTE_BYTES:
        say(
            f"Verification runs the model in onnxruntime and MindSpore: it needs about "
            f"{3 * total / 2**30:.1f} GB of memory (3x the weights)."
        )
    with (
        context.progress.bar("verify", len(shape_sets) or 1, unit="shape") as advance,
        warnings_as_notes(context.notes),
    ):
        verification = verify_conversion(
            context.reference,
            graph,
            outputs.staged_path(paths.script),
            outputs.staged_path(paths.checkpoint),
            tolerance=options.tolerance,
            graph_mode=options.graph_mode,
            shape_sets=shape_sets,
            advance=advance,
        )
    if options.convert_with_outputs is not None and (
        options.verify_layers or not verification["ok"]
    ):
        with context.progress.stage("compare every layer"), warnings_as_notes(context.notes):
            errors = layer_errors(
                graph,
                context.mapped,
                context.reference,
                options.convert_with_outputs,
                shape_sets[0] if shape_sets else {},
                options.tolerance,
            )
        verification["layers"] = errors if options.verify_layers else []
        diverging = first_divergence(errors)
        if diverging is not None:
            with warnings_as_notes(context.notes):
                locate_line(
                    outputs.staged_path(paths.script),
                    outputs.staged_path(paths.checkpoint),
                    random_inputs(graph, 0, shape_sets[0] if shape_sets else {}),
                    diverging,
                )
            verification["divergence"] = diverging.describe()
    say(describe(verification))
    return verification


def _export_staged_mindir(outputs, paths, graph, context, rendered, say) -> None:
    """Export the staged network as MindIR next to the script (the report notes it)."""
    if rendered.unconverted:
        paths.mindir = None
        context.notes.append(
            "MindIR not written: the script contains unconverted operators, which cannot run."
        )
        say(f"NOTE: {context.notes[-1]}")
        return
    specs = []
    for spec in context.input_specs:
        shape = context.resolved_shapes.get(spec.name) or graph.shapes.get(spec.name) or ()
        dims = tuple(d if isinstance(d, int) else 1 for d in shape)
        specs.append((dims, graph.dtypes.get(spec.name, np.dtype(np.float32))))
    script, checkpoint = outputs.staged_path(paths.script), outputs.staged_path(paths.checkpoint)
    exported = []
    with context.progress.stage("export MindIR"), warnings_as_notes(context.notes):
        outputs.write_with(
            paths.mindir,
            lambda stream: exported.append(export_mindir(script, checkpoint, specs, stream)),
        )
    how = f"{exported[0]}; load it with mindspore.load and nn.GraphCell"
    if exported[0].startswith("dynamic"):
        how += (
            ", and to run one cell at several sizes give it set_inputs(*dynamic_inputs()) "
            "from the script"
        )
    context.notes.append(f"MindIR: {paths.mindir.name} ({how}).")


# Above this many bytes of weights, --verify says how much memory it needs before it starts.
VERIFY_MEMORY_NOTE_BYTES = 1 << 30


def _shape_text(graph, name: str) -> str:
    """``float32[batch, 3, 224, 224]``: dynamic dimensions by name, ``?`` for an unknown rank."""
    dtype = graph.dtypes.get(name)
    shape = graph.dims(name)
    dims = ", ".join(map(str, shape)) if shape is not None else "?"
    return f"{dtype.name if dtype is not None else '?'}[{dims}]"


__all__ = ["ConversionResult", "MappedNode", "OutputPaths", "RenderedModel", "convert"]
