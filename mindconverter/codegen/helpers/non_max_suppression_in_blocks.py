"""The script's ``non_max_suppression_in_blocks`` helper, inlined by source where a converted network uses it."""

import mindspore as ms
from mindspore import nn, ops


class NonMaxSuppressionInBlocks(nn.Cell):
    """ONNX's NonMaxSuppression for one batch and class, given the boxes' corners (each [N]):
    the indices of the boxes kept, in score order. A box is suppressed by a kept box of higher
    score when both boxes and their intersection have positive area and their IoU exceeds
    ``iou_threshold``; equal scores keep the lower index first.

    In PyNative mode the boxes are compared one block at a time, against the boxes already
    kept and within the block, so memory grows with the box count times ``block``, not with
    its square (a detector's tens of thousands of candidates). GRAPH_MODE cannot run that loop
    over a count known at run time, and compares every pair at once."""

    def __init__(self, block=512):
        super().__init__()
        self.block = block
        self.kernel = ops.NonMaxSuppressionWithOverlaps()
        # the mode is read once, here: in GRAPH_MODE this flag is a constant and the loop
        # below is never compiled
        self.eager = ms.get_context("mode") == ms.PYNATIVE_MODE

    def construct(self, xmin, xmax, ymin, ymax, scores, limit, iou_threshold, score_threshold):
        corners = (xmin, xmax, ymin, ymax)
        half = ms.Tensor(0.5, ms.float32)
        zero = ms.Tensor(0.0, ms.float32)
        if not self.eager:
            rank = ops.cast(ops.argsort(ops.argsort(scores, descending=True)), ms.float32)
            count = ops.sum(ops.ones_like(scores))
            keys = count - rank
            # the kernel allocates for its limit: brought down to the box count
            limit = ops.cast(ops.minimum(ops.cast(limit, ms.float32), count), ms.int32)
            if score_threshold is not None:
                keys = ops.where(scores > score_threshold, keys, -1.0)
            overlaps = ops.cast(self.suppression(corners, corners, iou_threshold), ms.float32)
            return ops.cast(self.kernel(overlaps, keys, limit, half, zero), ms.int64)
        order = ops.argsort(scores, descending=True)  # stable on CPU: ties keep index order
        if score_threshold is not None:
            order = order[scores[order] > score_threshold]
        pieces, count, limit = [], 0, int(limit)
        for start in range(0, order.shape[0], self.block):
            if count >= limit:
                break
            block = order[start : start + self.block]
            boxes = tuple(corner[block] for corner in corners)
            keys = ops.cast(block.shape[0] - ops.arange(block.shape[0]), ms.float32)
            if pieces:
                kept = ops.concat(pieces)
                held = tuple(corner[kept] for corner in corners)
                hit = ops.any(self.suppression(held, boxes, iou_threshold), axis=0)
                keys = ops.where(hit, -1.0, keys)
            overlaps = ops.cast(self.suppression(boxes, boxes, iou_threshold), ms.float32)
            # the kernel allocates for its limit: at most the block
            room = ms.Tensor(min(limit - count, block.shape[0]), ms.int32)
            chosen = ops.cast(self.kernel(overlaps, keys, room, half, zero), ms.int64)
            if chosen.shape[0]:
                pieces.append(block[chosen])
                count += chosen.shape[0]
        return ops.concat(pieces) if pieces else ops.zeros((0,), ms.int64)

    def suppression(self, first, second, iou_threshold):
        """[len(first), len(second)]: whether each box of ``first`` suppresses each of ``second``
        (corners as (xmin, xmax, ymin, ymax)), as ONNX's NonMaxSuppression decides it."""
        rows = [ops.unsqueeze(corner, 1) for corner in first]
        columns = [ops.unsqueeze(corner, 0) for corner in second]
        if self.eager:
            # tiled to one shape: MindSpore's CPU kernels broadcast several times slower
            rows = [ops.tile(row, (1, columns[0].shape[1])) for row in rows]
            columns = [ops.tile(column, (rows[0].shape[0], 1)) for column in columns]
        xmin, xmax, ymin, ymax = rows
        other_xmin, other_xmax, other_ymin, other_ymax = columns
        inter_w = ops.minimum(xmax, other_xmax) - ops.maximum(xmin, other_xmin)
        inter_h = ops.minimum(ymax, other_ymax) - ops.maximum(ymin, other_ymin)
        inter = inter_w * inter_h
        area = (xmax - xmin) * (ymax - ymin)
        other_area = (other_xmax - other_xmin) * (other_ymax - other_ymin)
        union = area + other_area - inter
        return (
            (inter_w > 0)
            & (inter_h > 0)
            & (inter > 0)
            & (area > 0)
            & (other_area > 0)
            & (union > 0)
            & (inter / union > iou_threshold)
        )
