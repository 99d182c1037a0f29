"""Write one conversion's results together: script, checkpoint, report, weight map (and MindIR,
scaffold), verified while staged and published at once, or not at all."""

from __future__ import annotations

from collections.abc import Callable

from ..codegen.script import load_from_safetensors
from ..graph import Graph
from ..outputs import checkpoint as ckpt
from ..outputs.atomic import AtomicOutputs, check_targets
from ..outputs.report import render_report
from ..outputs.scaffold import render_scaffold, training_target
from ..outputs.weight_map import weight_map
from .checking import export_staged_mindir, verify_staged
from .paths import OutputPaths
from .settings import WriteOptions
from .stages import ConvertedModel

# Converts the same model with other outputs (for finding where a mismatch starts).
ConvertWithOutputs = Callable[[list[str]], ConvertedModel]


def write_outputs(
    paths: OutputPaths,
    converted: ConvertedModel,
    model_name: str,
    options: WriteOptions,
    convert_with_outputs: ConvertWithOutputs | None,
    say: Callable[[str], None],
) -> dict | None:
    """Write every result at once, verifying the staged files; returns the verification."""
    graph, context, rendered = converted.graph, converted.context, converted.rendered
    target = None
    if paths.train_script is not None:  # refused (SCAFFOLD_NO_LOSS) before anything is written
        target = training_target(
            graph, context.resolved_shapes, rendered, options.train_output, options.train_loss
        )
    verification = None
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
        with context.progress.bar("write the checkpoint", total) as advance:
            outputs.write_with(paths.checkpoint, lambda stream: write(stream, parameters, advance))
        graph.store.check_unchanged()  # the weights came from the files as they were loaded
        if context.reference is not None:
            verification = verify_staged(
                outputs, paths, converted, options, convert_with_outputs, say
            )
        if paths.mindir is not None:
            export_staged_mindir(outputs, paths, converted, say)
        outputs.write_text(paths.report, _report(paths, converted, model_name, verification))
        outputs.write_text(paths.weight_map, weight_map(rendered, paths.script.stem))
        if paths.train_script is not None and paths.eval_script is not None:
            train, evaluate = render_scaffold(
                graph,
                context.resolved_shapes,
                rendered,
                paths.script,
                paths.checkpoint,
                model_name,
                target,
            )
            outputs.write_text(paths.train_script, train)
            outputs.write_text(paths.eval_script, evaluate)
        graph.store.check_unchanged()
        outputs.publish()
    return verification


def _report(
    paths: OutputPaths, converted: ConvertedModel, model_name: str, verification: dict | None
) -> str:
    graph, context, rendered = converted.graph, converted.context, converted.rendered
    return render_report(
        graph=graph,
        mapped=context.mapped,
        rendered=rendered,
        model_name=model_name,
        script_name=paths.script.name,
        checkpoint_name=paths.checkpoint.name,
        inputs=[
            f"{spec.name} -> {var}: {shape_text(graph, spec.name)}"
            for spec, var in zip(context.input_specs, rendered.input_names)
        ],
        outputs=[f"{name}: {shape_text(graph, name)}" for name in graph.outputs],
        verification=verification,
        notes=context.notes,
    )


def shape_text(graph: Graph, name: str) -> str:
    """``float32[batch, 3, 224, 224]``: dynamic dimensions by name, ``?`` for an unknown rank."""
    dtype = graph.dtypes.get(name)
    shape = graph.dims(name)
    dims = ", ".join(map(str, shape)) if shape is not None else "?"
    return f"{dtype.name if dtype is not None else '?'}[{dims}]"
