"""The script's ``apply_partial_interleaved_rotary_pos_emb`` helper, inlined by source where a converted network uses it."""

from mindspore import ops

from .rotate_every_two import rotate_every_two


def apply_partial_interleaved_rotary_pos_emb(q, k, cos, sin, rotary_dim):
    """Rotary position embeddings on interleaved pairs of the first ``rotary_dim`` features of
    each head; the rest pass through unchanged (GPT-J's ``rotary_dim``)."""
    q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
    k_rot, k_pass = k[..., :rotary_dim], k[..., rotary_dim:]
    q_rot = q_rot * cos + rotate_every_two(q_rot) * sin
    k_rot = k_rot * cos + rotate_every_two(k_rot) * sin
    return ops.concat((q_rot, q_pass), axis=-1), ops.concat((k_rot, k_pass), axis=-1)
