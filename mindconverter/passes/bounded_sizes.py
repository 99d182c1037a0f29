"""Pass: a length that indexes a table is at most the table's length, so ``min(64, seq)`` is
``seq``.

The dynamo exporter knows the length of ``bias[:, :, :seq]`` over a buffer of 64 rows only as
``min(64, seq)`` and writes that into every size computed from it (GPT-Neo's attention reshapes
its heads to ``(batch, min(64, seq), 2, 16)`` in one layer and ``(batch, seq, 2, 16)`` in the
next, so the two layers read as two classes). Yet the same network looks positions
``arange(seq)`` up in a position table of 64 rows: every input it accepts has ``seq <= 64``.
This pass finds such lookups (a ``Range(0, n, 1)``, through views, as the indices of a Gather
on axis 0 of a weight of ``N`` rows: ``n <= N``) and writes ``min(M, n)`` as ``n`` in the
symbolic sizes wherever ``M >= N``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Graph
from .context import PassContext

_VIEWS = ("Unsqueeze", "Reshape", "Squeeze", "Expand", "Cast", "Identity")


def run(graph: Graph, context: PassContext) -> bool:
    """Drop ``min`` with a table's length from sizes whose length indexes that table."""
    if not graph.symbolic_values:
        return False
    bounds = _indexed_lengths(graph)
    if not bounds:
        return False
    changed = 0
    for name, value in list(graph.symbolic_values.items()):
        simpler = _without_needless_min(value, bounds)
        if simpler != value:
            graph.symbolic_values[name] = simpler
            changed += 1
    if changed:
        context.say(f"Sizes bounded by the tables they index: {changed}")
    return bool(changed)


def _indexed_lengths(graph: Graph) -> dict[Any, int]:
    """``{n: N}`` for each symbolic length ``n`` whose ``arange(n)`` indexes ``N`` table rows."""
    readers = graph.consumer_nodes
    bounds: dict[Any, int] = {}
    for node in graph.model.graph.node:
        if node.op_type != "Range" or node.domain not in ("", "ai.onnx"):
            continue
        start, limit, delta = (_scalar(graph, name) for name in node.input)
        if start != 0 or delta != 1 or limit is None or isinstance(limit, int):
            continue
        for rows in _table_rows(graph, readers, node.output[0]):
            bounds[limit] = min(rows, bounds.get(limit, rows))
    return bounds


def _scalar(graph: Graph, name: str):
    """The value of a one-element size: an int, a symbolic expression, or None."""
    constant = graph.constant(name)
    if constant is not None:  # an integer size; a float Range (NaN included) bounds nothing
        integral = constant.size == 1 and constant.dtype.kind in "iu"
        return int(constant.reshape(-1)[0]) if integral else None
    value = graph.symbolic_values.get(name)
    if isinstance(value, tuple):
        value = value[0] if len(value) == 1 else None
    return value


def _table_rows(graph: Graph, readers: dict, indices: str, depth: int = 4) -> list[int]:
    """Row counts of the weights that ``indices`` (through views) looks rows up in."""
    rows = []
    for reader in readers.get(indices, []):
        if reader.op_type in _VIEWS and reader.input[0] == indices and depth:
            rows += _table_rows(graph, readers, reader.output[0], depth - 1)
        elif reader.op_type == "Gather" and list(reader.input[1:]) == [indices]:
            axis = next((a.i for a in reader.attribute if a.name == "axis"), 0)
            table = graph.initializers.get(reader.input[0])
            if axis == 0 and table is not None and table.dims:
                rows.append(int(np.int64(table.dims[0])))
    return rows


def _without_needless_min(value, bounds: dict[Any, int]):
    """``value`` with every ``Min(M, n)`` where ``n <= N <= M`` replaced by ``n``."""
    if isinstance(value, tuple):
        return tuple(_without_needless_min(item, bounds) for item in value)
    if isinstance(value, int) or not hasattr(value, "replace"):
        return value
    import sympy

    def needless(expr) -> bool:
        if not isinstance(expr, sympy.Min) or len(expr.args) != 2:
            return False
        numbers = [a for a in expr.args if a.is_Integer]
        others = [a for a in expr.args if not a.is_Integer]
        if len(numbers) != 1 or len(others) != 1:
            return False
        bound = bounds.get(others[0])
        return bound is not None and bound <= int(numbers[0])

    def kept(expr):
        return next(a for a in expr.args if not a.is_Integer)

    return value.replace(needless, kept)
