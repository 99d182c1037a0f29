"""The script's ``masked_softmax`` helper, inlined by source where a converted network uses it."""

import math

import mindspore as ms
from mindspore import ops


def masked_softmax(scores, mask):
    """Softmax of ``scores + mask`` over the last axis (a boolean mask marks the positions to
    keep); a row the mask hides entirely gives zeros, as PyTorch's scaled_dot_product_attention
    does."""
    if mask.dtype == ms.bool_:
        mask = ops.where(mask, 0.0, -math.inf)
    # MindSpore's softmax zeroes the whole tensor when a row is all -inf: such rows give 0 here
    masked_rows = ops.amax(mask, -1, keepdims=True) == -math.inf
    probs = ops.softmax(ops.where(masked_rows, 0.0, scores + mask), axis=-1)
    return ops.where(masked_rows, 0.0, probs)
