"""Pass: check --input_nodes/--output_nodes and cut the graph to them."""

from __future__ import annotations

import difflib

import onnx
from onnx import shape_inference

from ..errors import make_error
from ..graph import Graph
from ..graph.specs import detect_inputs, detect_outputs
from .context import PassContext


def _close_names(name: str, candidates: list[str]) -> str:
    close = difflib.get_close_matches(name, candidates, n=3)
    pool = close or candidates[:8]
    more = "" if close or len(candidates) <= 8 else f" (and {len(candidates) - 8} more)"
    return ", ".join(repr(c) for c in pool) + more


def _check_names(
    names: list[str],
    known: list[str],
    option: str,
    hint_pool: list[str],
    weights: frozenset = frozenset(),
) -> None:
    seen = set()
    for name in names:
        if name in seen:
            raise make_error("DUPLICATE_NODE", f"'{name}' appears twice in {option}.")
        seen.add(name)
        if name in weights and name not in known:
            raise make_error(
                "UNKNOWN_NODE",
                f"{option} names '{name}', which is a stored weight, not a graph value; "
                f"candidates: {_close_names(name, hint_pool)}.",
            )
        if name not in known:
            raise make_error(
                "UNKNOWN_NODE",
                f"{option} names '{name}', which is not in the model; candidates: "
                f"{_close_names(name, hint_pool)}.",
            )


def all_value_names(model: onnx.ModelProto) -> list[str]:
    """Names of every graph input and node output, in graph order."""
    names = [inp.name for inp in model.graph.input]
    for node in model.graph.node:
        names.extend(out for out in node.output if out)
    return names


def select_inputs_outputs(
    model: onnx.ModelProto, input_nodes: list[str] | None, output_nodes: list[str] | None
) -> onnx.ModelProto:
    """Validate --input_nodes/--output_nodes and cut the graph to them when they differ."""
    inputs = [spec.name for spec in detect_inputs(model)]
    outputs = [spec.name for spec in detect_outputs(model)]
    known = all_value_names(model)
    weights = frozenset(init.name for init in model.graph.initializer)
    if input_nodes:
        _check_names(
            input_nodes,
            known,
            "--input_nodes",
            inputs + [n for n in known if n not in inputs],
            weights,
        )
    if output_nodes:
        _check_names(
            output_nodes,
            known,
            "--output_nodes",
            outputs + [n for n in known if n not in outputs],
            weights,
        )
    wanted_inputs = list(input_nodes) if input_nodes else inputs
    wanted_outputs = list(output_nodes) if output_nodes else outputs
    if set(wanted_inputs) == set(inputs) and wanted_outputs == outputs:
        if wanted_inputs != inputs:  # same inputs, user's order
            by_name = {inp.name: inp for inp in model.graph.input}
            weights = [inp for inp in model.graph.input if inp.name not in set(inputs)]
            ordered = [by_name[name] for name in wanted_inputs]
            del model.graph.input[:]
            model.graph.input.extend(ordered + weights)
        return model
    try:
        inferred = shape_inference.infer_shapes(model, strict_mode=False)
        return onnx.utils.Extractor(inferred).extract_model(wanted_inputs, wanted_outputs)
    except Exception as exc:  # onnx raises bare exceptions when a cut is impossible
        raise make_error(
            "UNKNOWN_NODE",
            f"Cannot cut the graph between {wanted_inputs} and {wanted_outputs}: {exc}",
        ) from None


def run(graph: Graph, context: PassContext) -> bool:
    """Cut the graph to the chosen inputs and outputs and record what they are."""
    model = select_inputs_outputs(graph.model, context.input_nodes, context.output_nodes)
    if model is not graph.model:
        graph.replace_model(model)
    else:
        graph.edited()
    context.input_specs, context.output_specs = detect_inputs(model), detect_outputs(model)
    context.say("Detected inputs:  " + "; ".join(spec.describe() for spec in context.input_specs))
    context.say("Detected outputs: " + "; ".join(s.describe() for s in context.output_specs))
    return True
