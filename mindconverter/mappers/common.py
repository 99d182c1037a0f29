"""Helpers shared by several mapper modules (not mappers themselves)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np

from .base import Call, Const, DType, Input, Item, Lit, NodeContext, Unsupported, Weight
from .syntax import ops


def compact(values: Sequence[int]):
    """``(3, 3)`` -> ``3``; unequal values stay a tuple (how a person writes kernel sizes)."""
    values = tuple(int(v) for v in values)
    return values[0] if values and all(v == values[0] for v in values) else values


def spatial_pads(
    ctx: NodeContext,
    spatial_in: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> tuple[list[int], list[int]]:
    """ONNX pads (begin, end per spatial axis) honouring ``auto_pad``."""
    rank = len(kernel)
    auto_pad = ctx.attr("auto_pad", "NOTSET") or "NOTSET"
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = [], []
        for size, k, s, d in zip(spatial_in, kernel, strides, dilations):
            total = max((math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size, 0)
            small = total // 2
            begin.append(small if auto_pad == "SAME_UPPER" else total - small)
            end.append(total - small if auto_pad == "SAME_UPPER" else small)
        return begin, end
    if auto_pad == "VALID":
        return [0] * rank, [0] * rank
    pads = list(ctx.attr("pads", [0] * (2 * rank)))
    if len(pads) != 2 * rank or min(pads, default=0) < 0:
        raise Unsupported(f"pads {pads} are not {2 * rank} sizes of 0 or more")
    return pads[:rank], pads[rank:]


def spatial_attrs(ctx: NodeContext, rank: int, kernel: Sequence[int] | None = None):
    """kernel_shape, strides and dilations with their ONNX defaults."""
    weight_kernel = kernel
    kernel = list(ctx.attr("kernel_shape", kernel if kernel is not None else []))
    if len(kernel) != rank:
        raise Unsupported(f"kernel_shape {kernel} does not match {rank} spatial axes")
    if (
        weight_kernel is not None
        and is_static(weight_kernel)
        and [int(k) for k in weight_kernel] != kernel
    ):
        raise Unsupported(
            f"kernel_shape {kernel} disagrees with the weight's {list(weight_kernel)}"
        )
    strides = list(ctx.attr("strides", [1] * rank)) or [1] * rank
    dilations = list(ctx.attr("dilations", [1] * rank)) or [1] * rank
    for name, values in (("kernel_shape", kernel), ("strides", strides), ("dilations", dilations)):
        if len(values) != rank or min(values) < 1:  # the layer could not even be built
            raise Unsupported(f"{name} {values} are not {rank} sizes of 1 or more")
    return kernel, strides, dilations


def pad_call(value, begin: Sequence[int], end: Sequence[int], fill: float = 0.0):
    """``ops.pad`` over the trailing spatial axes (MindSpore pads from the last axis backwards)."""
    widths: list[int] = []
    for b, e in zip(reversed(list(begin)), reversed(list(end))):
        widths += [int(b), int(e)]
    kwargs = {"value": Lit(fill)} if fill != 0.0 else {}
    return ops.pad(value, Lit(tuple(widths)), **kwargs)


def scalar_or_const(value: np.ndarray, like_float: bool = True):
    """A scalar constant as a Python literal, otherwise a Const tensor."""
    array = np.asarray(value)
    if array.size == 1 and array.ndim <= 1:
        item = array.reshape(()).item()
        return Lit(float(item) if like_float and array.dtype.kind == "f" else item)
    return Const(array)


def same_dtype_operand(ctx: NodeContext, index: int):
    """Operand ``index``; a scalar constant of the same dtype as input 0 becomes a literal."""
    value = ctx.const(index)
    if value is not None and value.size == 1 and ctx.input_dtype(0) is not None:
        kind = np.asarray(value).dtype.kind
        if (
            kind == "f"
            and ctx.input_dtype(0).kind == "f"
            and ctx.input_dtype(0) == value.dtype
            and _number_keeps_the_result(ctx, index, np.asarray(value).ndim)
        ):
            return Lit(float(np.asarray(value).reshape(())))
    return ctx.operand(index) if value is not None else Input(index)


def _number_keeps_the_result(ctx: NodeContext, index: int, ndim: int) -> bool:
    """Whether a size-1 constant operand may be written as a Python number: another operand is
    computed at run time (numbers alone would give a Python float, not a tensor) and has at
    least the constant's rank (its size-1 axes would otherwise add axes to the result)."""
    others = [i for i in range(ctx.num_inputs) if i != index and ctx.has_input(i)]
    if all(ctx.is_const(i) for i in others):
        return False
    ranks = [len(shape) for i in others if (shape := ctx.input_shape(i)) is not None]
    return ndim == 0 or max(ranks, default=-1) >= ndim


