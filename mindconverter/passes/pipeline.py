"""The ordered list of passes that turns a loaded model into a graph ready for mapping."""

from __future__ import annotations

import onnx

from ..graph.provenance import FoldRecord
from .dead_nodes import remove_dead_nodes, remove_unused_initializers
from .fold_constants import fold_constants
from .infer_shapes import infer_shapes
from .inline_ifs import inline_constant_ifs
from .optimize import run_optimizer
from .unroll_loops import unroll_loops


def simplify(
    model: onnx.ModelProto, max_rounds: int = 500
) -> tuple[onnx.ModelProto, dict[str, FoldRecord]]:
    """Infer shapes and fold constants until nothing changes, then tidy with onnxoptimizer."""
    records: dict[str, FoldRecord] = {}
    model = infer_shapes(model)
    for _ in range(max_rounds):
        folded = fold_constants(model, records)
        if not (inline_constant_ifs(model) or unroll_loops(model) or folded):
            break
        remove_unused_initializers(model)
        model = infer_shapes(model)
    model = run_optimizer(model)
    remove_dead_nodes(model)
    remove_unused_initializers(model)
    model = infer_shapes(model)
    return model, records
