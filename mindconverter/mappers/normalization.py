"""Normalization and regularization layers: BatchNormalization, InstanceNormalization,
LayerNormalization, GroupNormalization, RMSNormalization, LpNormalization,
MeanVarianceNormalization, LRN and Dropout."""

from __future__ import annotations

import numpy as np

from .base import (
    BinOp,
    Cell,
    DType,
    Input,
    Lit,
    NodeContext,
    Noted,
    Outputs,
    Temp,
    Unsupported,
    Weight,
    normalize_axis,
)
from .registry import mapper
from .syntax import ops


@mapper("BatchNormalization")
def batch_norm(ctx: NodeContext):
    """BatchNormalization -> nn.BatchNorm1d/2d/3d with its running statistics as the moving ones.

    The cell follows ``set_train``: batch statistics (updating the moving ones with the same
    momentum convention as ONNX) when training, the moving statistics otherwise, so eval-mode and
    training-mode exports (``training_mode=1``) both become the layer a person would write."""
    if ctx.opset >= 14 and ctx.attr("training_mode", 0) and any(ctx.output_used(i) for i in (1, 2)):
        return _batch_norm_with_running_stats(ctx)
    if any(ctx.output_used(i) for i in range(1, 5)):
        raise Unsupported(
            "BatchNormalization outputs that return running statistics to the graph are not "
            "supported (the cell keeps them as its moving statistics)"
        )
    if not all(ctx.is_const(index) for index in (1, 2, 3, 4)):
        if ctx.opset >= 14 and ctx.attr("training_mode", 0):
            return _batch_norm_with_running_stats(ctx)
        return _batch_norm_functional(ctx)
    rank = ctx.input_rank(0)
    for index, what in ((1, "scale"), (2, "bias"), (3, "mean"), (4, "variance")):
        ctx.require_const(index, f"the BatchNormalization {what}")
    channels = int(ctx.require_const(1, "scale").size)
    for index in (1, 2, 3, 4):  # the layer could not load statistics of another shape or type
        stat = ctx.const(index)
        if stat.shape != (channels,) or stat.dtype.kind != "f":
            raise Unsupported(
                f"BatchNormalization input {index} is {stat.dtype}{list(stat.shape)}, not "
                f"{channels} floats like the scale"
            )
    eps = float(ctx.attr("epsilon", 1e-5))
    momentum = float(ctx.attr("momentum", 0.9))
    kwargs = {"num_features": channels, "eps": eps, "momentum": momentum}
    if rank == 4:
        cls, names = "nn.BatchNorm2d", ("gamma", "beta", "moving_mean", "moving_variance")
    elif rank == 5:
        cls, names = (
            "nn.BatchNorm3d",
            ("bn2d.gamma", "bn2d.beta", "bn2d.moving_mean", "bn2d.moving_variance"),
        )
    elif rank in (2, 3):
        cls, names = "nn.BatchNorm1d", ("gamma", "beta", "moving_mean", "moving_variance")
    else:
        raise Unsupported(f"BatchNormalization of rank {rank}")
    weights = {name: ctx.weight(index) for name, index in zip(names, (1, 2, 3, 4))}
    return Cell(cls, kwargs=kwargs, args=[Input(0)], weights=weights, role="bn")


def _batch_norm_functional(ctx: NodeContext):
    """Inference BatchNormalization whose scale, bias or statistics are computed at run time:
    ``(x - mean) / sqrt(var + eps) * scale + bias``, written out per channel."""
    rank = ctx.input_rank(0)
    if rank < 2:
        raise Unsupported(f"BatchNormalization of rank {rank}")
    eps = float(ctx.attr("epsilon", 1e-5))
    channel_shape = (-1,) + (1,) * (rank - 2)

    def per_channel(index):
        return ops.reshape(ctx.operand(index), Lit(channel_shape))

    spread = ops.sqrt(per_channel(4) + Lit(eps))
    normalized = (Input(0) - per_channel(3)) / spread
    return normalized * per_channel(1) + per_channel(2)


