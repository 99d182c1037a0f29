"""Questions about subgraphs (If/Loop/Scan bodies) of a graph's nodes."""

from __future__ import annotations

import onnx


def has_subgraph(node: onnx.NodeProto) -> bool:
    return any(
        attr.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
        for attr in node.attribute
    )


def subgraph_references(graph: onnx.GraphProto) -> set[str]:
    """Names read by the subgraphs (If/Loop/Scan bodies) of ``graph``'s nodes, recursively."""
    names = set()
    for node in graph.node:
        for attr in node.attribute:
            subgraphs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
            for sub in subgraphs:
                names |= {name for n in sub.node for name in n.input}
                names |= subgraph_references(sub)
    return names