def axes_input_or_attr(ctx: NodeContext, input_index: int, since: int) -> list[int] | None:
    """Axes given as an attribute before opset ``since`` and as an input from it on."""
    if ctx.opset >= since:
        if not ctx.has_input(input_index):
            return None
        return ctx.const_ints(input_index, "axes")
    axes = ctx.attr("axes")
    return None if axes is None else [int(a) for a in axes]


def cast_to(value, dtype) -> Call:
    """``ops.cast(value, <dtype>)``."""
    return ops.cast(value, DType(np.dtype(dtype).name))


def require_dtype(ctx: NodeContext, index: int) -> np.dtype:
    """The dtype of input ``index``; Unsupported when it is not known."""
    dtype = ctx.input_dtype(index)
    if dtype is None:
        raise Unsupported(f"the dtype of input {index} ('{ctx.node.inputs[index]}') is unknown")
    return np.dtype(dtype)


def is_static(shape) -> bool:
    """Whether every dimension of ``shape`` is a plain size (none stays dynamic)."""
    return all(isinstance(d, (int, np.integer)) for d in shape)


def dim_expr(dim, index: int, axis: int):
    """A dimension of input ``index`` as it is written: its size, or ``ops.shape(x)[axis]``."""
    if isinstance(dim, (int, np.integer)):
        return int(dim)
    return Item(ops.shape(Input(index)), axis)


def shape_value(ctx: NodeContext, index: int) -> tuple | None:
    """The value of a shape input computed from dynamic dimensions (ints and sympy expressions),
    or None when it is not such a value."""
    if not ctx.has_input(index):
        return None
    value = ctx.graph.symbolic_values.get(ctx.node.inputs[index])
    return value if isinstance(value, tuple) else None


# Variadic operands are folded left to right in groups of this many, then the groups' results
# the same way: ``a + b + c`` as written for a few operands, and an expression whose nesting
# grows with the logarithm of the count for thousands (walkers over expressions recurse).
FOLD_GROUP = 32


def fold_operands(operands: Sequence, combine: Callable) -> object:
    """``combine`` applied over ``operands`` (at least one): left-nested within each group of
    :data:`FOLD_GROUP`, groups combined in rounds, so the depth stays ~ 32 * log32(count)."""
    level = list(operands)
    while len(level) > 1:
        groups = [level[start : start + FOLD_GROUP] for start in range(0, len(level), FOLD_GROUP)]
        level = [functools.reduce(combine, group) for group in groups]
    return level[0]


def exact_as_scalar(value: np.generic) -> bool:
    """Whether a fill value survives MindSpore's GRAPH mode, which reads a Python number as an
    int32 or float32 scalar (a wider value is silently cut)."""
    if value.dtype.kind in "iu":
        return -(2**31) <= int(value) < 2**31
    if value.dtype.kind == "f":
        return bool(np.isnan(value)) or float(np.float32(value)) == float(value)
    return True


def bias_removed(ctx: NodeContext) -> bool:
    """Whether a dynamo export's optimizer removed this layer's bias because it was zero."""
    return "RemoveOptionalBias" in ctx.node.metadata.get("pkg.onnxscript.rewriter.rule_name", "")


def zero_bias(ctx: NodeContext, size: int, dtype) -> Weight:
    """The removed bias as a Parameter of zeros, named after the layer's weight's module."""
    module = ctx.weight(1).source.rpartition(".")[0]
    return Weight(np.zeros(size, dtype), f"{module}.bias" if module else "")
