"""Mapped expressions in the form a person would write, just before they are rendered.

Each rewrite keeps the numbers: a scalar constant beside a tensor becomes a Python number
(``x * 0.5``, ``ops.where(mask, x, 0.0)``), a ``Gather`` of one constant index becomes
indexing (``x[:, 0]``), and a ``nn.LayerNorm`` over the last axis drops the axes that tie it to
one input rank.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ..graph import Graph
from ..mappers.base import BinOp, Call, Cell, Const, Input, Item, Lit, MappedNode, Noted, Outputs

# dtypes a Python number stands for beside a tensor of the same dtype (MindSpore keeps the
# tensor's dtype); float64 is left out, as literals are written at float32 precision
_NUMBER_DTYPES = {"float16", "float32", "int32", "int64"}
_ARITHMETIC = {"+", "-", "*", "/", "**", "<", ">", "<=", ">=", "==", "!="}


_BFLOAT16_NOTE = "no bfloat16 kernel in MindSpore for this operator: computed in float32"


def tidy_expressions(graph: Graph, mapped: list[MappedNode]) -> None:
    """Rewrite the mapped nodes' results in place."""
    _cancel_squeezed_expansions(graph, mapped)
    for item in mapped:
        if item.converted and item.result is not None:
            item.result = _tidy(graph, item, item.result)
            if _takes_everything(item.result):  # x[:] (Phi-3's rotary part of a full head)
                item.result = item.result.value
            if _widens_bfloat16(graph, item) and isinstance(item.result, Call):
                item.result = Noted(item.result, _BFLOAT16_NOTE)


def _cancel_squeezed_expansions(graph: Graph, mapped: list[MappedNode]) -> None:
    """A result a mapper gave an axis ONNX has (an LSTM's output: its directions axis) that
    the next node squeezes away again: neither is written (``ops.expand_dims`` then
    ``ops.squeeze`` of the same axis)."""
    producer = {
        name: (item, index)
        for item in mapped
        if item.converted and isinstance(item.result, Outputs)
        for index, name in enumerate(item.node.outputs)
        if name
    }
    for item in mapped:
        squeezed = item.result
        if not (item.converted and item.node.op_type == "Squeeze" and item.node.inputs):
            continue
        if not (_is_call(squeezed, "ops.squeeze") and squeezed.args[:1] == [Input(0)]):
            continue
        source = producer.get(item.node.inputs[0])
        if source is None or len(graph.consumer_nodes.get(item.node.inputs[0], [])) != 1:
            continue
        if item.node.inputs[0] in graph.outputs:
            continue
        made, index = source
        expanded = made.result.exprs[index]
        if not (_is_call(expanded, "ops.expand_dims") and len(expanded.args) == 2):
            continue
        axis = squeezed.kwargs.get("axis", squeezed.args[1] if len(squeezed.args) > 1 else None)
        if not (isinstance(axis, Lit) and axis == expanded.args[1]):
            continue
        made.result.exprs[index] = expanded.args[0]
        item.result = Input(0)


def _is_call(expr: Any, func: str) -> bool:
    return isinstance(expr, Call) and expr.func == func


def _takes_everything(expr: Any) -> bool:
    """An index of the node's input that keeps every element (``x[:]``, ``x[:, :]``)."""
    if not isinstance(expr, Item) or not isinstance(expr.value, Input):
        return False
    parts = expr.index if isinstance(expr.index, tuple) else (expr.index,)
    return bool(parts) and all(p == slice(None) for p in parts)


def _widens_bfloat16(graph: Graph, item: MappedNode) -> bool:
    """A cast to float32 the bfloat16 pass put before an operator MindSpore cannot compute in
    bfloat16 (passes/bfloat16_compute.py names them ``.../to_float32``)."""
    node = item.node
    return (
        node.op_type == "Cast"
        and node.name.endswith("/to_float32")
        and bool(node.inputs)
        and getattr(graph.dtypes.get(node.inputs[0]), "name", "") == "bfloat16"
    )


def _tidy(graph: Graph, item: MappedNode, expr: Any) -> Any:
    if isinstance(expr, BinOp) and expr.op in _ARITHMETIC:
        left, right = _tidy(graph, item, expr.left), _tidy(graph, item, expr.right)
        left_number, right_number = _number(graph, item, left), _number(graph, item, right)
        if right_number is not None and left_number is None and _rank_kept(graph, item, right):
            right = Lit(right_number)
        elif left_number is not None and right_number is None and _rank_kept(graph, item, left):
            left = Lit(left_number)
        return replace(expr, left=left, right=right)
    if isinstance(expr, Call):
        args = [_tidy(graph, item, arg) for arg in expr.args]
        if expr.func == "ops.where" and len(args) == 3:
            return replace(expr, args=[args[0], *_where_branches(graph, item, args[1:])])
        if expr.func == "ops.gather" and len(args) == 3:
            return _constant_gather(graph, item, expr, args)
        if expr.func == "ops.gather_nd" and len(args) == 2:
            return _leading_gather_nd(graph, item, expr, args)
        return replace(expr, args=args)
    if isinstance(expr, Cell) and expr.cls == "nn.LayerNorm":
        return _last_axis_layer_norm(expr)
    return expr


