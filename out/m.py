# MindSpore network converted from m.onnx by mindconverter 0.1.0.
# Source: ONNX opset 13, produced by mindconverter-tests.
# Converted for input shapes: b: float32[1, 300, 4]; s: float32[1, 1, 300].
# The network has no weights (its checkpoint is empty, nothing to load):
#     net = MindSporeModel()
import mindspore as ms
from mindspore import nn, ops


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        b: float32[1, 300, 4]
        s: float32[1, 1, 300]
    Outputs:
        sel: int64[unk__0, 3]
        v: float32[1, 1, 200]
        i: int64[1, 1, 200]
    """

    def __init__(self):
        super().__init__()
        self.nms = ops.NonMaxSuppressionWithOverlaps()

    def construct(self, b, s):
        xmax = ops.maximum(b[..., 1], b[..., 3])
        xmin = ops.minimum(b[..., 1], b[..., 3])
        inter_w = ops.minimum(ops.unsqueeze(xmax, 2), ops.unsqueeze(xmax, 1)) - ops.maximum(
            ops.unsqueeze(xmin, 2), ops.unsqueeze(xmin, 1)
        )
        ymax = ops.maximum(b[..., 0], b[..., 2])
        ymin = ops.minimum(b[..., 0], b[..., 2])
        inter_h = ops.minimum(ops.unsqueeze(ymax, 2), ops.unsqueeze(ymax, 1)) - ops.maximum(
            ops.unsqueeze(ymin, 2), ops.unsqueeze(ymin, 1)
        )
        inter = inter_w * inter_h
        area = (xmax - xmin) * (ymax - ymin)
        union = ops.unsqueeze(area, 2) + ops.unsqueeze(area, 1) - inter
        suppress = ops.cast(
            (inter_w > 0)
            & (inter_h > 0)
            & (inter > 0)
            & (ops.unsqueeze(area, 2) > 0)
            & (ops.unsqueeze(area, 1) > 0)
            & (union > 0)
            & (inter / union > 0.5),
            ms.float32,
        )
        rank = ops.cast(ops.argsort(ops.argsort(s, axis=-1, descending=True), axis=-1), ms.float32)
        keys = 300.0 - rank
        half = ms.Tensor(0.5, ms.float32)
        zero = ms.Tensor(0.0, ms.float32)
        selected = ops.cast(
            self.nms(suppress[0], keys[0, 0], ms.Tensor(300, ms.int32), half, zero), ms.int64
        )
        sel = ops.stack([ops.full_like(selected, 0), ops.full_like(selected, 0), selected], axis=1)
        top = ops.topk(s, 200, dim=2)
        v = top[0]
        i = ops.cast(top[1], ms.int64)
        return sel, v, i
