"""Object-detection operators: NonMaxSuppression."""

from __future__ import annotations

import numpy as np

from .base import (
    BinOp,
    Cell,
    DType,
    Input,
    Item,
    Lit,
    NodeContext,
    Noted,
    Temp,
    Unsupported,
)
from .registry import mapper
from .syntax import ms, ops

MAX_NMS_PAIRS = 128  # (batch, class) pairs; each becomes one NMS call in construct()
# Boxes compared all pairs at once up to this count (a few [N, N] float32 temporaries: 16 MiB
# each); past it, or when the count is known at run time only, a block at a time.
DENSE_BOXES = 2048
INT32_MAX = 2**31 - 1  # the kernel's limit is an int32


def _corners(boxes, center_point_box: int):
    """``(xmin, xmax, ymin, ymax)`` of ``[B, N, 4]`` boxes, each ``[B, N]``, computed as ONNX does."""

    def column(i):
        return Item(boxes, (Ellipsis, i))

    if center_point_box == 0:  # (y1, x1, y2, x2), either diagonal
        y1, x1, y2, x2 = (column(i) for i in range(4))
        return (
            Temp(ops.minimum(x1, x2), "xmin"),
            Temp(ops.maximum(x1, x2), "xmax"),
            Temp(ops.minimum(y1, y2), "ymin"),
            Temp(ops.maximum(y1, y2), "ymax"),
        )
    half_w = Temp(column(2) / Lit(2), "half_w")
    half_h = Temp(column(3) / Lit(2), "half_h")
    return (
        Temp(column(0) - half_w, "xmin"),
        Temp(column(0) + half_w, "xmax"),
        Temp(column(1) - half_h, "ymin"),
        Temp(column(1) + half_h, "ymax"),
    )


def _pairwise(value, axis: int):
    return ops.unsqueeze(value, Lit(axis))


def _suppression_matrix(boxes, center_point_box: int, iou_threshold):
    """``[B, N, N]`` float 0/1: 1 where box i would suppress box j (ONNX's rule: both boxes and their
    intersection have positive area and IoU > iou_threshold)."""
    xmin, xmax, ymin, ymax = _corners(boxes, center_point_box)

    def overlap(lo, hi):
        return ops.minimum(_pairwise(hi, 2), _pairwise(hi, 1)) - ops.maximum(
            _pairwise(lo, 2), _pairwise(lo, 1)
        )

    inter_w = Temp(overlap(xmin, xmax), "inter_w")
    inter_h = Temp(overlap(ymin, ymax), "inter_h")
    inter = Temp(inter_w * inter_h, "inter")
    area = Temp(BinOp("-", xmax, xmin) * BinOp("-", ymax, ymin), "area")
    area_i, area_j = _pairwise(area, 2), _pairwise(area, 1)
    union = Temp(BinOp("+", area_i, area_j) - inter, "union")
    conditions = [
        BinOp(">", inter_w, Lit(0)),
        BinOp(">", inter_h, Lit(0)),
        BinOp(">", inter, Lit(0)),
        BinOp(">", area_i, Lit(0)),
        BinOp(">", area_j, Lit(0)),
        BinOp(">", union, Lit(0)),
        BinOp(">", inter / union, iou_threshold),
    ]
    suppress = conditions[0]
    for condition in conditions[1:]:
        suppress = BinOp("&", suppress, condition)
    return Temp(ops.cast(suppress, DType("float32")), "suppress")


def _tensor(value, dtype: str):
    """A scalar tensor built in construct() (the NMS kernel takes no Python numbers)."""
    return ms.Tensor(Lit(value), DType(dtype))


def _threshold(ctx: NodeContext, index: int, default: float | None):
    """A threshold input as a float literal (constant) or as the run-time tensor; ``default`` when absent."""
    if not ctx.has_input(index):
        return None if default is None else Lit(default)
    value = ctx.const(index)
    if value is not None:
        if np.size(value) == 0:
            return None if default is None else Lit(default)
        return Lit(float(np.asarray(value).reshape(-1)[0]))
    return ops.cast(ops.reshape(Input(index), Lit(())), DType("float32"))


def _limit(ctx: NodeContext, num_boxes: int):
    """max_output_boxes_per_class as an int32 tensor clamped to [0, num_boxes]; None when it
    selects nothing (absent, empty or not positive)."""
    if not ctx.has_input(2):
        return None
    value = ctx.const(2)
    if value is None:
        clamped = ops.clamp(ops.reshape(Input(2), Lit(())), Lit(0), Lit(num_boxes))
        note = "the box limit is brought down to the box count (the kernel allocates per limit)"
        return Noted(ops.cast(clamped, DType("int32")), note)
    if np.size(value) and int(np.asarray(value).reshape(-1)[0]) > 0:
        return _tensor(min(int(np.asarray(value).reshape(-1)[0]), num_boxes), "int32")
    return None


def _selected_rows(suppress, keys, limit, half, zero, batch: int, klass: int):
    """One kernel call for a (batch, class) pair, as ``(batch, class, box)`` rows."""
    kernel = Cell(
        "ops.NonMaxSuppressionWithOverlaps",
        kwargs={},
        args=[suppress, keys, limit, half, zero],
        role="nms",
    )
    selected = Temp(ops.cast(kernel, DType("int64")), "selected")
    columns = [
        ops.full_like(selected, Lit(batch)),
        ops.full_like(selected, Lit(klass)),
        selected,
    ]
    return ops.stack(columns, axis=Lit(1))


