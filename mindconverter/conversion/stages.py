"""One run of the pipeline: load the model, run the passes in order, render the script."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..codegen.rendered import RenderedModel
from ..codegen.script import render_script
from ..frontends.loading import load_model
from ..graph import Graph
from ..graph.weight_store import WeightStore
from ..passes.context import PassContext
from ..passes.pipeline import PIPELINE, run_passes
from .bodies import body_converter
from .notes import warnings_as_notes
from .settings import ConversionSettings


@dataclass
class ConvertedModel:
    """What one run of the pipeline made: the edited graph, the passes' findings (the context)
    and the rendered script, with whether the declared dynamic dimensions stayed dynamic."""

    graph: Graph
    context: PassContext
    rendered: RenderedModel
    dynamic: bool

    @property
    def unconverted_count(self) -> int:
        return len(self.rendered.unconverted)


def convert_model(model_path: Path, settings: ConversionSettings) -> ConvertedModel:
    """Load the model, run every pass and render the script; warnings become report notes."""
    notes: list[str] = []
    with warnings_as_notes(notes):
        converted = _run_pipeline(model_path, settings)
    converted.context.notes.extend(n for n in notes if n not in converted.context.notes)
    return converted


def _run_pipeline(model_path: Path, settings: ConversionSettings) -> ConvertedModel:
    input_nodes, output_nodes = list(settings.input_nodes), list(settings.output_nodes)
    store = WeightStore()
    store.note_file(model_path)  # a model rewritten while it is converted gives FILE_CHANGED
    with settings.progress.stage("load the model"):
        shapes = in_input_order(settings.shapes, input_nodes)
        model = load_model(model_path, input_nodes, output_nodes, shapes, store)
        graph = Graph(model, store)
    if model_path.suffix.lower() == ".pb":  # tf2onnx names the tensors in TF's form (x -> x:0)
        input_nodes = [inp.name for inp in graph.model.graph.input]
        output_nodes = [out.name for out in graph.model.graph.output]
    context = PassContext(
        registry=settings.registry,
        input_nodes=input_nodes,
        output_nodes=output_nodes,
        shapes=settings.shapes,
        keep_reference=settings.keep_reference,
        dynamic=settings.dynamic,
        float32=settings.float32,
        keep_quantized=settings.keep_quantized,
        debug=settings.debug,
        log=settings.log,
        progress=settings.progress,
        convert_body=body_converter(settings.registry),
    )
    run_passes(graph, context, PIPELINE)
    with context.progress.stage("generate the script"):
        rendered = render_script(graph, context.mapped, context.tree, model_path.name)
    return ConvertedModel(graph, context, rendered, settings.dynamic)


def in_input_order(shapes, input_nodes) -> list[tuple[int, ...]] | None:
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
