"""Control-flow bodies (If branches, Loop and Scan bodies) converted into cell classes.

A body becomes a model of its own (graph/body_models.py), runs through the whole pipeline with
its dynamic dimensions kept, and is rendered; the script's classes are then renamed under one
stem so they sit beside the network's own classes. Mappers receive :func:`body_converter`'s
function through their node context.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

from ..codegen.expressions import HELPER_CELLS
from ..codegen.script import render_script
from ..graph import Graph
from ..graph.body_models import BodyModel
from ..graph.weight_store import WeightStore
from ..mappers.base import Unsupported, Weight
from ..mappers.registry import MapperRegistry
from ..passes.context import PassContext
from ..passes.pipeline import PIPELINE, run_passes
from ..progress import Progress

# Bodies inside bodies: deeper nesting than this is left unconverted.
MAX_DEPTH = 8


@dataclass(frozen=True)
class BodyCell:
    """A converted body: class definitions (the first is the body's cell, named ``name``),
    the names they need imported, and its parameters by attribute path."""

    name: str
    definition: str
    uses: frozenset[str]
    weights: dict[str, Weight]


def body_converter(
    registry: MapperRegistry, depth: int = 0
) -> Callable[[BodyModel, str, str], BodyCell]:
    """The function mappers call to convert a body into a cell class named ``name`` whose
    docstring starts with ``doc``."""

    def convert_body(body: BodyModel, name: str, doc: str) -> BodyCell:
        if depth >= MAX_DEPTH:
            raise Unsupported(f"control flow nested more than {MAX_DEPTH} levels deep")
        graph = Graph(body.model, WeightStore())
        context = PassContext(
            registry=registry,
            shapes=[(n, s) for n, s in body.example_shapes.items()],
            convert_body=body_converter(registry, depth + 1),
            progress=Progress(),
        )
        run_passes(graph, context, PIPELINE)
        rendered = render_script(graph, context.mapped, context.tree, name)
        if rendered.unconverted:
            first = rendered.unconverted[0]
            raise Unsupported(f"in its body, {first.op_type}: {first.reason}")
        weights = {
            entry.name: Weight(entry.array, entry.source, entry.transform)
            for entry in rendered.entries
        }
        definition, uses = _classes_of(rendered.code, name)
        doc = textwrap.fill(doc, width=92, subsequent_indent="    ")
        definition = definition.replace('"""Converted network.', f'"""{doc}', 1)
        return BodyCell(name, definition, uses, weights)

    return convert_body


def _classes_of(code: str, name: str) -> tuple[str, frozenset[str]]:
    """The script's own classes renamed under ``name`` (``MindSporeModel`` becomes ``name``),
    with the body's cell first; and the names the script imports."""
    uses = {"ms"} if "import mindspore as ms" in code else set()
    if re.search(r"^from mindspore import .*\bops\b", code, re.M):
        uses.add("ops")
    if re.search(r"^from mindspore import .*\bParameter\b", code, re.M):
        uses.add("Parameter")
    if re.search(r"^import math$", code, re.M):
        uses.add("math")
    start = code.index("\n\n\nclass ")
    end = code.find("\n\n\ndef dynamic_inputs")
    end = len(code) if end < 0 else end
    blocks = re.split(r"\n\n\n(?=class )", code[start:end].strip("\n"))
    kept, renames = [], {}
    for block in blocks:
        class_name = re.match(r"class (\w+)", block).group(1)
        if class_name in HELPER_CELLS:  # from a fixed template: shared, never renamed
            uses.add(class_name)
            continue
        renames[class_name] = name if class_name == "MindSporeModel" else f"{name}{class_name}"
        kept.append(block)
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, renames)) + r")\b")
    kept = [pattern.sub(lambda m: renames[m.group(1)], block) for block in kept]
    kept.sort(key=lambda block: not block.startswith(f"class {name}("))
    return "\n\n\n".join(kept), frozenset(uses)
