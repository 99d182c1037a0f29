# MindSpore network converted from tiny_llama_torchscript.onnx by mindconverter 0.1.0.
# Source: ONNX opset 17, produced by pytorch 2.13.0.
# Converted for input shapes: input_ids: int64[batch, sequence]; past_keys: float32[2, batch, 2, past, 4]; past_values: float32[2, batch, 2, past, 4].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import math

import mindspore as ms
from mindspore import Parameter, nn, ops


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
    """Recovered from layers.0.self_attn, layers.1.self_attn."""

    def __init__(self):
        super().__init__()
        self.q_proj = nn.Dense(in_channels=16, out_channels=16, has_bias=False)
        self.k_proj = nn.Dense(in_channels=16, out_channels=8, has_bias=False)
        self.v_proj = nn.Dense(in_channels=16, out_channels=8, has_bias=False)
        self.o_proj = nn.Dense(in_channels=16, out_channels=16, has_bias=False)

    def construct(self, hidden_states, cos, sin, past_key, past_value, attention_mask):
        batch_size, seq_len, _ = hidden_states.shape
        shape = (batch_size, seq_len, 4, 4)
        q = ops.reshape(self.q_proj(hidden_states), shape).swapaxes(1, 2)
        shape_1 = (batch_size, seq_len, 2, 4)
        k = ops.reshape(self.k_proj(hidden_states), shape_1).swapaxes(1, 2)
        v = ops.reshape(self.v_proj(hidden_states), shape_1).swapaxes(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        k = ops.concat((past_key, k), axis=2)
        v = ops.concat((past_value, v), axis=2)
        k_1 = ops.repeat_interleave(k, 2, axis=1)
        scores = ops.matmul(q, k_1.swapaxes(-1, -2)) / math.sqrt(4)
        probs = ops.softmax(scores + attention_mask, axis=-1)
        context = ops.matmul(probs, ops.repeat_interleave(v, 2, axis=1))
        x = ops.reshape(context.swapaxes(1, 2), (batch_size, seq_len, -1))
        return k, v, self.o_proj(x)


class Layer(nn.Cell):
    """Recovered from layers.0, layers.1."""

    def __init__(self):
        super().__init__()
        self.input_layernorm = RMSNorm(hidden_size=16, eps=1e-06)
        self.self_attn = SelfAttention()
        self.post_attention_layernorm = RMSNorm(hidden_size=16, eps=1e-06)
        self.gate_proj = nn.Dense(in_channels=16, out_channels=32, has_bias=False)
        self.up_proj = nn.Dense(in_channels=16, out_channels=32, has_bias=False)
        self.down_proj = nn.Dense(in_channels=32, out_channels=16, has_bias=False)

    def construct(self, hidden_states, cos, sin, past_key, past_value, attention_mask):
        x = self.input_layernorm(hidden_states)
        present_key, present_value, self_attn = self.self_attn(
            x, cos, sin, past_key, past_value, attention_mask
        )
        out = hidden_states + self_attn
        post_attention_layernorm = self.post_attention_layernorm(out)
        gate_proj = self.gate_proj(post_attention_layernorm)
        gate_proj = ops.silu(gate_proj)
        up_proj = self.up_proj(post_attention_layernorm)
        gate_proj = gate_proj * up_proj
        gate_proj = self.down_proj(gate_proj)
        add = out + gate_proj
        return present_key, present_value, add


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        input_ids: int64[batch, sequence]
        past_keys: float32[2, batch, 2, past, 4]
        past_values: float32[2, batch, 2, past, 4]
    Outputs:
        logits: float32[batch, sequence, 48]
        present_keys: float32[2, batch, 2, past + sequence, 4]
        present_values: float32[2, batch, 2, past + sequence, 4]
    """

    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size=48, embedding_size=16)
        self.layers = nn.CellList([Layer(), Layer()])
        self.norm = RMSNorm(hidden_size=16, eps=1e-06)
        self.lm_head = nn.Dense(in_channels=16, out_channels=48, has_bias=False)

    def construct(self, input_ids, past_keys, past_values):
        sequence = input_ids.shape[1]
        past = past_keys.shape[3]
        size = ops.scalar_to_tensor(past, ms.int64)
        size_1 = past + sequence
        x = ops.arange(size, size_1, 1)
        x = ops.cast(x, ms.float32)
        x = ops.unsqueeze(x, dim=1)
        x = x * ms.Tensor([[1.0, 0.01]], ms.float32)
        out = ops.concat((x, x), axis=-1)
        cos = ops.cos(out)
        cos = cos[None, None, :, :]
        sin = ops.sin(out)
        sin = sin[None, None, :, :]
        range_ = ops.arange(0, sequence, 1)
        range_ = ops.unsqueeze(range_, dim=1)
        range_ = range_ + size
        range_1 = ops.arange(0, size_1, 1)
        range_1 = ops.unsqueeze(range_1, dim=0)
        causal_mask = range_1 <= range_
        causal_mask = ops.where(causal_mask, 0.0, -3.4028235e38)
        causal_mask = causal_mask[None, None, :, :]
        embed_tokens = self.embed_tokens(input_ids)
        gather = past_keys[0]
        gather_1 = past_values[0]
        gather_2 = past_keys[1]
        gather_3 = past_values[1]
        past_key_per_layer = (gather, gather_2)
        past_value_per_layer = (gather_1, gather_3)
        present_key_per_layer = ()
        present_value_per_layer = ()
        for layer, past_key, past_value in zip(
            self.layers, past_key_per_layer, past_value_per_layer
        ):
            present_key, present_value, embed_tokens = layer(
                embed_tokens, cos, sin, past_key, past_value, causal_mask
            )
            present_key_per_layer += (present_key,)
            present_value_per_layer += (present_value,)
        embed_tokens = self.norm(embed_tokens)
        logits = self.lm_head(embed_tokens)
        unsqueeze = ops.unsqueeze(present_key_per_layer[0], dim=0)
        unsqueeze_1 = ops.unsqueeze(present_key_per_layer[1], dim=0)
        present_keys = ops.concat((unsqueeze, unsqueeze_1), axis=0)
        unsqueeze_2 = ops.unsqueeze(present_value_per_layer[0], dim=0)
        unsqueeze_3 = ops.unsqueeze(present_value_per_layer[1], dim=0)
        present_values = ops.concat((unsqueeze_2, unsqueeze_3), axis=0)
        return logits, present_keys, present_values


def dynamic_inputs():
    """The inputs with their dynamic dimensions (None), for GRAPH_MODE:
    ``net.set_inputs(*dynamic_inputs())`` compiles one graph for every size."""
    return (
        ms.Tensor(shape=[None, None], dtype=ms.int64),
        ms.Tensor(shape=[2, None, 2, None, 4], dtype=ms.float32),
        ms.Tensor(shape=[2, None, 2, None, 4], dtype=ms.float32),
    )
