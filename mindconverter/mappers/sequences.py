"""Tensor sequences as Python tuples (SplitToSequence, SequenceAt, SequenceConstruct,
SequenceLength, SequenceEmpty, SequenceInsert, SequenceErase, ConcatFromSequence; the dynamo
exporter writes ``torch.split`` this way when it does not optimize) and optional values as the
value or None (Optional, OptionalGetElement, OptionalHasElement)."""

from __future__ import annotations

from .base import BinOp, Call, Input, Item, Lit, NodeContext, Unsupported, normalize_axis
from .registry import mapper
from .syntax import ms, ops


@mapper("SplitToSequence", since=11)
def split_to_sequence(ctx: NodeContext):
    """SplitToSequence -> the tuple ``ops.split`` returns (``ops.unbind`` without sizes and
    ``keepdims=0``)."""
    rank = ctx.input_rank(0)
    axis = normalize_axis(int(ctx.attr("axis", 0)), rank)
    if not ctx.has_input(1):
        if int(ctx.attr("keepdims", 1)):
            return ops.split(Input(0), Lit(1), axis=Lit(axis))
        return ops.unbind(Input(0), dim=Lit(axis))
    sizes = ctx.const_ints(1, "the split sizes")
    section = sizes[0] if ctx.const(1).ndim == 0 else list(sizes)
    return ops.split(Input(0), Lit(section), axis=Lit(axis))


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
    return ms.Tensor(Call("len", [Input(0)]), Lit(None))


@mapper("SequenceEmpty", since=11)
def sequence_empty(ctx: NodeContext):
    """SequenceEmpty -> an empty tuple."""
    return Lit(())


def _position(ctx: NodeContext, index: int) -> int | None:
    """A constant insert/erase position, None when absent (the end)."""
    if not ctx.has_input(index):
        return None
    positions = ctx.const_ints(index, "the position")
    if len(positions) != 1:
        raise Unsupported("a sequence position must be one number")
    return positions[0]


@mapper("SequenceInsert", since=11)
def sequence_insert(ctx: NodeContext):
    """SequenceInsert -> the tuple with the tensor spliced in (appended without a position)."""
    position = _position(ctx, 2)
    item = (Input(1),)
    if position is None:
        return Input(0) + item
    head = Item(Input(0), slice(None, position))
    tail = Item(Input(0), slice(position, None))
    return head + item + tail


@mapper("SequenceErase", since=11)
def sequence_erase(ctx: NodeContext):
    """SequenceErase -> the tuple without one position (the last without a position)."""
    position = _position(ctx, 1)
    if position is None or position == -1:
        return Item(Input(0), slice(None, -1))
    return Item(Input(0), slice(None, position)) + Item(Input(0), slice(position + 1, None))


@mapper("ConcatFromSequence", since=11)
def concat_from_sequence(ctx: NodeContext):
    """ConcatFromSequence -> ops.concat of the tuple (ops.stack with ``new_axis=1``)."""
    axis = int(ctx.attr("axis"))
    if int(ctx.attr("new_axis", 0)):
        return ops.stack(Input(0), axis=Lit(axis))
    return ops.concat(Input(0), axis=Lit(axis))


@mapper("Optional", since=15)
def optional(ctx: NodeContext):
    """Optional -> the value itself, or None without an input."""
    return Input(0) if ctx.has_input(0) else Lit(None)


@mapper("OptionalGetElement", since=15)
def optional_get_element(ctx: NodeContext):
    """OptionalGetElement -> the value itself (a missing value is an error in ONNX too)."""
    return Input(0)


@mapper("OptionalHasElement", since=15)
def optional_has_element(ctx: NodeContext):
    """OptionalHasElement -> a bool tensor: whether the value is not None."""
    if not ctx.has_input(0):
        return ms.Tensor(Lit(False))
    return ms.Tensor(BinOp("is not", Input(0), Lit(None)))
