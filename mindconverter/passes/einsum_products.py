"""Pass: write an Einsum that is a batched matrix product as the MatMul it is.

Models written with ``torch.einsum`` (CvT's ``"bhlk,bhtk->bhlt"`` scores, its
``"bhlt,bhtv->bhlv"`` context) reach ONNX as Einsum nodes. Two forms are plain batched matrix
products: ``P i k, P k j -> P i j`` is ``a @ b`` and ``P i k, P j k -> P i j`` is
``a @ bᵀ``, where ``P`` is the same batch letters (or ``...``) in the same order in both
operands and the result. Written as MatMul (and a Transpose of the last two axes of ``b``),
the attention around them is recognised as attention and written as people write it, and a
plain product reads ``ops.matmul``. Any other equation stays an Einsum.
"""

from __future__ import annotations

import onnx
from onnx import helper

from ..graph import Graph
from ..graph.graph import claim_name, declare_permuted
from ..graph.node import attribute_value
from ..graph.subgraphs import subgraph_references
from .context import PassContext


def run(graph: Graph, context: PassContext) -> bool:
    """Replace each matrix-product Einsum by MatMul, with the Transpose of ``b`` it needs."""
    pinned = subgraph_references(graph.model.graph)
    nodes = graph.model.graph.node
    taken = graph.node_names() | graph.value_names()
    rewritten = 0
    for index in range(len(nodes) - 1, -1, -1):
        node = nodes[index]
        if node.op_type != "Einsum" or node.domain not in ("", "ai.onnx") or len(node.input) != 2:
            continue
        form = product_form(_equation(node))
        rank = graph.dims(node.input[1])
        if form is None or node.output[0] in pinned or (form == "a @ b.T" and rank is None):
            continue
        turned_rank = len(rank) if form == "a @ b.T" and rank else 0
        replacement = _as_matmul(graph, node, taken, turned_rank)
        nodes.remove(node)
        for offset, new in enumerate(replacement):
            nodes.insert(index + offset, new)
        rewritten += 1
    if rewritten:
        graph.edited()
        context.say(f"Einsums written as matrix products: {rewritten}")
    return bool(rewritten)


def _equation(node: onnx.NodeProto) -> str:
    for attribute in node.attribute:
        if attribute.name == "equation":
            return str(attribute_value(attribute))
    return ""


def product_form(equation: str) -> str | None:
    """``"a @ b"`` or ``"a @ b.T"`` when the two-operand ``equation`` is that batched matrix
    product, else None."""
    equation = equation.replace(" ", "")
    if equation.count("->") != 1:
        return None
    inputs, result = equation.split("->")
    terms = inputs.split(",")
    if len(terms) != 2:
        return None
    split = [_batch_and_matrix(term) for term in (*terms, result)]
    if any(part is None for part in split):
        return None
    (batch, (i, k)), (batch_b, (p, q)), (batch_out, (r, s)) = split  # type: ignore[misc]
    if not batch == batch_b == batch_out or r != i:
        return None
    if p == k and s == q:
        form, j = "a @ b", q
    elif q == k and s == p:
        form, j = "a @ b.T", p
    else:
        return None
    if len({i, j, k}) != 3 or {i, j, k} & set(batch):
        return None
    return form


def _batch_and_matrix(term: str) -> tuple[str, tuple[str, str]] | None:
    """A term's batch letters and its last two letters; None unless every letter is a distinct
    lowercase or uppercase letter and ``...`` (if any) leads."""
    body = term[3:] if term.startswith("...") else term
    if len(body) < 2 or not body.isalpha() or len(set(body)) != len(body):
        return None
    return term[: len(term) - 2], (body[-2], body[-1])


def _as_matmul(
    graph: Graph, einsum: onnx.NodeProto, taken: set[str], turned_rank: int
) -> list[onnx.NodeProto]:
    """The MatMul that replaces ``einsum`` under its name and scope, after a Transpose of the
    last two axes of its second operand when ``turned_rank`` (that operand's rank) is given."""
    a, b = einsum.input
    new: list[onnx.NodeProto] = []
    if turned_rank:
        turned = claim_name(taken, f"{b}_transposed")
        perm = [*range(turned_rank - 2), turned_rank - 1, turned_rank - 2]
        name = claim_name(taken, f"{einsum.name}_transpose")
        new.append(helper.make_node("Transpose", [b], [turned], name=name, perm=perm))
        declare_permuted(graph.model.graph, b, turned, perm)
        b = turned
    new.append(helper.make_node("MatMul", [a, b], list(einsum.output), name=einsum.name))
    for node in new:
        for entry in einsum.metadata_props:
            node.metadata_props.add().CopyFrom(entry)
    return new
