"""The ordered list of passes from a loaded model to a mapped graph with its module tree.

Every pass is a function ``run(graph, context) -> bool`` (whether it changed the graph) in a
module of its own; :data:`PIPELINE` is the order they run in, and :func:`run_passes` runs it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..graph import Graph
from . import (
    batch_first_heads,
    bfloat16_compute,
    bounded_sizes,
    check_graph,
    dead_nodes,
    einsum_products,
    fix_shapes,
    fold_constants,
    fuse_attention,
    infer_shapes,
    inline_ifs,
    keep_reference,
    lift_masks,
    lift_patterns,
    lift_shape_arithmetic,
    map_operators,
    optimize,
    recover_hierarchy,
    report_pinned_dims,
    rotary_heads_first,
    select_io,
    tidy,
    to_float32,
    unroll_loops,
)
from .context import PassContext

PassFn = Callable[[Graph, PassContext], bool]


@dataclass(frozen=True)
class Pass:
    """One named step of the pipeline."""

    name: str
    run: PassFn

    def apply(self, graph: Graph, context: PassContext) -> bool:
        return bool(self.run(graph, context))


@dataclass(frozen=True)
class UntilSettled:
    """Passes repeated, in order, until a round changes nothing; after a round that changed the
    graph, the ``tidy`` passes run before the next round."""

    name: str
    passes: tuple[PassFn, ...]
    tidy: tuple[PassFn, ...] = ()
    max_rounds: int = 500

    def apply(self, graph: Graph, context: PassContext) -> bool:
        changed_any = False
        for _ in range(self.max_rounds):
            changed = [bool(run(graph, context)) for run in self.passes]
            if not any(changed):
                break
            changed_any = True
            for run in self.tidy:
                run(graph, context)
        return changed_any


Step = Pass | UntilSettled

SIMPLIFY: tuple[Step, ...] = (
    Pass("infer shapes", infer_shapes.run),
    UntilSettled(
        "fold constants, inline constant Ifs and unroll loops until settled",
        passes=(fold_constants.run, inline_ifs.run, unroll_loops.run),
        tidy=(dead_nodes.run_unused_initializers, infer_shapes.run),
    ),
    Pass("tidy with onnxoptimizer", optimize.run),
    Pass("remove dead nodes", dead_nodes.run),
    Pass("infer shapes", infer_shapes.run),
)

PIPELINE: tuple[Step, ...] = (
    Pass("select inputs and outputs", select_io.run),
    Pass("keep the source model for verification", keep_reference.run),
    Pass("fix input shapes", fix_shapes.run),
    Pass("widen half precision to float32 (on request)", to_float32.run),
    *SIMPLIFY,
    Pass("say which dynamic dimensions the model pins", report_pinned_dims.run),
    Pass("compute bfloat16 in float32 where MindSpore has no kernel", bfloat16_compute.run),
    # no-ops first: an empty concatenation the exporter left between a query's rotary and the
    # key's (Phi-3) would keep the two from being written as one apply_rotary_pos_emb call
    Pass("drop empty parts of concatenations", tidy.run_empty_parts),
    Pass("write matrix-product Einsums as MatMul", einsum_products.run),
    Pass("lift decomposed layers", lift_patterns.run),
    Pass("turn rotary embeddings heads-first", rotary_heads_first.run),
    Pass("write sequence-first attention batch-first", batch_first_heads.run),
    Pass("fuse scaled dot-product attention", fuse_attention.run),
    Pass("index padding masks as mask[:, None, None, :]", lift_masks.run),
    Pass("drop min() of sizes with the table they index", bounded_sizes.run),
    Pass("collapse shape arithmetic on dynamic dimensions", lift_shape_arithmetic.run),
    Pass("remove no-ops and compute repeated nodes once", tidy.run),
    Pass("check the graph", check_graph.run),
    Pass("map operators", map_operators.run),
    Pass("recover the module hierarchy", recover_hierarchy.run),
)


def run_passes(graph: Graph, context: PassContext, steps: Sequence[Step] = PIPELINE) -> None:
    """Run ``steps`` (the whole pipeline by default) on ``graph`` in order."""
    for step in steps:
        with context.progress.stage(step.name):
            step.apply(graph, context)
