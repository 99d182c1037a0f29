"""The script's ``apply_rotary_pos_emb`` taking ``unsqueeze_dim``, inlined by source on use."""

from .rotate_half import rotate_half


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=None):
    """Rotary position embeddings: the queries and the keys turned by the same tables (given
    an ``unsqueeze_dim``, tables without the heads axis get it there)."""
    if unsqueeze_dim is not None:
        cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
