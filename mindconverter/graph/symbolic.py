"""Symbolic shape inference: named dimensions (``batch``, ``seq``) carried through the graph.

onnxruntime ships a symbolic shape inference (``onnxruntime.tools.symbolic_shape_infer``) that
propagates named dimensions with sympy, merges dimensions that must be equal, and, on the way,
computes the value of every small integer tensor that holds shape arithmetic (``Shape`` →
``Gather`` → ``Concat``) as sympy expressions. This module runs it and hands back both: the model
with symbolic ``value_info`` and those values.

Its public entry point writes a temporary file into the working folder when inference is
incomplete, so the loop is driven here instead; any failure means: no symbolic result, and the
caller falls back to ONNX's own shape inference.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from .contrib_shapes import add_contrib_shape_handlers
from .half_precision import FLOAT_TYPES
from .symbolic_merges import make_merges_deterministic
from .symbolic_slice_values import add_slice_values_by_shape
from .symbolic_slices import add_slice_length_check

# Bound on inference rounds (each round re-runs the whole graph after merging symbols).
MAX_ROUNDS = 8
# Bounds on the tool's time: sympy can spend minutes simplifying the size arithmetic of one node
# (torchvision's detection transforms with dynamic height and width). A node over its budget is
# inferred by ONNX's own inference instead; past the total budget the whole result is dropped.
NODE_SECONDS = 2.0
TOTAL_SECONDS = 60.0
INT_MAX = 2**31 - 1

SymbolicValue = Any  # an int, a sympy expression, or a tuple of those (one per element)


@dataclass
class SymbolicInference:
    """A model with symbolic value infos, and the symbolic values of its shape tensors."""

    model: onnx.ModelProto
    values: dict[str, SymbolicValue]


def infer_symbolic(
    model: onnx.ModelProto, sizes: dict[str, int] | None = None
) -> SymbolicInference | None:
    """Run onnxruntime's symbolic shape inference; None when it is unavailable or fails.
    ``sizes`` (named input dimension -> size at the conversion shape) settle the lengths of
    slices whose bounds the tool cannot prove non-negative."""
    try:
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
    except ImportError:  # sympy missing, or an onnxruntime without the tool
        return None
    logger = logging.getLogger("onnxruntime.tools.symbolic_shape_infer")
    level, logger.level = logger.level, logging.CRITICAL  # its warnings would reach the terminal
    try:
        _constants_as_tensors(model)
        inference = SymbolicShapeInference(INT_MAX, True, False, 0)
        deadline = time.monotonic() + TOTAL_SECONDS
        add_contrib_shape_handlers(inference)
        add_slice_length_check(inference, sizes or {})
        add_slice_values_by_shape(inference)
        make_merges_deterministic(inference)
        with _node_alarm() as armed:
            _fall_back_per_node(inference, deadline, armed)
            inference._preprocess(model)
            for _ in range(MAX_ROUNDS):
                if not inference.run_:
                    break
                inference._infer_impl()
        inference._update_output_from_vi()
        values = {name: plain_value(v) for name, v in inference.sympy_data_.items()}
        return SymbolicInference(inference.out_mp_, exact_values(inference.out_mp_, values))
    except Exception:  # noqa: BLE001 - any failure of the tool: fall back to ONNX inference
        return None
    finally:
        logger.level = level


class _OverBudget(Exception):
    """The symbolic inference of one node, or of the whole graph, ran out of time."""


@contextmanager
def _node_alarm() -> Iterator[bool]:
    """Let :func:`_timed` interrupt a node's handler with SIGALRM; yields whether it can (main
    thread only: signals cannot be used elsewhere, where only the total budget applies)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "setitimer"
    ):
        yield False
        return

    def interrupt(signum, frame):
        raise _OverBudget("node")

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        yield True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _timed(handler, node, armed: bool) -> None:
    """Run a handler with the per-node budget armed (when :func:`_node_alarm` could)."""
    if not armed:
        handler(node)
        return
    started = time.monotonic()
    outer, _ = signal.setitimer(signal.ITIMER_REAL, NODE_SECONDS)  # an enclosing node's timer
    try:
        handler(node)
    finally:
        left = outer - (time.monotonic() - started) if outer else 0.0
        signal.setitimer(signal.ITIMER_REAL, max(left, 0.001) if outer else 0.0)


