"""Readers of a value that only take its sizes for nodes about to be removed.

A pattern that replaces a node often finds the value it reads also read by a ``Shape`` whose
sizes, through a little arithmetic, only build that node's other inputs (TorchScript sizes a
``flatten(-2)`` from the flattened value; dynamo builds the key transpose's targets from the
key's shape). Once the node goes, so do they; any other reader keeps the pattern from matching.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

import onnx


def size_readers(
    name: str,
    reader: onnx.NodeProto,
    readers_of: Callable[[str], Iterable[onnx.NodeProto]],
    pinned: Collection[str],
    ends: Collection[int],
    operators: Collection[str],
) -> list[onnx.NodeProto] | None:
    """The nodes besides ``reader`` that read ``name`` only for its sizes: ``Shape`` nodes and
    the ``operators`` their results flow through until nodes in ``ends`` (by id; ``reader`` is
    always one). None when ``reader`` does not read ``name``, a value on the way is ``pinned``
    (a network output), or anything else reads ``name`` or those sizes."""
    readers = list(readers_of(name))
    others = [node for node in readers if node is not reader]
    if name in pinned or len(others) == len(readers):
        return None
    if any(node.op_type != "Shape" for node in others):
        return None
    found: dict[int, onnx.NodeProto] = {}
    pending = list(others)
    while pending:
        node = pending.pop()
        if id(node) in found or node is reader or id(node) in ends:
            continue
        if node.op_type not in operators or node.domain not in ("", "ai.onnx"):
            return None
        if any(out in pinned for out in node.output):
            return None
        found[id(node)] = node
        pending += [n for out in node.output for n in readers_of(out)]
    return list(found.values())
