"""The script's ``rotate_every_two`` helper, inlined by source where a converted network uses it."""

from mindspore import ops


def rotate_every_two(x):
    """Rotary position embeddings' turn of interleaved pairs (GPT-J): each pair (a, b) of the
    last axis becomes (-b, a)."""
    return ops.stack((-x[..., 1::2], x[..., ::2]), axis=-1).flatten(start_dim=-2)
