"""Normalization: BatchNormalization (rank 2-5) and LRN."""

from __future__ import annotations

from .base import Call, Cell, Input, Lit, NodeContext, Unsupported
from .registry import mapper


@mapper("BatchNormalization")
def batch_norm(ctx: NodeContext):
    """BatchNormalization (inference) -> nn.BatchNorm1d/2d/3d with its statistics as parameters."""
    if any(ctx.has_output(i) for i in range(1, 5)):
        raise Unsupported("training-mode BatchNormalization outputs (running statistics) are not supported")
    if int(ctx.attr("training_mode", 0)):
        raise Unsupported("training_mode=1 BatchNormalization")
    rank = ctx.input_rank(0)
    for index, what in ((1, "scale"), (2, "bias"), (3, "mean"), (4, "variance")):
        ctx.require_const(index, f"the BatchNormalization {what}")
    channels = int(ctx.require_const(1, "scale").size)
    eps = float(ctx.attr("epsilon", 1e-5))
    momentum = float(ctx.attr("momentum", 0.9))
    kwargs = {"num_features": channels, "eps": eps, "momentum": momentum}
    if rank == 4:
        cls, names = "nn.BatchNorm2d", ("gamma", "beta", "moving_mean", "moving_variance")
    elif rank == 5:
        cls, names = "nn.BatchNorm3d", ("bn2d.gamma", "bn2d.beta", "bn2d.moving_mean", "bn2d.moving_variance")
    elif rank in (2, 3):
        cls, names = "nn.BatchNorm1d", ("gamma", "beta", "moving_mean", "moving_variance")
    else:
        raise Unsupported(f"BatchNormalization of rank {rank}")
    weights = {name: ctx.weight(index) for name, index in zip(names, (1, 2, 3, 4))}
    return Cell(cls, kwargs=kwargs, args=[Input(0)], weights=weights, role="bn")


@mapper("LRN")
def lrn(ctx: NodeContext):
    """LRN -> ops.lrn; ONNX divides alpha by size, MindSpore takes the per-element alpha."""
    size = int(ctx.attr("size"))
    if size % 2 == 0:
        raise Unsupported("LRN with an even size has no MindSpore equivalent")
    if ctx.input_rank(0) != 4:
        raise Unsupported("LRN is supported for 4-D inputs only")
    alpha = float(ctx.attr("alpha", 1e-4))
    return Call(
        "ops.lrn",
        [Input(0)],
        {
            "depth_radius": Lit(size // 2),
            "bias": Lit(float(ctx.attr("bias", 1.0))),
            "alpha": Lit(float(alpha / size)),
            "beta": Lit(float(ctx.attr("beta", 0.75))),
        },
    )
