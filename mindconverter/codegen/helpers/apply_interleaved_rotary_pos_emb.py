"""The script's ``apply_interleaved_rotary_pos_emb`` helper, inlined by source where a converted network uses it."""

from .rotate_every_two import rotate_every_two


def apply_interleaved_rotary_pos_emb(q, k, cos, sin):
    """Rotary position embeddings on interleaved pairs (GPT-J): the queries and the keys turned
    by the same tables."""
    return q * cos + rotate_every_two(q) * sin, k * cos + rotate_every_two(k) * sin
