# MindSpore network converted from tiny_gptj_torchscript.onnx by mindconverter 0.1.0.
# Source: ONNX opset 17, produced by pytorch 2.13.0.
# Converted for input shapes: input_ids: int64[Dim__batch___min_0__max_8_, Dim__sequence___min_0__max_16_]; attention_mask: int64[Dim__batch___min_0__max_8_, Dim__sequence___min_0__max_16_].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import math

import mindspore as ms
from mindspore import nn, ops


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


def rotate_every_two(x):
    """Rotary position embeddings' turn of interleaved pairs (GPT-J): each pair (a, b) of the
    last axis becomes (-b, a)."""
    return ops.stack((-x[..., 1::2], x[..., ::2]), axis=-1).flatten(start_dim=-2)


def apply_partial_interleaved_rotary_pos_emb(q, k, cos, sin, rotary_dim):
    """Rotary position embeddings on interleaved pairs of the first ``rotary_dim`` features of
    each head; the rest pass through unchanged (GPT-J's ``rotary_dim``)."""
    q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
    k_rot, k_pass = k[..., :rotary_dim], k[..., rotary_dim:]
    q_rot = q_rot * cos + rotate_every_two(q_rot) * sin
    k_rot = k_rot * cos + rotate_every_two(k_rot) * sin
    return ops.concat((q_rot, q_pass), axis=-1), ops.concat((k_rot, k_pass), axis=-1)


class Attention(nn.Cell):
    """Recovered from model.h.0.attn, model.h.1.attn."""

    def __init__(self):
        super().__init__()
        self.q_proj = nn.Dense(in_channels=16, out_channels=16, has_bias=False)
        self.k_proj = nn.Dense(in_channels=16, out_channels=16, has_bias=False)
        self.v_proj = nn.Dense(in_channels=16, out_channels=16, has_bias=False)
        self.out_proj = nn.Dense(in_channels=16, out_channels=16, has_bias=False)

    def construct(self, hidden_states, cos, sin, attention_mask):
        batch_size, seq_len, _ = hidden_states.shape
        shape = (batch_size, seq_len, -1, 8)
        q = ops.reshape(self.q_proj(hidden_states), shape).swapaxes(1, 2)
        k = ops.reshape(self.k_proj(hidden_states), shape).swapaxes(1, 2)
        v = ops.reshape(self.v_proj(hidden_states), shape).swapaxes(1, 2)
        q, k = apply_partial_interleaved_rotary_pos_emb(q, k, cos, sin, 4)
        scores = ops.matmul(q, k.swapaxes(-1, -2)) / math.sqrt(8)
        probs = masked_softmax(scores, attention_mask)
        context = ops.matmul(probs, v)
        x = ops.reshape(context.swapaxes(1, 2), (batch_size, seq_len, -1))
        return self.out_proj(x)


class MLP(nn.Cell):
    """Recovered from model.h.0.mlp, model.h.1.mlp."""

    def __init__(self):
        super().__init__()
        self.fc_in = nn.Dense(in_channels=16, out_channels=64)
        self.act = nn.GELU(approximate=True)
        self.fc_out = nn.Dense(in_channels=64, out_channels=16)

    def construct(self, hidden_states):
        hidden_states = self.fc_in(hidden_states)
        hidden_states = self.act(hidden_states)
        return self.fc_out(hidden_states)


class HBlock(nn.Cell):
    """Recovered from model.h.0, model.h.1."""

    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)
        self.attn = Attention()
        self.mlp = MLP()

    def construct(self, hidden_states, cos, sin, attention_mask):
        x = self.ln_1(hidden_states)
        attn = self.attn(x, cos, sin, attention_mask)
        x = self.mlp(x)
        attn = attn + x
        attn = attn + hidden_states
        return attn


class Model(nn.Cell):
    """Recovered from model."""

    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(vocab_size=40, embedding_size=16)
        self.rotary_emb = nn.Embedding(vocab_size=32, embedding_size=4)
        self.h = nn.CellList([HBlock(), HBlock()])
        self.ln_f = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)

    def construct(self, input_ids, attention_mask):
        seq_len = input_ids.shape[1]
        x = self.wte(input_ids)
        out = ops.arange(0, seq_len, 1)
        unsqueeze = ops.unsqueeze(out, dim=0)
        attention_mask = ops.cast(attention_mask, ms.bool_)
        range_ = ops.arange(0, seq_len, 1)
        unsqueeze_1 = out[None, None, :, None]
        range_ = range_[None, None, None, :]
        less_or_equal = range_ <= unsqueeze_1
        attention_mask = attention_mask[:, None, None, :]
        attention_mask_1 = ops.logical_and(less_or_equal, attention_mask)
        rotary_emb = self.rotary_emb(unsqueeze)
        rotary_emb_1, rotary_emb_2 = ops.split(rotary_emb, 2, axis=2)
        rotary_emb_1 = rotary_emb_1[:, :, None, :, None]
        rotary_emb_1 = ops.tile(rotary_emb_1, (1, 1, 1, 1, 2))
        shape = (1, seq_len, 1, -1)
        sin = ops.reshape(rotary_emb_1, shape).swapaxes(1, 2)
        rotary_emb_2 = rotary_emb_2[:, :, None, :, None]
        rotary_emb_2 = ops.tile(rotary_emb_2, (1, 1, 1, 1, 2))
        cos = ops.reshape(rotary_emb_2, shape).swapaxes(1, 2)
        for layer in self.h:
            x = layer(x, cos, sin, attention_mask_1)
        return self.ln_f(x)


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        input_ids: int64[Dim__batch___min_0__max_8_, Dim__sequence___min_0__max_16_]
        attention_mask: int64[Dim__batch___min_0__max_8_, Dim__sequence___min_0__max_16_]
    Outputs:
        output: float32[Dim__batch___min_0__max_8_, Dim__sequence___min_0__max_16_, 16]
    """

    def __init__(self):
        super().__init__()
        self.model = Model()

    def construct(self, input_ids, attention_mask):
        output = self.model(input_ids, attention_mask)
        return output


def dynamic_inputs():
    """The inputs with their dynamic dimensions (None), for GRAPH_MODE:
    ``net.set_inputs(*dynamic_inputs())`` compiles one graph for every size."""
    return (
        ms.Tensor(shape=[None, None], dtype=ms.int64),
        ms.Tensor(shape=[None, None], dtype=ms.int64),
    )