def _batch_norm_with_running_stats(ctx: NodeContext) -> Outputs:
    """Training-mode BatchNormalization whose graph reads the updated running statistics:
    batch mean and (population) variance, written out."""
    rank = ctx.input_rank(0)
    axes = (0,) + tuple(range(2, rank))
    momentum = float(ctx.attr("momentum", 0.9))
    eps = float(ctx.attr("epsilon", 1e-5))
    channel_shape = (-1,) + (1,) * (rank - 2)

    def per_channel(expr):
        return ops.reshape(expr, Lit(channel_shape))

    x = Input(0)
    mean = Temp(ops.mean(x, axis=Lit(axes)), "batch_mean")
    centered = Temp(x - per_channel(mean), "centered")
    var = Temp(ops.mean(centered * centered, axis=Lit(axes)), "batch_var")
    scale = per_channel(ctx.operand(1)) / ops.sqrt(per_channel(var) + Lit(eps))
    y = centered * scale + per_channel(ctx.operand(2))

    def running(index, batch):
        return ctx.operand(index) * Lit(momentum) + batch * Lit(1.0 - momentum)

    exprs = [y, running(3, mean), running(4, var)]
    return Outputs(
        [e if ctx.has_output(i) else None for i, e in enumerate(exprs)][: ctx.num_outputs]
    )


@mapper("LRN")
def lrn(ctx: NodeContext):
    """LRN -> x / (bias + alpha * mean of x^2 over a channel window)^beta.

    Written with ops.avg_pool3d over the channel axis because MindSpore's CPU ops.lrn fails on
    all but tiny inputs; the window is size channels, padded as ONNX sums over the edges.
    """
    size = int(ctx.attr("size"))
    rank = ctx.input_rank(0)
    if rank < 3:
        raise Unsupported("LRN needs an input of rank 3 or more")
    alpha, beta, bias = (
        float(ctx.attr("alpha", 1e-4)),
        float(ctx.attr("beta", 0.75)),
        float(ctx.attr("bias", 1.0)),
    )
    x = Input(0)
    squares = x * x
    shape = ctx.require_shape(0)
    if rank != 4:  # fold the spatial axes into one so the window runs over (N, 1, C, S, 1)
        squares = ops.reshape(squares, Lit((shape[0], shape[1], -1, 1)))
    before, after = (size - 1) // 2, size // 2
    padded = ops.pad(ops.unsqueeze(squares, dim=Lit(1)), Lit((0, 0, 0, 0, before, after)))
    window = ops.avg_pool3d(padded, kernel_size=Lit((size, 1, 1)), stride=Lit(1))
    mean = ops.squeeze(window, axis=Lit(1))
    if rank != 4:
        mean = ops.reshape(mean, Lit(tuple(shape)))
    scale = ops.pow(Lit(bias) + Lit(alpha) * mean, Lit(beta))
    return x / scale


def group_norm_cell(ctx: NodeContext, groups: int, scale: Weight, bias: Weight, eps: float):
    """``nn.GroupNorm(groups, C)`` of input 0 holding ``scale`` and ``bias``."""
    channels = int(ctx.require_shape(0)[1])
    kwargs = {"num_groups": groups, "num_channels": channels, "eps": eps}
    return Cell(
        "nn.GroupNorm",
        kwargs=kwargs,
        args=[Input(0)],
        weights={"gamma": scale, "beta": bias},
        role="norm",
    )


def _normalized(ctx: NodeContext, axes: tuple[int, ...], eps: float):
    """``(x - mean) / sqrt(var + eps)`` over ``axes`` with functional ops (population variance)."""
    centered = Temp(
        Input(0) - ops.mean(Input(0), axis=Lit(axes), keep_dims=Lit(True)),
        "centered",
    )
    var = ops.mean(centered * centered, axis=Lit(axes), keep_dims=Lit(True))
    return centered * ops.rsqrt(var + Lit(eps))


def _channel_operand(ctx: NodeContext, index: int, rank: int):
    """A per-channel vector input (scale/bias) shaped to broadcast over (N, C, *spatial)."""
    shape = (-1,) + (1,) * (rank - 2)
    return ops.reshape(ctx.operand(index), Lit(shape))


@mapper("InstanceNormalization", since=6)
def instance_norm(ctx: NodeContext):
    """InstanceNormalization -> nn.GroupNorm with one group per channel (per-channel scale/bias).

    MindSpore's nn.InstanceNorm* has no CPU kernel; GroupNorm(C, C) is the same computation.
    A scale or bias computed at run time falls back to functional ops.
    """
    rank = ctx.input_rank(0)
    if rank < 3:
        raise Unsupported(f"InstanceNormalization of a rank-{rank} input")
    eps = float(ctx.attr("epsilon", 1e-5))
    if ctx.is_const(1) and ctx.is_const(2):
        channels = int(ctx.require_shape(0)[1])
        return group_norm_cell(ctx, channels, ctx.weight(1), ctx.weight(2), eps)
    normalized = _normalized(ctx, tuple(range(2, rank)), eps)
    return BinOp("*", normalized, _channel_operand(ctx, 1, rank)) + _channel_operand(ctx, 2, rank)


