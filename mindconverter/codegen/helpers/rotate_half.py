"""The script's ``rotate_half`` helper, inlined by source where a converted network uses it."""

from mindspore import ops


def rotate_half(x):
    """Rotary position embeddings' half turn: the last axis' halves swapped, the new first half
    negated."""
    half = x.shape[-1] // 2
    return ops.concat((-x[..., half:], x[..., :half]), axis=-1)