def _fall_back_per_node(inference, deadline: float, armed: bool) -> None:
    """Where the tool's handler for one operator fails (some call helpers newer onnx releases
    dropped, some miss attribute forms) or takes longer than NODE_SECONDS, infer that node with
    ONNX's own inference instead of giving up on the whole graph; past ``deadline`` give up."""
    handlers = getattr(inference, "dispatcher_", None)
    fallback = getattr(inference, "_onnx_infer_single_node", None)
    if not isinstance(handlers, dict) or fallback is None:
        return

    def guarded(handler):
        def infer(node):
            if time.monotonic() > deadline:
                raise _OverBudget("graph")
            try:
                _timed(handler, node, armed)
            except Exception:  # noqa: BLE001 - the tool's handler failed: ONNX's inference
                fallback(node)

        return infer

    for op_type, handler in list(handlers.items()):
        handlers[op_type] = guarded(handler)


_CONSTANT_FORMS = {
    "value_int": np.int64,
    "value_ints": np.int64,
    "value_float": np.float32,
    "value_floats": np.float32,
}


def _constants_as_tensors(model: onnx.ModelProto) -> None:
    """Write ``Constant(value_int(s)/value_float(s))`` in the ``value`` tensor form (same value;
    the symbolic inference reads only that form)."""
    from onnx import helper, numpy_helper

    for node in model.graph.node:
        if node.op_type != "Constant" or node.domain not in ("", "ai.onnx"):
            continue
        for index, attr in enumerate(node.attribute):
            if attr.name in _CONSTANT_FORMS:
                array = np.asarray(helper.get_attribute_value(attr), _CONSTANT_FORMS[attr.name])
                del node.attribute[index]
                node.attribute.append(
                    helper.make_attribute("value", numpy_helper.from_array(array))
                )
                break