@mapper("LayerNormalization", since=17)
def layer_norm(ctx: NodeContext):
    """LayerNormalization -> nn.LayerNorm over X.shape[axis:] (gamma = Scale, beta = B or zeros).

    A Scale/B computed at run time, or the Mean/InvStdDev outputs (training graphs), make it
    functional ops instead.
    """
    shape = ctx.require_shape(0)
    axis = normalize_axis(int(ctx.attr("axis", -1)), len(shape))
    eps = float(ctx.attr("epsilon", 1e-5))
    normalized_shape = tuple(int(d) for d in shape[axis:])
    if ctx.has_output(1) or ctx.has_output(2):
        return _layer_norm_with_statistics(ctx, tuple(range(axis, len(shape))), eps)
    if ctx.is_const(1) and (not ctx.has_input(2) or ctx.is_const(2)):
        scale = ctx.require_const(1, "scale")
        gamma = np.broadcast_to(scale, normalized_shape).astype(scale.dtype)
        gamma_w = ctx.weight(1, gamma, "broadcast_to" if gamma.shape != scale.shape else "")
        if ctx.has_input(2):
            bias = ctx.require_const(2, "bias")
            beta = np.broadcast_to(bias, normalized_shape).astype(bias.dtype)
            beta_w = ctx.weight(2, beta, "broadcast_to" if beta.shape != bias.shape else "")
        else:
            beta_w = Weight(
                np.zeros(normalized_shape, scale.dtype), "", "zeros (no bias in the source)"
            )
        kwargs = {
            "normalized_shape": normalized_shape,
            "begin_norm_axis": axis,
            "begin_params_axis": axis,
            "epsilon": eps,
        }
        return Cell(
            "nn.LayerNorm",
            kwargs=kwargs,
            args=[Input(0)],
            weights={"gamma": gamma_w, "beta": beta_w},
            role="norm",
        )
    # ops.layer_norm has no CPU kernel: normalize with functional ops instead
    y = _normalized(ctx, tuple(range(axis, len(shape))), eps) * ctx.operand(1)
    y = y + ctx.operand(2) if ctx.has_input(2) else y
    return Noted(y, "layer norm written out: ops.layer_norm has no CPU kernel")


def _layer_norm_with_statistics(ctx: NodeContext, axes: tuple[int, ...], eps: float):
    """LayerNormalization with its Mean and InvStdDev outputs (training graphs), as functional ops."""
    mean = Temp(ops.mean(Input(0), axis=Lit(axes), keep_dims=Lit(True)), "mean")
    centered = Temp(Input(0) - mean, "centered")
    var = ops.mean(centered * centered, axis=Lit(axes), keep_dims=Lit(True))
    inv_std = Temp(ops.rsqrt(var + Lit(eps)), "inv_std")
    y = centered * inv_std * ctx.operand(1)
    if ctx.has_input(2):
        y = y + ctx.operand(2)
    return Outputs([y, mean if ctx.has_output(1) else None, inv_std if ctx.has_output(2) else None])


