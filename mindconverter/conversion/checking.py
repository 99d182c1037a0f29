"""Run the staged results before they are published: ``--verify`` against onnxruntime (with the
divergence finder on a mismatch) and the MindIR export. MindSpore is used by one conversion at a
time (check.network's lock), so conversions in threads never run it concurrently."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..check.diagnose import first_divergence, layer_errors, locate_line
from ..check.network import build_network, mindspore_lock
from ..check.verify import (
    compared_values,
    describe,
    random_inputs,
    training_mode_operators,
    verification_shapes,
    verify_conversion,
)
from ..outputs.atomic import AtomicOutputs
from ..outputs.mindir import export_mindir
from .notes import warnings_as_notes
from .paths import OutputPaths
from .settings import WriteOptions
from .stages import ConvertedModel

# Above this many bytes of weights, --verify says how much memory it needs before it starts.
VERIFY_MEMORY_NOTE_BYTES = 1 << 30


def _skip_reason(converted: ConvertedModel) -> str:
    if converted.rendered.unconverted:
        return "Verification skipped: the script contains unconverted operators."
    training = training_mode_operators(converted.graph)
    if training:
        return (
            "Verification skipped: a training-mode export (training-mode "
            f"{' and '.join(training)} in onnxruntime use batch statistics or random "
            "dropout); the network follows set_train() like the source's train()/eval()."
        )
    return ""


def verify_staged(
    outputs: AtomicOutputs,
    paths: OutputPaths,
    converted: ConvertedModel,
    options: WriteOptions,
    convert_with_outputs: Callable | None,
    say: Callable[[str], None],
) -> dict | None:
    """Run the staged script and checkpoint against onnxruntime (None when it cannot be)."""
    graph, context, rendered = converted.graph, converted.context, converted.rendered
    skip = _skip_reason(converted)
    if skip:
        say(skip)
        return None
    shape_sets = verification_shapes(graph, context.resolved_shapes)
    total = sum(entry.array.nbytes for entry in rendered.entries)
    if total > VERIFY_MEMORY_NOTE_BYTES:
        say(
            f"Verification runs the model in onnxruntime and MindSpore: it needs about "
            f"{3 * total / 2**30:.1f} GB of memory (3x the weights)."
        )
    script, checkpoint = outputs.staged_path(paths.script), outputs.staged_path(paths.checkpoint)
    with (
        context.progress.bar("verify", min(len(shape_sets), 2) or 1, unit="shape") as advance,
        warnings_as_notes(context.notes),
        mindspore_lock(),
    ):
        verification = verify_conversion(
            context.reference,
            graph,
            script,
            checkpoint,
            tolerance=options.tolerance,
            graph_mode=options.graph_mode,
            shape_sets=shape_sets,
            advance=advance,
        )
    if verification["skipped_shapes"] and len(verification["shapes"]) < 2:
        say(
            "onnxruntime could not run the source model at any second set of sizes tried "
            "(its dimensions may be tied in ways the model does not declare): verified at "
            "the conversion's sizes only."
        )
    if convert_with_outputs is not None and (options.verify_layers or not verification["ok"]):
        first_shapes = shape_sets[0] if shape_sets else {}
        with (
            context.progress.stage("compare every layer"),
            warnings_as_notes(context.notes),
            mindspore_lock(),
        ):
            errors = layer_errors(
                graph,
                context.mapped,
                context.reference,
                convert_with_outputs,
                first_shapes,
                options.tolerance,
            )
            verification["layers"] = errors if options.verify_layers else []
            diverging = first_divergence(errors)
            if diverging is not None:
                inputs = random_inputs(graph, 0, first_shapes)
                locate_line(script, checkpoint, inputs, diverging)
                verification["divergence"] = diverging.describe()
    say(describe(verification))
    return verification


def export_staged_mindir(
    outputs: AtomicOutputs, paths: OutputPaths, converted: ConvertedModel, say
) -> None:
    """Export the staged network as MindIR next to the script (the report notes it)."""
    graph, context, rendered = converted.graph, converted.context, converted.rendered
    if rendered.unconverted or paths.mindir is None:
        paths.mindir = None
        context.notes.append(
            "MindIR not written: the script contains unconverted operators, which cannot run."
        )
        say(f"NOTE: {context.notes[-1]}")
        return
    specs = []
    fills = compared_values(graph)  # a mode switch takes a branch that runs (sr == 16000)
    for spec in context.input_specs:
        shape = context.resolved_shapes.get(spec.name) or graph.shapes.get(spec.name) or ()
        dims = tuple(d if isinstance(d, int) else 1 for d in shape)
        dtype = graph.dtypes.get(spec.name, np.dtype(np.float32))
        specs.append((dims, dtype, fills.get(spec.name, 0)))
    script, checkpoint = outputs.staged_path(paths.script), outputs.staged_path(paths.checkpoint)
    exported: list[str] = []
    with (
        context.progress.stage("export MindIR"),
        warnings_as_notes(context.notes),
        mindspore_lock(),
    ):
        outputs.write_with(
            paths.mindir,
            lambda stream: exported.append(
                export_mindir(lambda: build_network(script, checkpoint), specs, stream)
            ),
        )
    how = f"{exported[0]}; load it with mindspore.load and nn.GraphCell"
    if exported[0].startswith("dynamic"):
        how += (
            ", and to run one cell at several sizes give it set_inputs(*dynamic_inputs()) "
            "from the script"
        )
    context.notes.append(f"MindIR: {paths.mindir.name} ({how}).")