def exact_values(model: onnx.ModelProto, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` without those computed by a floating-point division, or from one: the tool
    divides sizes with ``//`` whatever their type, so EnCodec's ``ceil(length / stride)`` read
    as ``length // stride`` and padded the wrong amount."""
    graph = model.graph
    types = {
        info.name: info.type.tensor_type.elem_type
        for info in [*graph.input, *graph.value_info, *graph.output]
    }
    inexact: set[str] = set()
    for node in graph.node:
        known = [out for out in node.output if out in values]
        if not known or node.op_type in ("Shape", "Size"):  # a size reads no values
            continue
        divides = node.op_type == "Div" and any(types.get(out) in FLOAT_TYPES for out in known)
        if divides or any(name in inexact for name in node.input):
            inexact.update(known)
    return {name: value for name, value in values.items() if name not in inexact}


def plain_value(value: Any) -> SymbolicValue:
    """Numpy scalars and sympy integers as ints, lists and arrays as tuples."""
    if isinstance(value, np.ndarray):
        return (
            tuple(plain_value(v) for v in value.tolist())
            if value.ndim
            else plain_value(value.item())
        )
    if isinstance(value, (list, tuple)):
        return tuple(plain_value(v) for v in value)
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if getattr(value, "is_Integer", False):
        return int(value)
    return value


def is_numeric(value: SymbolicValue) -> bool:
    """Whether a symbolic value is fully known (only ints)."""
    if isinstance(value, tuple):
        return all(is_numeric(v) for v in value)
    return isinstance(value, int)


def python_expressible(value: SymbolicValue) -> bool:
    """Whether a symbolic value is written with Python integer arithmetic alone: sums, products,
    integer powers, floor division, ``min`` and ``max`` of named dimensions and integers."""
    if isinstance(value, int):
        return True
    import sympy

    if value.is_Symbol or value.is_Integer:
        return True
    if isinstance(value, (sympy.Add, sympy.Mul)):
        return all(python_expressible(arg) for arg in value.args)
    if isinstance(value, sympy.Pow):
        base, exponent = value.args
        return exponent.is_Integer and int(exponent) > 0 and python_expressible(base)
    if isinstance(value, (sympy.Min, sympy.Max)):  # a slice bound clamped to the axis
        return all(python_expressible(arg) for arg in value.args)
    if isinstance(value, sympy.floor):
        inner = value.args[0]
        numerator, denominator = inner.as_numer_denom()
        return python_expressible(numerator) and python_expressible(denominator)
    return False


class DynamicDimensionError(Exception):
    """A mapper computed with a dimension that stays dynamic (it must not become a literal)."""


class DynamicDim:
    """A named dimension of a value's shape whose size is only known at run time.

    It equals the same name and no size (a dynamic dimension is never assumed to be, say, 0 or 1),
    and refuses arithmetic, ordering and conversion to int, so code that would bake a size into
    the network fails loudly instead.
    """

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"DynamicDim({self.name!r})"

    def __str__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DynamicDim) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("DynamicDim", self.name))

    def _refuse(self, *args: object) -> None:
        raise DynamicDimensionError(f"computes with dynamic dimension '{self.name}'")

    __int__ = __index__ = __float__ = __bool__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __floordiv__ = __rfloordiv__ = __truediv__ = __rtruediv__ = __mod__ = __rmod__ = _refuse
    __lt__ = __le__ = __gt__ = __ge__ = __neg__ = _refuse


def whole_dimensions(graph, items, candidates: list[str], parts: bool = True) -> tuple[list, dict]:
    """``items`` with each expression that is a whole dimension of a candidate tensor (the
    sequence length after a feature extractor, ``(n // 5 - 1) // 2``), or a product of such
    (a flattened patch grid), replaced by symbols of their own, and where each such symbol is
    read: ``hidden_states.shape[1]``, not the formula over the network input (which would pass
    that input down to every block)."""
    whole: dict[str, tuple[str, int]] = {}
    # the new symbols' names must not be a dimension name of the model's own
    taken = {str(s) for item in items if not isinstance(item, int) for s in item.free_symbols}
    result = [_read_whole(graph, item, candidates, whole, taken, parts) for item in items]
    return result, whole


def _read_whole(graph, item, candidates: list[str], whole: dict, taken: set[str], parts: bool):
    """``item`` with whole dimensions (up to an offset) read as symbols recorded in ``whole``;
    with ``parts``, also the whole dimensions it is a sum, product or min/max of."""
    import sympy

    if isinstance(item, int) or item.is_Integer:
        return item
    if item.is_Symbol:
        return _read_as_part(graph, item, candidates, whole, taken) if parts else item
    found, offset = _dimension_near(graph, item, candidates)
    if found is None:
        # flatten(2) of a (B, C, H, W) grid: H * W; SEW's min(pooled length, conv length);
        # a conformer's relative positions from 511 - (seq_len - 1)
        if parts and isinstance(item, (sympy.Add, sympy.Mul, sympy.Min, sympy.Max)):
            args = [_read_whole(graph, a, candidates, whole, taken, parts) for a in item.args]
            return item.func(*args)
        return item
    return _whole_symbol(found, whole, taken) + offset


def _whole_symbol(found: tuple[str, int], whole: dict, taken: set[str]):
    """The symbol standing for dimension ``found`` (tensor, axis), recorded in ``whole``."""
    import sympy

    symbol = next((sympy.Symbol(n, integer=True) for n, at in whole.items() if at == found), None)
    if symbol is None:
        name = f"whole_dim_{len(whole)}"
        while name in taken:
            name += "_"
        taken.add(name)
        symbol = sympy.Symbol(name, integer=True)
        whole[str(symbol)] = found
    return symbol


def _read_as_part(graph, symbol, candidates: list[str], whole: dict, taken: set[str]):
    """``symbol`` itself when a candidate has it as a dimension; else, when a candidate's
    dimension is a multiple ``k * symbol`` (Swin's windows of every image, ``16*batch``), that
    dimension floor-divided by ``k``."""
    import sympy

    name = str(symbol)
    if any(name in graph.symbolic_shapes.get(tensor, ()) for tensor in candidates):
        return symbol
    for tensor in candidates:
        for axis, dim in enumerate(graph.symbolic_shapes.get(tensor, ())):
            factor, times, rest = dim.partition("*") if isinstance(dim, str) else ("", "", "")
            if times and rest == name and factor.isdigit() and int(factor) > 1:
                return sympy.floor(_whole_symbol((tensor, axis), whole, taken) / int(factor))
    return symbol


# Largest constant by which a size may differ from a whole dimension and still be read from it
# (``seq_len + 1`` for a padded row).
NEAR_OFFSET = 8


def _dimension_near(graph, item, candidates: list[str]) -> tuple[tuple[str, int] | None, int]:
    """A whole dimension of a candidate tensor that ``item`` equals up to a small constant
    offset, and the offset; (None, 0) when there is none."""
    for offset in sorted(range(-NEAR_OFFSET, NEAR_OFFSET + 1), key=abs):
        found = _dimension_equal_to(graph, item - offset, candidates)
        if found is not None:
            return found, offset
    return None, 0


def _dimension_equal_to(graph, item, candidates: list[str]) -> tuple[str, int] | None:
    """Where a candidate tensor has ``item`` as a whole dimension. Compared as text (symbolic
    inference writes derived sizes the way sympy prints them): dimension names come from the
    model file and are never parsed or evaluated."""
    wanted = str(item).replace(" ", "")
    for tensor in candidates:
        for axis, dim in enumerate(graph.symbolic_shapes.get(tensor, ())):
            if isinstance(dim, str) and dim.replace(" ", "") == wanted:
                return tensor, axis
    return None
