"""Random generators: RandomNormal(Like), RandomUniform(Like), Bernoulli and Multinomial.

Their values come from MindSpore's generator, so they equal no reference run value for value;
shapes, dtypes and distributions are what the ONNX operators define. A ``seed`` attribute is
passed on as MindSpore's seed (a fixed stream, not the same numbers as another runtime's)."""

from __future__ import annotations

import numpy as np
from onnx import helper

from .base import Call, DType, Input, Lit, NodeContext, Unsupported
from .registry import mapper
from .syntax import ops


def _dtype(ctx: NodeContext, default: np.dtype | None = None) -> np.dtype:
    if ctx.has_attr("dtype"):
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(int(ctx.attr("dtype"))))
    else:
        dtype = np.dtype(default if default is not None else np.float32)
    if dtype.kind != "f":
        raise Unsupported(f"random values of type {dtype.name}")
    return dtype


def _seed(ctx: NodeContext) -> dict:
    return {"seed": Lit(int(ctx.attr("seed")))} if ctx.has_attr("seed") else {}


def _affine(sample, scale: float, offset: float):
    scaled = sample if scale == 1.0 else sample * Lit(scale)
    return scaled if offset == 0.0 else scaled + Lit(offset)


def _draw(ctx: NodeContext, fn: str, dtype: np.dtype):
    """``fn`` (ops.randn / ops.rand) of the attribute's shape, or ``fn_like`` of the input."""
    kwargs = {"dtype": DType(dtype.name), **_seed(ctx)}
    if ctx.num_inputs:  # the *Like forms and Bernoulli: the input's (possibly dynamic) shape
        return Call(f"{fn}_like", [Input(0)], kwargs)
    return Call(fn, [Lit(tuple(int(d) for d in ctx.attr("shape")))], kwargs)


@mapper(["RandomNormal", "RandomNormalLike"])
def random_normal(ctx: NodeContext):
    """RandomNormal(Like) -> ops.randn(shape) * scale + mean."""
    dtype = _dtype(ctx, ctx.input_dtype(0) if ctx.num_inputs else None)
    sample = _draw(ctx, "ops.randn", dtype)
    return _affine(sample, float(ctx.attr("scale", 1.0)), float(ctx.attr("mean", 0.0)))


@mapper(["RandomUniform", "RandomUniformLike"])
def random_uniform(ctx: NodeContext):
    """RandomUniform(Like) -> ops.rand(shape) * (high - low) + low."""
    dtype = _dtype(ctx, ctx.input_dtype(0) if ctx.num_inputs else None)
    low, high = float(ctx.attr("low", 0.0)), float(ctx.attr("high", 1.0))
    sample = _draw(ctx, "ops.rand", dtype)
    return _affine(sample, high - low, low)


@mapper("Bernoulli", since=15)
def bernoulli(ctx: NodeContext):
    """Bernoulli -> 1 where a uniform draw falls below the input probability."""
    source = np.dtype(ctx.input_dtype(0) or np.float32)
    dtype = np.dtype(
        helper.tensor_dtype_to_np_dtype(int(ctx.attr("dtype"))) if ctx.has_attr("dtype") else source
    )
    draw = _draw(ctx, "ops.rand", source)
    return ops.cast(ops.lt(draw, Input(0)), DType(dtype.name))


@mapper("Multinomial", since=7)
def multinomial(ctx: NodeContext):
    """Multinomial -> ops.multinomial over the softmax of the input's log-probabilities."""
    dtype = np.dtype(
        helper.tensor_dtype_to_np_dtype(int(ctx.attr("dtype", 6)))  # int32 by default
    )
    if dtype.name not in ("int32", "int64"):
        raise Unsupported(f"Multinomial output of type {dtype.name}")
    probabilities = ops.softmax(Input(0), Lit(-1))
    samples = Call(
        "ops.multinomial",
        [probabilities, Lit(int(ctx.attr("sample_size", 1)))],
        {"replacement": Lit(True), **_seed(ctx)},
    )
    return ops.cast(samples, DType(dtype.name))
