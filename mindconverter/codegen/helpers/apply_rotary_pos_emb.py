"""The script's ``apply_rotary_pos_emb`` helper, inlined by source where a converted network uses it."""

from .rotate_half import rotate_half


def apply_rotary_pos_emb(q, k, cos, sin):
    """Rotary position embeddings: the queries and the keys turned by the same tables."""
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