def _in_blocks(corners, scores, limit, thresholds, pairs: tuple[int, int]):
    """One NonMaxSuppressionInBlocks cell per (batch, class) pair: boxes compared a block at a
    time (memory linear in the box count) where the count is known at run time or large."""
    iou_threshold, score_threshold = thresholds
    batches, classes = pairs
    no_threshold = Lit(None)
    rows = []
    for b in range(batches):
        for c in range(classes):
            cell = Cell(
                "NonMaxSuppressionInBlocks",
                kwargs={},
                args=[
                    *(Item(corner, (b,)) for corner in corners),
                    Item(scores, (b, c)),
                    limit,
                    iou_threshold,
                    no_threshold if score_threshold is None else score_threshold,
                ],
                role="nms",
            )
            selected = Temp(cell, "selected")
            columns = [
                ops.full_like(selected, Lit(b)),
                ops.full_like(selected, Lit(c)),
                selected,
            ]
            rows.append(ops.stack(columns, axis=Lit(1)))
    return rows[0] if len(rows) == 1 else ops.concat(rows, axis=Lit(0))


@mapper("NonMaxSuppression", since=10)
def non_max_suppression(ctx: NodeContext):
    """NonMaxSuppression -> ops.NonMaxSuppressionWithOverlaps per (batch, class) on an ONNX IoU mask.

    The suppression matrix (0/1: both boxes and their intersection have positive area and
    IoU > iou_threshold, computed with ops exactly as ONNX does) and priority keys from a stable
    descending sort (ties keep the lower box index first; -1 drops boxes at or below score_threshold)
    feed the kernel; the rows ``(batch, class, box)`` are concatenated in batch/class order.

    A box count known only at run time (boxes kept by an earlier step) is supported; batch and
    class counts must be static. Such a count, or one over DENSE_BOXES, goes to the script's
    NonMaxSuppressionInBlocks cell, which in PyNative mode compares the boxes one block at a
    time (memory linear in the count: SSDlite's 27000 candidates took tens of GB all at once). The output size depends on the data (dynamic shape): MindSpore
    runs it on CPU in PYNATIVE and GRAPH mode (tested). Tie order relies on ``ops.argsort`` being stable, which it is on CPU.
    At most MAX_NMS_PAIRS (batch, class) pairs, each one kernel call in construct().
    """
    center_point_box = int(ctx.attr("center_point_box", 0))
    if center_point_box not in (0, 1):
        raise Unsupported(
            f"NonMaxSuppression center_point_box={center_point_box} (ONNX allows 0 or 1)"
        )
    boxes_shape, scores_shape = ctx.require_shape(0), ctx.require_shape(1)
    # a box size left dynamic by shape inference is 4 (ONNX requires it)
    wrong_box_size = (
        len(boxes_shape) == 3 and isinstance(boxes_shape[2], int) and boxes_shape[2] != 4
    )
    if len(boxes_shape) != 3 or len(scores_shape) != 3 or wrong_box_size:
        raise Unsupported(
            f"NonMaxSuppression boxes {boxes_shape} / scores {scores_shape} are not "
            "[batches, boxes, 4] / [batches, classes, boxes]"
        )
    batches, num_boxes = boxes_shape[0], boxes_shape[1]
    classes = scores_shape[1]
    if any(not isinstance(d, int) or d < 0 for d in (batches, classes)):
        raise Unsupported("NonMaxSuppression needs static batch and class counts")
    known_boxes = isinstance(num_boxes, int)
    if not known_boxes:  # a box count known at run time only (the limit is clamped to it below)
        num_boxes = INT32_MAX
    empty = ops.zeros(Lit((0, 3)), DType("int64"))
    if batches * classes > MAX_NMS_PAIRS:
        raise Unsupported(
            f"NonMaxSuppression with {batches * classes} (batch, class) pairs "
            f"(at most {MAX_NMS_PAIRS} are unrolled into construct())"
        )

    limit = _limit(ctx, num_boxes)
    if limit is None or num_boxes == 0 or batches * classes == 0:
        return empty

    boxes = Input(0) if ctx.input_dtype(0) == np.float32 else ops.cast(Input(0), DType("float32"))
    scores = Input(1) if ctx.input_dtype(1) == np.float32 else ops.cast(Input(1), DType("float32"))
    iou_threshold = _threshold(ctx, 3, 0.0)
    score_threshold = _threshold(ctx, 4, None)

    if not known_boxes or num_boxes > DENSE_BOXES:
        corners = _corners(boxes, center_point_box)
        return _in_blocks(
            corners, scores, limit, (iou_threshold, score_threshold), (batches, classes)
        )
    suppress = _suppression_matrix(boxes, center_point_box, iou_threshold)
    # priority keys N - rank (distinct, so the kernel's own ordering cannot reorder ties); -1 drops a box
    order = ops.argsort(scores, axis=Lit(-1), descending=Lit(True))
    rank = ops.argsort(order, axis=Lit(-1))
    rank = Temp(ops.cast(rank, DType("float32")), "rank")
    if known_boxes:
        count = Lit(float(num_boxes))
    else:  # the kernel allocates for its limit: bring it down to the run-time box count
        count = Temp(ops.sum(ops.ones_like(Item(rank, (0, 0)))), "box_count")
        limit = ops.minimum(ops.cast(limit, DType("float32")), count)
        limit = Temp(ops.cast(limit, DType("int32")), "limit")
    keys = count - rank
    if score_threshold is not None:
        keys = ops.where(BinOp(">", scores, score_threshold), keys, Lit(-1.0))
    keys = Temp(keys, "keys")

    half, zero = Temp(_tensor(0.5, "float32"), "half"), Temp(_tensor(0.0, "float32"), "zero")
    rows = [
        _selected_rows(Item(suppress, b), Item(keys, (b, c)), limit, half, zero, b, c)
        for b in range(batches)
        for c in range(classes)
    ]
    return rows[0] if len(rows) == 1 else ops.concat(rows, axis=Lit(0))
