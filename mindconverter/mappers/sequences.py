"""Tensor sequences as Python tuples: SplitToSequence, SequenceAt, SequenceConstruct,
SequenceLength (the dynamo exporter writes ``torch.split`` this way when it does not optimize)."""

from __future__ import annotations

from .base import Call, Input, Item, Lit, NodeContext, Unsupported, normalize_axis
from .registry import mapper


@mapper("SplitToSequence", since=11)
def split_to_sequence(ctx: NodeContext):
    """SplitToSequence -> the tuple ``ops.split`` returns (``ops.unbind`` without sizes and
    ``keepdims=0``)."""
    rank = ctx.input_rank(0)
    axis = normalize_axis(int(ctx.attr("axis", 0)), rank)
    if not ctx.has_input(1):
        if int(ctx.attr("keepdims", 1)):
            return Call("ops.split", [Input(0), Lit(1)], {"axis": Lit(axis)})
        return Call("ops.unbind", [Input(0)], {"dim": Lit(axis)})
    sizes = ctx.const_ints(1, "the split sizes")
    section = sizes[0] if ctx.const(1).ndim == 0 else list(sizes)
    return Call("ops.split", [Input(0), Lit(section)], {"axis": Lit(axis)})


@mapper("SequenceAt", since=11)
def sequence_at(ctx: NodeContext):
    """SequenceAt with a constant position -> ``seq[i]``."""
    positions = ctx.const_ints(1, "the position")
    if len(positions) != 1:
        raise Unsupported("SequenceAt needs one position")
    return Item(Input(0), positions[0])


@mapper("SequenceConstruct", since=11)
def sequence_construct(ctx: NodeContext):
    """SequenceConstruct -> a tuple of its inputs."""
    return Call("tuple", [tuple(Input(i) for i in range(ctx.num_inputs))])


@mapper("SequenceLength", since=11)
def sequence_length(ctx: NodeContext):
    """SequenceLength -> ``len(seq)`` as an int64 scalar tensor."""
    return Call("ms.Tensor", [Call("len", [Input(0)]), Lit(None)])
