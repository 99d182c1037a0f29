"""The public Python API: :func:`convert` and the result it returns.

``convert`` raises :class:`~mindconverter.errors.MindConverterError` subclasses and never exits
the process. The work itself is in :mod:`mindconverter.conversion`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from .check.verify import DEFAULT_TOLERANCE, describe
from .codegen.rendered import RenderedModel, UnconvertedSite
from .conversion.arguments import (
    ShapeArg,
    check_names,
    check_options,
    check_paths,
    check_tolerance,
    check_training_arguments,
    normalise_shapes,
)
from .conversion.paths import OutputPaths, output_paths
from .conversion.settings import ConversionSettings, WriteOptions
from .conversion.stages import ConvertedModel, convert_model
from .conversion.strategies import convert_in_order
from .conversion.writing import write_outputs
from .errors import make_error
from .frontends.loading import check_model_path
from .graph.specs import TensorSpec
from .mappers.base import MappedNode
from .mappers.registry import MapperRegistry, default_registry
from .outputs.atomic import check_targets, prepare_folder, refuse_aliases
from .outputs.report import converted_rate, op_counts
from .progress import Progress, peak_memory_mb


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
    keep_quantized: bool = False,
    mindir: bool = False,
    scaffold: bool = False,
    train_output: str | None = None,
    train_loss: str | None = None,
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
    bfloat16 model in float32; ``keep_quantized=True`` keeps the integer weights of onnxruntime's
    quantized matrix products as integers, dequantized as the network runs; ``mindir=True``
    also exports ``<stem>.mindir`` for deployment;
    ``scaffold=True`` also writes ``train_<stem>.py`` and ``eval_<stem>.py`` beside the script,
    training ``train_output`` (an output name; default: the first output) with ``train_loss``
    (cross_entropy, mse, l1, bce or output; default: the one that fits the output).
    ``log`` receives progress messages and ``progress`` shows stage timings and progress bars
    (the CLI passes one for its terminal). Raises ``MindConverterError`` subclasses.
    Conversions may run in several threads at once; each keeps its own warnings and notes.
    """
    started = time.perf_counter()
    flags = dict(overwrite=overwrite, strict=strict, verify=verify, verify_layers=verify_layers)
    flags.update(graph_mode=graph_mode, dynamic=dynamic, float32=float32, mindir=mindir)
    flags.update(keep_quantized=keep_quantized)
    check_options(dict(flags, scaffold=scaffold, debug=debug), registry, log, progress)
    check_paths(model_file=model_file, output=output, report=report)
    check_names(input_nodes=input_nodes, output_nodes=output_nodes)
    check_tolerance(tolerance)
    check_training_arguments(scaffold, train_output, train_loss)
    verify = verify or verify_layers
    options = WriteOptions(
        overwrite,
        verify,
        tolerance,
        graph_mode,
        mindir,
        scaffold,
        verify_layers=verify_layers,
        train_output=train_output,
        train_loss=train_loss,
    )
    settings = ConversionSettings(
        registry=registry or default_registry(),
        shapes=normalise_shapes(shape),
        input_nodes=tuple(input_nodes or ()),
        output_nodes=tuple(output_nodes or ()),
        dynamic=dynamic,
        keep_reference=verify,
        float32=float32,
        keep_quantized=keep_quantized,
        debug=debug,
        progress=progress or Progress(),
        log=log,
    )
    model_path = check_model_path(model_file)
    output_dir = prepare_folder(Path(output))
    report_dir = prepare_folder(Path(report)) if report is not None else output_dir
    paths = output_paths(model_path, output_dir, report_dir, mindir=mindir, scaffold=scaffold)
    check_targets(paths.all(), overwrite)
    refuse_aliases(paths.all(), [model_path])
    converted = convert_in_order(model_path, settings)
    big_checkpoint = paths.checkpoint.with_suffix(".safetensors")  # past 2 GB
    refuse_aliases([*paths.all(), big_checkpoint], [model_path, *converted.graph.store.files])
    _refuse_unconverted(converted, strict)
    verification = write_outputs(
        paths,
        converted,
        model_path.name,
        options,
        _with_outputs(model_path, settings, converted.dynamic),
        settings.say,
    )
    result = _result(paths, converted, verification, time.perf_counter() - started)
    if verification is not None and not verification["ok"]:
        raise make_error("VERIFY_MISMATCH", describe(verification))
    return result


def _refuse_unconverted(converted: ConvertedModel, strict: bool) -> None:
    unconverted = converted.rendered.unconverted
    if strict and unconverted:
        ops = sorted({site.op_type for site in unconverted})
        raise make_error(
            "UNSUPPORTED_OPERATORS",
            f"{len(unconverted)} node(s) not converted: {', '.join(ops)}.",
        )


def _with_outputs(
    model_path: Path, settings: ConversionSettings, dynamic: bool
) -> Callable[[list[str]], ConvertedModel]:
    """The same conversion with other outputs (the divergence finder cuts the model there)."""
    quiet = replace(settings.quiet(), dynamic=dynamic)
    return lambda outputs: convert_model(model_path, replace(quiet, output_nodes=tuple(outputs)))


def _result(
    paths: OutputPaths, converted: ConvertedModel, verification: dict | None, seconds: float
) -> ConversionResult:
    mapped, rendered = converted.context.mapped, converted.rendered
    return ConversionResult(
        paths=paths,
        inputs=converted.context.input_specs,
        outputs=converted.context.output_specs,
        converted_rate=converted_rate(mapped),
        unconverted=rendered.unconverted,
        operator_counts={row.op: row.total for row in op_counts(mapped)},
        parameter_count=len(rendered.entries),
        seconds=seconds,
        verification=verification,
        peak_memory_mb=peak_memory_mb(),
    )


__all__ = ["ConversionResult", "MappedNode", "OutputPaths", "RenderedModel", "convert"]
