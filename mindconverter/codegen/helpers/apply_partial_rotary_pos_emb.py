"""The script's ``apply_partial_rotary_pos_emb`` helper, inlined by source where a converted network uses it."""

from mindspore import ops

from .rotate_half import rotate_half


def apply_partial_rotary_pos_emb(q, k, cos, sin, rotary_dim):
    """Rotary position embeddings on the first ``rotary_dim`` features of each head; the rest
    pass through unchanged (GPT-NeoX's ``rotary_pct``)."""
    q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
    k_rot, k_pass = k[..., :rotary_dim], k[..., rotary_dim:]
    q_rot = q_rot * cos + rotate_half(q_rot) * sin
    k_rot = k_rot * cos + rotate_half(k_rot) * sin
    return ops.concat((q_rot, q_pass), axis=-1), ops.concat((k_rot, k_pass), axis=-1)
