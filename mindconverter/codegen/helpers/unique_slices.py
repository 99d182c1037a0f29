"""The script's ``unique_slices`` helper, inlined by source where a converted network uses it."""

import mindspore as ms
from mindspore import nn, ops


class UniqueSlices(nn.Cell):
    """ONNX's Unique along ``axis``: the distinct slices (sorted lexicographically, or in order
    of first occurrence), the index of each one's first occurrence, each slice's position among
    them and how often each occurs. Slices are compared pairwise (fine for the short axes
    Unique is used on)."""

    def __init__(self, axis, sort=True):
        super().__init__()
        self.axis = axis
        self.sort = sort

    def construct(self, x):
        moved = ops.moveaxis(x, self.axis, 0)
        rows = ops.reshape(moved, (moved.shape[0], -1))
        same = ops.all(ops.expand_dims(rows, 1) == ops.expand_dims(rows, 0), axis=-1)
        first = ops.argmax(ops.cast(same, ms.int32), dim=1)
        keep = ops.reshape(ops.nonzero(first == ops.arange(rows.shape[0])), (-1,))
        if self.sort:
            kept = ops.gather(rows, keep, 0)
            pairs = (keep.shape[0], keep.shape[0], kept.shape[1])
            left = ops.broadcast_to(ops.expand_dims(kept, 1), pairs)
            right = ops.broadcast_to(ops.expand_dims(kept, 0), pairs)
            differ = left != right
            column = ops.expand_dims(ops.argmax(ops.cast(differ, ms.int32), dim=-1), -1)
            smaller = ops.logical_and(
                ops.squeeze(
                    ops.gather_elements(left, 2, column) < ops.gather_elements(right, 2, column), -1
                ),
                ops.any(differ, -1),
            )
            rank = ops.sum(ops.cast(smaller, ms.int32), 0)
            keep = ops.gather(keep, ops.argsort(rank), 0)
        slices = ops.gather(x, keep, self.axis)
        inverse = ops.argmax(
            ops.cast(ops.expand_dims(first, 1) == ops.expand_dims(keep, 0), ms.int32), dim=1
        )
        counts = ops.sum(
            ops.cast(
                ops.expand_dims(ops.arange(keep.shape[0]), 1) == ops.expand_dims(inverse, 0),
                ms.int64,
            ),
            1,
        )
        return slices, ops.cast(keep, ms.int64), ops.cast(inverse, ms.int64), counts