def _group_norm(ctx: NodeContext, per_channel: bool):
    shape = ctx.require_shape(0)
    if len(shape) < 2:
        raise Unsupported(f"GroupNormalization of a rank-{len(shape)} input")
    channels = int(shape[1])
    groups = int(ctx.attr("num_groups"))
    if channels % groups:
        raise Unsupported(f"{channels} channels are not divisible into {groups} groups")
    eps = float(ctx.attr("epsilon", 1e-5))
    if ctx.is_const(1) and ctx.is_const(2):
        weights = []
        for index in (1, 2):
            value = ctx.require_const(index, "scale/bias").reshape(-1)
            if per_channel:
                weights.append(ctx.weight(index, value))
            else:  # opset 18: one value per group, repeated over the group's channels
                weights.append(
                    ctx.weight(index, np.repeat(value, channels // groups), "repeat per group")
                )
        return group_norm_cell(ctx, groups, weights[0], weights[1], eps)
    if not per_channel:
        raise Unsupported("a per-group scale/bias (GroupNormalization-18) computed at run time")
    return ops.group_norm(
        Input(0), Lit(groups), weight=ctx.operand(1), bias=ctx.operand(2), eps=Lit(eps)
    )


@mapper("GroupNormalization", since=18, until=20)
def group_norm_18(ctx: NodeContext):
    """GroupNormalization-18 (scale/bias per group) -> nn.GroupNorm with the values repeated per channel."""
    return _group_norm(ctx, per_channel=False)


@mapper("GroupNormalization", since=21)
def group_norm_21(ctx: NodeContext):
    """GroupNormalization-21 (scale/bias per channel) -> nn.GroupNorm."""
    return _group_norm(ctx, per_channel=True)


@mapper("LpNormalization")
def lp_normalization(ctx: NodeContext):
    """LpNormalization -> x / ops.norm(x, p, axis, keepdim=True) (p = 1 or 2, no epsilon as in ONNX)."""
    p = int(ctx.attr("p", 2))
    if p not in (1, 2):
        raise Unsupported(f"LpNormalization with p={p}")
    axis = normalize_axis(int(ctx.attr("axis", -1)), ctx.input_rank(0))
    if ctx.input_dtype(0) == np.float64:  # ops.norm's kernel is float16/float32 only
        summed = ops.abs(Input(0)) if p == 1 else Input(0) * Input(0)
        norm = ops.sum(summed, dim=Lit(axis), keepdim=Lit(True))
        return Input(0) / (norm if p == 1 else ops.sqrt(norm))
    norm = ops.norm(Input(0), ord=Lit(p), dim=Lit(axis), keepdim=Lit(True))
    return Input(0) / norm


@mapper("MeanVarianceNormalization", since=9)
def mean_variance_normalization(ctx: NodeContext):
    """MeanVarianceNormalization -> (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over ``axes``."""
    rank = ctx.input_rank(0)
    axes = tuple(sorted(normalize_axis(int(a), rank) for a in ctx.attr("axes", [0, 2, 3])))
    mean = Temp(ops.mean(Input(0), axis=Lit(axes), keep_dims=Lit(True)), "mean")
    square_mean = ops.mean(Input(0) * Input(0), axis=Lit(axes), keep_dims=Lit(True))
    std = ops.sqrt(square_mean - mean * mean)
    return (Input(0) - mean) / (std + Lit(1e-9))


@mapper("RMSNormalization", since=23)
def rms_normalization(ctx: NodeContext):
    """RMSNormalization -> x * rsqrt(mean(x², axes from ``axis`` on) + eps) * scale."""
    rank = ctx.input_rank(0)
    axis = normalize_axis(int(ctx.attr("axis", -1)), rank)
    eps = float(ctx.attr("epsilon", 1e-5))
    axes = tuple(range(axis, rank))
    mean_sq = ops.mean(Input(0) * Input(0), axis=Lit(axes), keep_dims=Lit(True))
    normalized = Input(0) * ops.rsqrt(mean_sq + Lit(eps))
    return normalized * ctx.operand(1)


@mapper("Dropout")
def dropout(ctx: NodeContext):
    """Dropout -> nn.Dropout(p=ratio): random under ``set_train(True)``, an identity otherwise
    (a training-mode export's ``training_mode`` input is what ``set_train`` decides here)."""
    ratio = 0.5
    if ctx.opset < 12:
        ratio = float(ctx.attr("ratio", 0.5))
    elif ctx.has_input(1):
        ratio = float(np.asarray(ctx.require_const(1, "the dropout ratio")).reshape(()))
    if ctx.has_input(2) and ctx.const(2) is None:
        raise Unsupported("Dropout whose training switch is computed at run time")
    if ctx.output_used(1):
        training = ctx.opset >= 12 and ctx.has_input(2) and bool(np.asarray(ctx.const(2)).all())
        if training and ratio > 0:
            raise Unsupported("the mask output of a training-mode Dropout (a random mask)")
        # nothing is dropped: the input passes through and the mask keeps every element
        keep_all = ops.ones_like(Input(0), dtype=DType("bool"))
        return Outputs([Input(0), keep_all])
    if not 0.0 <= ratio < 1.0:  # nn.Dropout refuses it (ONNX allows [0, 1) too)
        raise Unsupported(f"a dropout ratio of {ratio} (ONNX allows [0, 1))")
    return Cell("nn.Dropout", {"p": ratio}, [Input(0)], role="dropout")
