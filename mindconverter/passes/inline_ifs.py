"""Pass: replace each ``If`` with a constant condition by the branch it takes."""

from __future__ import annotations

import onnx
from onnx import helper, numpy_helper

from ..graph import Graph
from ..graph.weight_store import is_held
from .context import PassContext


def inline_constant_ifs(model: onnx.ModelProto) -> bool:
    """Replace each ``If`` whose condition is a known constant by the branch it takes.

    The branch's nodes keep their names (nested subgraphs may read them from the outer scope,
    which is why onnxoptimizer's renaming eliminate_if_with_const_cond is not used); each branch
    output becomes an Identity onto the If's output.
    """
    graph = model.graph
    inits = {init.name: init for init in graph.initializer}
    nodes, changed = [], False
    for node in graph.node:
        cond = inits.get(node.input[0]) if node.op_type == "If" and node.input else None
        if cond is None or is_held(cond) or node.domain not in ("", "ai.onnx"):
            nodes.append(node)
            continue
        value = numpy_helper.to_array(cond)
        if value.size != 1:
            nodes.append(node)
            continue
        branch_name = "then_branch" if bool(value.reshape(-1)[0]) else "else_branch"
        branch = next(attr.g for attr in node.attribute if attr.name == branch_name)
        nodes.extend(branch.node)
        for init in branch.initializer:
            graph.initializer.append(init)
        for source, target in zip(branch.output, node.output):
            if target:
                nodes.append(
                    helper.make_node(
                        "Identity", [source.name], [target], name=f"{node.name}/{target}"
                    )
                )
        changed = True
    if changed:
        del graph.node[:]
        graph.node.extend(nodes)
    return changed


def run(graph: Graph, context: PassContext) -> bool:
    """Inline every ``If`` whose condition is a known constant."""
    changed = inline_constant_ifs(graph.model)
    if changed:
        graph.edited()
    return changed
