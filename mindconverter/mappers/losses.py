"""Loss operators: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (inference form).

Both pick ``-input[n, target[n, ...], ...]`` with ``ops.gather_elements`` along the class axis,
weight it by ``weight[target]`` (0 where ``target == ignore_index``) and reduce: ``none`` keeps
the per-element loss, ``sum`` adds it up, ``mean`` divides by the summed weights.
"""

from __future__ import annotations

import numpy as np

from .base import BinOp, DType, Input, Lit, Neg, NodeContext, Outputs, Temp, Unsupported
from .registry import mapper
from .syntax import ops


def _reduction(ctx: NodeContext) -> str:
    reduction = ctx.attr("reduction", "mean")
    if isinstance(reduction, bytes):
        reduction = reduction.decode()
    if reduction not in ("none", "sum", "mean"):
        raise Unsupported(f"reduction {reduction!r}")
    return reduction


def _nll(ctx: NodeContext, log_prob):
    """The loss expression for log-probabilities ``log_prob`` (N, C, d1, ...) and targets Input(1)."""
    shape = ctx.require_shape(0)
    if len(shape) < 2:
        raise Unsupported(f"a loss over a rank-{len(shape)} input")
    dtype = np.dtype(ctx.input_dtype(0) or np.float32)
    reduction = _reduction(ctx)
    ignore = ctx.attr("ignore_index")
    target = Input(1)
    if ignore is not None:
        keep = Temp(BinOp("!=", Input(1), Lit(int(ignore))), "keep")
        # ignored targets may lie outside [0, C): gather class 0 there, its weight is 0
        target = Temp(ops.where(keep, Input(1), ops.zeros_like(Input(1))), "target")
    picked = ops.gather_elements(log_prob, Lit(1), ops.unsqueeze(target, Lit(1)))
    loss = Neg(ops.squeeze(picked, Lit(1)))
    weight = None
    if ctx.has_input(2):
        weight = ops.gather(ctx.operand(2), target, Lit(0))
        if ignore is not None:
            weight = weight * ops.cast(keep, DType(dtype.name))
    elif ignore is not None:
        weight = ops.cast(keep, DType(dtype.name))
    if weight is not None:
        weight = Temp(weight, "class_weight")
        loss = loss * weight
    if reduction == "none":
        return loss
    if reduction == "sum":
        return ops.sum(loss)
    if weight is None:
        return ops.mean(loss)
    return ops.sum(loss) / ops.sum(weight)


@mapper("NegativeLogLikelihoodLoss", since=12)
def negative_log_likelihood_loss(ctx: NodeContext):
    """NegativeLogLikelihoodLoss -> -gather_elements(input, 1, target), weighted and reduced."""
    return _nll(ctx, Input(0))


@mapper("SoftmaxCrossEntropyLoss", since=12)
def softmax_cross_entropy_loss(ctx: NodeContext):
    """SoftmaxCrossEntropyLoss -> ops.log_softmax over the class axis, then the NLL loss;
    the optional second output is the log-probabilities."""
    log_prob = Temp(ops.log_softmax(Input(0), Lit(1)), "log_prob")
    loss = _nll(ctx, log_prob)
    if ctx.num_outputs > 1:
        return Outputs([loss, log_prob if ctx.output_used(1) else None])
    return loss
