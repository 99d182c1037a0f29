"""Reductions: ReduceMean (axes as attribute before opset 18, as input from 18)."""

from __future__ import annotations

from ._common import axes_input_or_attr
from .base import Call, Input, Lit, NodeContext, normalize_axis
from .registry import mapper


def reduce_axes(ctx: NodeContext):
    """The reduction axes as a tuple, or None for all axes (honouring noop_with_empty_axes)."""
    axes = axes_input_or_attr(ctx, 1, since=18)
    if not axes:
        if int(ctx.attr("noop_with_empty_axes", 0)):
            return "noop"
        return None
    rank = ctx.input_rank(0)
    return tuple(sorted(normalize_axis(a, rank) for a in axes))


@mapper("ReduceMean")
def reduce_mean(ctx: NodeContext):
    """ReduceMean -> ops.mean."""
    axes = reduce_axes(ctx)
    if axes == "noop":
        return Input(0)
    keep = bool(int(ctx.attr("keepdims", 1)))
    kwargs = {}
    if axes is not None:
        kwargs["axis"] = Lit(axes[0] if len(axes) == 1 else axes)
    kwargs["keep_dims"] = Lit(keep)
    return Call("ops.mean", [Input(0)], kwargs)
