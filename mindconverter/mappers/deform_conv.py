"""DeformConv (2-D): the script's DeformConv cell samples the input at the offset kernel taps
and contracts the samples with the weights."""

from __future__ import annotations

from .base import Cell, Input, Lit, NodeContext, Unsupported
from .registry import mapper


@mapper("DeformConv", since=19)
def deform_conv(ctx: NodeContext):
    """DeformConv -> the script's DeformConv cell (weights, bias and mask passed in)."""
    if ctx.input_rank(0) != 4:
        raise Unsupported("DeformConv over other than 2 spatial axes")
    pads = [int(p) for p in ctx.attr("pads", [0, 0, 0, 0])]
    kwargs = {
        "strides": tuple(int(s) for s in ctx.attr("strides", [1, 1])),
        "pads": (pads[0], pads[1]),  # the output size (from offset) decides the rest
        "dilations": tuple(int(d) for d in ctx.attr("dilations", [1, 1])),
        "group": int(ctx.attr("group", 1)),
        "offset_group": int(ctx.attr("offset_group", 1)),
    }
    args = [Input(0), ctx.operand(1), Input(2)]
    args.append(ctx.operand(3) if ctx.has_input(3) else Lit(None))
    args.append(Input(4) if ctx.has_input(4) else Lit(None))
    return Cell("DeformConv", kwargs, args, role="deform_conv")