def _constant(graph: Graph, item: MappedNode, expr: Any) -> np.ndarray | None:
    if isinstance(expr, Const):
        return np.asarray(expr.array)
    if isinstance(expr, Input) and expr.index < len(item.node.inputs):
        return graph.constant(item.node.inputs[expr.index])
    return None


def _number(graph: Graph, item: MappedNode, expr: Any) -> int | float | None:
    """The Python number a one-element constant operand stands for, if it may be written so."""
    value = _constant(graph, item, expr)
    if value is None or value.size != 1 or value.dtype.name not in _NUMBER_DTYPES:
        return None
    number = value.reshape(()).item()
    if isinstance(number, float) and np.isnan(number):
        return None  # kept a tensor: no Python literal reads as NaN at a glance
    return number


def _rank_kept(graph: Graph, item: MappedNode, constant: Any) -> bool:
    """Whether the result's rank stays without the constant operand's own dimensions."""
    value = _constant(graph, item, constant)
    if value is None or value.ndim == 0:
        return True
    out = graph.symbolic_shapes.get(item.node.outputs[0]) if item.node.outputs else None
    others = [
        graph.symbolic_shapes.get(name)
        for name in item.node.inputs
        if name and graph.constant(name) is None
    ]
    ranks = [len(shape) for shape in others if shape is not None]
    if out is None or not others or len(ranks) != len(others):
        return False
    return max(ranks) == len(out)


def _where_branches(graph: Graph, item: MappedNode, branches: list) -> list:
    """Scalar branches as numbers: beside a tensor branch, or both when float32 (what MindSpore
    makes of two Python floats)."""
    numbers = [_number(graph, item, branch) for branch in branches]
    values = [_constant(graph, item, branch) for branch in branches]
    both = all(n is not None for n in numbers)
    if both and not all(
        v is not None and v.dtype == np.float32 and isinstance(n, float)
        for v, n in zip(values, numbers)
    ):
        return branches
    return [
        Lit(number) if number is not None and _rank_kept(graph, item, branch) else branch
        for branch, number in zip(branches, numbers)
    ]


def _constant_gather(graph: Graph, item: MappedNode, call: Call, args: list) -> Any:
    """``ops.gather(x, <one index>, axis)`` as ``x[:, index]``; a run of consecutive indices
    (Falcon's key head out of its fused projection, ``[2]``) as the slice ``x[:, 2:3]``."""
    index, axis = _constant(graph, item, args[1]), args[2]
    if isinstance(args[1], BinOp) and args[1].op == "%":
        # a constant index wrapped by a dynamic axis' size (``-1 % seq_len``): a subscript
        # wraps a negative index itself
        index = _constant(graph, item, args[1].left)
    axis = axis.value if isinstance(axis, Lit) else axis
    if (
        index is None
        or index.ndim > 1
        or index.dtype.kind not in "iu"
        or not isinstance(axis, int)
        or isinstance(axis, bool)
    ):
        return replace(call, args=args)
    if index.ndim == 0:
        return Item(args[0], (slice(None),) * axis + (int(index),) if axis else int(index))
    run = _consecutive(index.tolist())
    if run is None:
        return replace(call, args=args)
    return Item(args[0], (slice(None),) * axis + (run,) if axis else run)


def _leading_gather_nd(graph: Graph, item: MappedNode, call: Call, args: list) -> Any:
    """``ops.gather_nd(x, [[2]])``, consecutive indices into the first axis (dynamo's spelling
    of ``x[:, :, [2]]`` after moving that axis first), as the slice ``x[2:3]``."""
    index = _constant(graph, item, args[1])
    if index is None or index.ndim != 2 or index.shape[1] != 1 or index.dtype.kind not in "iu":
        return replace(call, args=args)
    run = _consecutive(index[:, 0].tolist())
    return replace(call, args=args) if run is None else Item(args[0], run)


def _consecutive(values: list[int]) -> slice | None:
    """``values`` as a slice when they count up by one, all at or all below zero."""
    if not values or any(b != a + 1 for a, b in zip(values, values[1:])):
        return None
    start, stop = values[0], values[-1] + 1
    if start < 0 <= values[-1]:
        return None
    return slice(start or None, None if stop == 0 else stop)


def _last_axis_layer_norm(cell: Cell) -> Cell:
    """``nn.LayerNorm((dim,), epsilon=...)`` for a norm over the last axis, at any input rank."""
    shape = cell.kwargs.get("normalized_shape")
    if not isinstance(shape, tuple) or len(shape) != 1:
        return cell
    kwargs = {
        k: v for k, v in cell.kwargs.items() if k not in ("begin_norm_axis", "begin_params_axis")
    }
    return replace(cell, kwargs=kwargs)
