"""Operators tf2onnx passes through from TensorFlow under their TF names (no ONNX equivalent).

tf2onnx keeps a TensorFlow op it has no handler for as a node of the same type in the default
domain, e.g. ``Erfc`` from Keras 3's exact GELU (``0.5 * x * erfc(-x / sqrt(2))``); TFLite
builtins it has no handler for keep their ``TFL_`` names (``TFL_GELU``). Where MindSpore
has the same function these map to it directly; the TF attributes (``T``...) carry nothing else.
"""

from __future__ import annotations

import numpy as np

from .base import Call, DType, Input, Lit, NodeContext
from .registry import mapper
from .syntax import ops


def _float_call(ctx: NodeContext, func: str, arity: int):
    """``func(inputs...)``; integer inputs (TF allows few) are computed in float32."""
    args = [Input(i) for i in range(arity)]
    dtype = ctx.input_dtype(0)
    if dtype is not None and np.dtype(dtype).kind in "iub":
        args = [ops.cast(arg, DType("float32")) for arg in args]
    return Call(func, args)


@mapper("Erfc", since=1)
def erfc(ctx: NodeContext):
    """TF Erfc -> ops.erfc (complementary error function)."""
    return _float_call(ctx, "ops.erfc", 1)


@mapper("TFL_GELU", since=1)
def tflite_gelu(ctx: NodeContext):
    """TFLite GELU (tf2onnx keeps it as ``TFL_GELU``) -> ops.gelu; ``approximate=1`` is the
    tanh form."""
    kwargs = {"approximate": Lit("tanh")} if ctx.attr("approximate", 0) else {}
    return ops.gelu(Input(0), **kwargs)


@mapper("Erfinv", since=1)
def erfinv(ctx: NodeContext):
    """TF Erfinv -> ops.erfinv."""
    return _float_call(ctx, "ops.erfinv", 1)


@mapper("Expm1", since=1)
def expm1(ctx: NodeContext):
    """TF Expm1 -> ops.expm1 (exp(x) - 1, exact near 0)."""
    return _float_call(ctx, "ops.expm1", 1)


@mapper("Log1p", since=1)
def log1p(ctx: NodeContext):
    """TF Log1p -> ops.log1p (log(1 + x), exact near 0)."""
    return _float_call(ctx, "ops.log1p", 1)


@mapper("Lgamma", since=1)
def lgamma(ctx: NodeContext):
    """TF Lgamma -> ops.lgamma."""
    return _float_call(ctx, "ops.lgamma", 1)


@mapper("Digamma", since=1)
def digamma(ctx: NodeContext):
    """TF Digamma -> ops.digamma."""
    return _float_call(ctx, "ops.digamma", 1)


@mapper("Xlogy", since=1)
def xlogy(ctx: NodeContext):
    """TF Xlogy -> ops.xlogy (x * log(y), 0 where x == 0)."""
    return _float_call(ctx, "ops.xlogy", 2)


@mapper("BesselI0e", since=1)
def bessel_i0e(ctx: NodeContext):
    """TF BesselI0e -> ops.bessel_i0e."""
    return _float_call(ctx, "ops.bessel_i0e", 1)
