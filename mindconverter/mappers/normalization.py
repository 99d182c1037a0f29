"""Normalization: BatchNormalization (rank 2-5) and LRN."""

from __future__ import annotations

from .base import BinOp, Call, Cell, Input, Lit, NodeContext, Unsupported
from .registry import mapper


@mapper("BatchNormalization")
def batch_norm(ctx: NodeContext):
    """BatchNormalization (inference) -> nn.BatchNorm1d/2d/3d with its statistics as parameters."""
    if any(ctx.output_used(i) for i in range(1, 5)):
        raise Unsupported(
            "training-mode BatchNormalization outputs (running statistics) are not supported"
        )
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
    squares = BinOp("*", x, x)
    shape = ctx.require_shape(0)
    if rank != 4:  # fold the spatial axes into one so the window runs over (N, 1, C, S, 1)
        squares = Call("ops.reshape", [squares, Lit((shape[0], shape[1], -1, 1))])
    before, after = (size - 1) // 2, size // 2
    padded = Call(
        "ops.pad",
        [Call("ops.unsqueeze", [squares], {"dim": Lit(1)}), Lit((0, 0, 0, 0, before, after))],
    )
    window = Call("ops.avg_pool3d", [padded], {"kernel_size": Lit((size, 1, 1)), "stride": Lit(1)})
    mean = Call("ops.squeeze", [window], {"axis": Lit(1)})
    if rank != 4:
        mean = Call("ops.reshape", [mean, Lit(tuple(shape))])
    scale = Call("ops.pow", [BinOp("+", Lit(bias), BinOp("*", Lit(alpha), mean)), Lit(beta)])
    return BinOp("/", x, scale)
