"""Where a converted model first parts from onnxruntime.

The network is converted once more with every intermediate value the converted graph computes
(and the source names) as an output, run in MindSpore, and compared value by value with
onnxruntime running the source model with the same values as outputs. In graph order, the first
value beyond the tolerance names the operator whose conversion is wrong.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import onnx

from ..codegen.rendered import RenderedModel
from ..graph import Graph
from ..graph.module_tree import module_path
from ..outputs.checkpoint import write_checkpoint
from ..text import one_line
from .network import build_network
from .verify import (
    compare_outputs,
    in_reference_dtypes,
    random_inputs,
    run_mindspore,
    run_onnxruntime,
)


class ConvertedOutputs(Protocol):
    """What the divergence finder reads of a conversion of the same model with other outputs."""

    graph: Graph
    rendered: RenderedModel


ConvertWithOutputs = Callable[[list[str]], ConvertedOutputs]


@dataclass
class LayerError:
    """How one intermediate value of the converted network compares with onnxruntime's."""

    value: str
    node: str
    op_type: str
    scope: str
    max_abs_error: float
    relative_error: float
    ok: bool
    computed: np.ndarray | None = field(default=None, repr=False)  # MindSpore's, when it diverges
    line: int = 0  # where the generated script computes it (0: not found)
    code: str = ""

    def describe(self) -> str:
        scope = f", scope '{self.scope}'" if self.scope else ""
        where = f", generated line {self.line}: {self.code}" if self.line else ""
        return one_line(
            f"node '{self.node}' ({self.op_type}{scope}) output '{self.value}': "
            f"rel {self.relative_error:.2e} (abs {self.max_abs_error:.2e}){where}",
            400,
        )


def traceable_values(graph: Graph, mapped, reference: onnx.ModelProto) -> list[tuple[str, object]]:
    """(value, node) for each float value a converted node computes that the source model
    computes too, in graph order."""
    source_values = {out for node in reference.graph.node for out in node.output if out}
    found = []
    for item in mapped:
        if not item.converted:
            continue
        for out in item.node.outputs:
            dtype = graph.dtypes.get(out)
            if out in source_values and dtype is not None and dtype.kind == "f":
                found.append((out, item.node))
    return found


def layer_errors(
    graph: Graph,
    mapped,
    reference: onnx.ModelProto,
    convert_with_outputs: ConvertWithOutputs,
    shapes: dict[str, tuple[int, ...]],
    tolerance: float,
) -> list[LayerError]:
    """Per intermediate value, in graph order, the error of the converted network."""
    traced = traceable_values(graph, mapped, reference)
    wanted = list(dict.fromkeys([value for value, _ in traced] + list(graph.outputs)))
    cut = convert_with_outputs(wanted)
    cut_graph, cut_rendered = cut.graph, cut.rendered
    if cut_rendered.unconverted or list(cut_graph.outputs) != wanted:
        return []
    inputs = random_inputs(cut_graph, 0, shapes)
    feeds = in_reference_dtypes(reference, dict(zip(cut_graph.inputs, inputs)))
    with_outputs = onnx.ModelProto()
    with_outputs.CopyFrom(reference)
    declared = {out.name for out in with_outputs.graph.output}
    for value in wanted:
        if value not in declared:
            with_outputs.graph.output.append(onnx.ValueInfoProto(name=value))
    expected = run_onnxruntime(with_outputs, feeds, wanted, graph.store)
    with tempfile.TemporaryDirectory(prefix="mindconverter-layers-") as folder:
        script, checkpoint = Path(folder) / "traced.py", Path(folder) / "traced.ckpt"
        script.write_text(cut_rendered.code)
        parameters = [(entry.name, entry.array) for entry in cut_rendered.entries]
        with open(checkpoint, "wb") as stream:
            write_checkpoint(stream, parameters)
        actual = run_mindspore(script, checkpoint, inputs)
    rows = compare_outputs(wanted, actual, expected, tolerance)
    by_value = {row.name: row for row in rows}
    computed = dict(zip(wanted, actual))
    errors = [
        LayerError(
            value,
            node.name or node.op_type,
            node.op_type,
            module_path(node),
            by_value[value].max_abs_error,
            by_value[value].relative_error,
            by_value[value].ok,
        )
        for value, node in traced
    ]
    diverging = first_divergence(errors)
    if diverging is not None:
        diverging.computed = np.asarray(computed[diverging.value])
    return errors


def locate_line(script: Path, checkpoint: Path, inputs: list[np.ndarray], row: LayerError) -> None:
    """Find the line of ``script`` whose result is the diverging value: the network runs once
    (PYNATIVE) while a tracer compares each new local of the script's frames with the value the
    diagnostic run computed; sets ``row.line`` and ``row.code``."""
    import mindspore as ms

    target = row.computed
    if target is None:
        return
    ms.set_context(mode=ms.PYNATIVE_MODE)
    network = build_network(script, checkpoint)
    filename = str(Path(script))
    found: list[int] = []
    held: dict[int, dict[str, object]] = {}  # per frame: what each local held at the last event
    previous: dict[int, int] = {}  # per frame: the line that ran last

    def check(frame) -> None:
        before = held.setdefault(id(frame), {})
        for name, value in list(frame.f_locals.items()):
            if before.get(name) is value:
                continue  # unchanged since the last line (references kept: ids are not reused)
            before[name] = value
            if found or not isinstance(value, ms.Tensor) or tuple(value.shape) != target.shape:
                continue
            if np.array_equal(value.asnumpy(), target):
                found.append(previous.get(id(frame), frame.f_lineno))

    def local(frame, event, arg):
        if event in ("line", "return") and not found:
            check(frame)
            previous[id(frame)] = frame.f_lineno
        return local

    def tracer(frame, event, arg):
        return local if frame.f_code.co_filename == filename else None

    sys.settrace(tracer)
    try:
        network(*[ms.Tensor(array) for array in inputs])
    except Exception:  # noqa: BLE001 - the line search is a hint; a failing run gives none
        pass
    finally:
        sys.settrace(None)
    if found:
        row.line = found[0]
        lines = Path(script).read_text().splitlines()
        row.code = one_line(lines[row.line - 1].strip(), 160) if row.line <= len(lines) else ""


def first_divergence(errors: list[LayerError]) -> LayerError | None:
    """The first value in graph order beyond the tolerance."""
    return next((row for row in errors if not row.ok), None)


__all__ = ["LayerError", "first_divergence", "layer_errors", "locate_line", "traceable_values"]
