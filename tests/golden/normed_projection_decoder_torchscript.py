# MindSpore network converted from tiny_olmo2_torchscript.onnx by mindconverter 0.1.0.
# Source: ONNX opset 17, produced by pytorch 2.13.0.
# Converted for input shapes: input_ids: int64[batch, sequence]; attention_mask: int64[batch, sequence].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import math

import mindspore as ms
from mindspore import Parameter, nn, ops


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


class RMSNorm(nn.Cell):
    """Root-mean-square norm over the last axis, as Llama-family models write it:
    ``x / sqrt(mean(x**2) + eps) * weight`` (MindSpore's ops.rms_norm has no CPU kernel)."""

    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = Parameter(ops.ones(hidden_size, ms.float32))
        self.eps = eps

    def construct(self, hidden_states):
        variance = ops.mean(hidden_states * hidden_states, -1, keep_dims=True)
        return self.weight * (hidden_states * ops.rsqrt(variance + self.eps))


def rotate_half(x):
    """Rotary position embeddings' half turn: the last axis' halves swapped, the new first half
    negated."""
    half = x.shape[-1] // 2
    return ops.concat((-x[..., half:], x[..., :half]), axis=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    """Rotary position embeddings: the queries and the keys turned by the same tables."""
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class SelfAttention(nn.Cell):
    """Recovered from model.layers.0.self_attn, model.layers.1.self_attn."""

    def __init__(self):
        super().__init__()
        self.q_proj = nn.Dense(in_channels=16, out_channels=16, has_bias=False)
        self.q_norm = RMSNorm(hidden_size=16, eps=1e-05)
        self.k_proj = nn.Dense(in_channels=16, out_channels=16, has_bias=False)
        self.k_norm = RMSNorm(hidden_size=16, eps=1e-05)
        self.v_proj = nn.Dense(in_channels=16, out_channels=16, has_bias=False)
        self.o_proj = nn.Dense(in_channels=16, out_channels=16, has_bias=False)

    def construct(self, hidden_states, cos, sin, attention_mask):
        batch_size, seq_len, _ = hidden_states.shape
        shape = (batch_size, seq_len, -1, 8)
        q = ops.reshape(self.q_norm(self.q_proj(hidden_states)), shape).swapaxes(1, 2)
        k = ops.reshape(self.k_norm(self.k_proj(hidden_states)), shape).swapaxes(1, 2)
        v = ops.reshape(self.v_proj(hidden_states), shape).swapaxes(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        scores = ops.matmul(q, k.swapaxes(-1, -2)) / math.sqrt(8)
        probs = masked_softmax(scores, attention_mask)
        context = ops.matmul(probs, v)
        x = ops.reshape(context.swapaxes(1, 2), (batch_size, seq_len, -1))
        return self.o_proj(x)


class MLP(nn.Cell):
    """Recovered from model.layers.0.mlp, model.layers.1.mlp."""

    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Dense(in_channels=16, out_channels=32, has_bias=False)
        self.up_proj = nn.Dense(in_channels=16, out_channels=32, has_bias=False)
        self.down_proj = nn.Dense(in_channels=32, out_channels=16, has_bias=False)

    def construct(self, hidden_states):
        gate_proj = self.gate_proj(hidden_states)
        gate_proj = ops.silu(gate_proj)
        up_proj = self.up_proj(hidden_states)
        gate_proj = gate_proj * up_proj
        return self.down_proj(gate_proj)


class Layer(nn.Cell):
    """Recovered from model.layers.0, model.layers.1."""

    def __init__(self):
        super().__init__()
        self.self_attn = SelfAttention()
        self.post_attention_layernorm = RMSNorm(hidden_size=16, eps=1e-05)
        self.mlp = MLP()
        self.post_feedforward_layernorm = RMSNorm(hidden_size=16, eps=1e-05)

    def construct(self, hidden_states, cos, sin, attention_mask):
        x = self.self_attn(hidden_states, cos, sin, attention_mask)
        x = self.post_attention_layernorm(x)
        out = hidden_states + x
        mlp = self.mlp(out)
        mlp = self.post_feedforward_layernorm(mlp)
        add = out + mlp
        return add


class Model(nn.Cell):
    """Recovered from model."""

    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size=40, embedding_size=16)
        self.layers = nn.CellList([Layer(), Layer()])
        self.norm = RMSNorm(hidden_size=16, eps=1e-05)

    def construct(self, input_ids, attention_mask):
        seq_len = input_ids.shape[1]
        x = self.embed_tokens(input_ids)
        out = ops.arange(0, seq_len, 1)
        attention_mask = ops.cast(attention_mask, ms.bool_)
        range_ = ops.arange(0, seq_len, 1)
        unsqueeze = out[None, None, :, None]
        range_ = range_[None, None, None, :]
        less_or_equal = range_ <= unsqueeze
        unsqueeze_1 = attention_mask[:, None, None, :]
        attention_mask_1 = ops.logical_and(less_or_equal, unsqueeze_1)
        rotary_emb = out[None, :, None]
        rotary_emb = ops.cast(rotary_emb, ms.float32)
        rotary_emb = rotary_emb * ms.Tensor([1.0, 0.1, 0.01, 0.001], ms.float32)
        rotary_emb_1 = ops.concat((rotary_emb, rotary_emb), axis=-1)
        cos = ops.cos(rotary_emb_1)
        sin = ops.sin(rotary_emb_1)
        cos = ops.unsqueeze(cos, dim=1)
        sin = ops.unsqueeze(sin, dim=1)
        for layer in self.layers:
            x = layer(x, cos, sin, attention_mask_1)
        return self.norm(x)


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        input_ids: int64[batch, sequence]
        attention_mask: int64[batch, sequence]
    Outputs:
        output: float32[batch, sequence, 16]
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
