"""Type changes and pass-through: Identity, Cast, CastLike and BitCast."""

from __future__ import annotations

import numpy as np
from onnx import helper

from .base import (
    DType,
    Input,
    NodeContext,
    Unsupported,
)
from .common import cast_to, require_dtype
from .narrow_types import cast_to_narrow, is_narrow
from .registry import mapper
from .syntax import ms, ops


def _narrow_cast(ctx: NodeContext, target: np.dtype):
    """Input 0 cast to a type MindSpore cannot hold (exact ONNX rounding, in its container)."""
    source = np.dtype(ctx.input_dtype(0) or np.float32)
    if source == target:
        return Input(0)
    saturate = bool(int(ctx.attr("saturate", 1)))
    round_mode = ctx.attr("round_mode", "up")
    round_mode = round_mode.decode() if isinstance(round_mode, bytes) else round_mode
    return cast_to_narrow(Input(0), source, target, saturate, round_mode)


@mapper("Identity")
def identity(ctx: NodeContext):
    """Identity -> the input itself (no statement)."""
    return Input(0)


@mapper("Cast")
def cast(ctx: NodeContext):
    """Cast -> ops.cast to the MindSpore dtype."""
    target = np.dtype(helper.tensor_dtype_to_np_dtype(int(ctx.attr("to"))))
    if is_narrow(target):
        return _narrow_cast(ctx, target)
    if target.kind not in "biuf" and target.name != "bfloat16":
        raise Unsupported(f"cast to {target.name}")
    return ops.cast(Input(0), DType(target.name))


@mapper("CastLike", since=15)
def cast_like(ctx: NodeContext):
    """CastLike -> ops.cast to the second input's dtype."""
    target = require_dtype(ctx, 1)
    if is_narrow(target):
        return _narrow_cast(ctx, target)
    if target.kind not in "biuf" and target.name != "bfloat16":
        raise Unsupported(f"cast to {target.name}")
    source = ctx.input_dtype(0)
    if source is not None and np.dtype(source) == target:
        return Input(0)
    return cast_to(Input(0), target)


@mapper("BitCast", since=26)
def bit_cast(ctx: NodeContext):
    """BitCast -> reinterpret the bits with ``Tensor.view(dtype)`` (same element size only);
    bool -> uint8 is an ordinary cast."""
    source = np.dtype(ctx.input_dtype(0) or np.float32)
    target = np.dtype(helper.tensor_dtype_to_np_dtype(int(ctx.attr("to"))))
    if source.itemsize != target.itemsize or target.kind not in "biuf" or source.kind not in "biuf":
        raise Unsupported(f"BitCast from {source.name} to {target.name}")
    if source == target:
        return Input(0)
    if source.kind == "b" or target.kind == "b":
        return ops.cast(Input(0), DType(target.name))
    return ms.Tensor.view(Input(0), DType(target.name))
