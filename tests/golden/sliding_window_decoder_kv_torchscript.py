# MindSpore network converted from tiny_gemma2_kv_torchscript.onnx by mindconverter 0.1.0.
# Source: ONNX opset 17, produced by pytorch 2.13.0.
# Converted for input shapes: input_ids: int64[batch, sequence]; attention_mask: int64[batch, total]; past_key_0: float32[batch, 1, past, 8]; past_value_0: float32[batch, 1, past, 8]; past_key_1: float32[batch, 1, past, 8]; past_value_1: float32[batch, 1, past, 8].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
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
    """Recovered from model.model.layers.0.self_attn, model.model.layers.1.self_attn."""

    def __init__(self):
        super().__init__()
        self.q_proj = nn.Dense(in_channels=16, out_channels=16, has_bias=False)
        self.k_proj = nn.Dense(in_channels=16, out_channels=8, has_bias=False)
        self.v_proj = nn.Dense(in_channels=16, out_channels=8, has_bias=False)
        self.o_proj = nn.Dense(in_channels=16, out_channels=16, has_bias=False)

    def construct(self, hidden_states, cos, sin, past_key, past_value, attention_mask):
        batch_size, seq_len, _ = hidden_states.shape
        shape = (batch_size, seq_len, -1, 8)
        q = ops.reshape(self.q_proj(hidden_states), shape).swapaxes(1, 2)
        k = ops.reshape(self.k_proj(hidden_states), shape).swapaxes(1, 2)
        v = ops.reshape(self.v_proj(hidden_states), shape).swapaxes(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        k = ops.concat((past_key, k), axis=-2)
        v = ops.concat((past_value, v), axis=-2)
        k_1 = ops.repeat_interleave(k, 2, axis=1)
        scores = ops.tanh(ops.matmul(q, k_1.swapaxes(-1, -2)) * 0.0625 / 50.0) * 50.0
        probs = ops.softmax(scores + attention_mask, axis=-1)
        context = ops.matmul(probs, ops.repeat_interleave(v, 2, axis=1))
        x = ops.reshape(context.swapaxes(1, 2), (batch_size, seq_len, -1))
        return k, v, self.o_proj(x)


class MLP(nn.Cell):
    """Recovered from model.model.layers.0.mlp, model.model.layers.1.mlp."""

    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Dense(in_channels=16, out_channels=32, has_bias=False)
        self.act_fn = nn.GELU(approximate=True)
        self.up_proj = nn.Dense(in_channels=16, out_channels=32, has_bias=False)
        self.down_proj = nn.Dense(in_channels=32, out_channels=16, has_bias=False)

    def construct(self, hidden_states):
        gate_proj = self.gate_proj(hidden_states)
        gate_proj = self.act_fn(gate_proj)
        up_proj = self.up_proj(hidden_states)
        gate_proj = gate_proj * up_proj
        return self.down_proj(gate_proj)


class Layer(nn.Cell):
    """Recovered from model.model.layers.0, model.model.layers.1."""

    def __init__(self):
        super().__init__()
        self.input_layernorm = RMSNorm(hidden_size=16, eps=1e-06)
        self.self_attn = SelfAttention()
        self.post_attention_layernorm = RMSNorm(hidden_size=16, eps=1e-06)
        self.pre_feedforward_layernorm = RMSNorm(hidden_size=16, eps=1e-06)
        self.mlp = MLP()
        self.post_feedforward_layernorm = RMSNorm(hidden_size=16, eps=1e-06)

    def construct(self, hidden_states, cos, sin, past_key, past_value, attention_mask):
        x = self.input_layernorm(hidden_states)
        present_key, present_value, self_attn = self.self_attn(
            x, cos, sin, past_key, past_value, attention_mask
        )
        self_attn = self.post_attention_layernorm(self_attn)
        out = hidden_states + self_attn
        pre_feedforward_layernorm = self.pre_feedforward_layernorm(out)
        pre_feedforward_layernorm = self.mlp(pre_feedforward_layernorm)
        pre_feedforward_layernorm = self.post_feedforward_layernorm(
            pre_feedforward_layernorm
        )
        add = out + pre_feedforward_layernorm
        return present_key, present_value, add


class Model(nn.Cell):
    """Recovered from model.model."""

    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size=40, embedding_size=16)
        self.layers = nn.CellList([Layer(), Layer()])
        self.norm = RMSNorm(hidden_size=16, eps=1e-06)

    def construct(
        self,
        past_key_1,
        past_key_0,
        past_value_0,
        past_value_1,
        input_ids,
        attention_mask,
    ):
        seq_len = input_ids.shape[1]
        past_key_1_len = past_key_1.shape[2]
        x = self.embed_tokens(input_ids)
        x = x * 4.0
        out = ops.arange(0, seq_len, 1)
        size = ops.scalar_to_tensor(past_key_1_len, ms.int64)
        add = out + size
        attention_mask = ops.cast(attention_mask, ms.bool_)
        size_1 = past_key_1_len + seq_len
        add_1 = out + size
        range_ = ops.arange(0, size_1, 1)
        add_1 = add_1[None, None, :, None]
        unsqueeze = range_[None, None, None, :]
        less_or_equal = unsqueeze <= add_1
        unsqueeze_1 = attention_mask[:, None, None, :]
        and_ = ops.logical_and(less_or_equal, unsqueeze_1)
        attention_mask_1 = ops.where(and_, 0.0, -3.4028235e38)
        size_2 = ops.shape(range_)[0]
        range_1 = ops.arange(0, size_2, 1)
        unsqueeze_2 = add[None, None, :, None]
        range_1 = range_1[None, None, None, :]
        sub = unsqueeze_2 - 4096
        greater = range_1 > sub
        less_or_equal_1 = range_1 <= unsqueeze_2
        greater = ops.logical_and(greater, less_or_equal_1)
        unsqueeze_3 = attention_mask[:, None, None, :]
        and_1 = ops.logical_and(greater, unsqueeze_3)
        attention_mask_2 = ops.where(and_1, 0.0, -3.4028235e38)
        rotary_emb = add[None, :, None]
        rotary_emb = ops.cast(rotary_emb, ms.float32)
        rotary_emb = rotary_emb * ms.Tensor([1.0, 0.1, 0.01, 0.001], ms.float32)
        rotary_emb_1 = ops.concat((rotary_emb, rotary_emb), axis=-1)
        cos = ops.cos(rotary_emb_1)
        sin = ops.sin(rotary_emb_1)
        cos = ops.unsqueeze(cos, dim=1)
        sin = ops.unsqueeze(sin, dim=1)
        past_keys = (past_key_0, past_key_1)
        past_values = (past_value_0, past_value_1)
        attention_masks = (attention_mask_2, attention_mask_1)
        present_keys = ()
        present_values = ()
        for layer, past_key, past_value, attention_mask_3 in zip(
            self.layers, past_keys, past_values, attention_masks
        ):
            present_key, present_value, x = layer(
                x, cos, sin, past_key, past_value, attention_mask_3
            )
            present_keys += (present_key,)
            present_values += (present_value,)
        slice_ = present_keys[0][:, :, -4095:]
        slice_1 = present_values[0][:, :, -4095:]
        return present_keys[1], present_values[1], slice_, slice_1, self.norm(x)


class Model2(nn.Cell):
    """Recovered from model."""

    def __init__(self):
        super().__init__()
        self.model = Model()
        self.lm_head = nn.Dense(in_channels=16, out_channels=40, has_bias=False)

    def construct(
        self,
        past_key_1,
        past_key_0,
        past_value_0,
        past_value_1,
        input_ids,
        attention_mask,
    ):
        present_key_1, present_value_1, x, model, model_1 = self.model(
            past_key_1,
            past_key_0,
            past_value_0,
            past_value_1,
            input_ids,
            attention_mask,
        )
        model_1 = self.lm_head(model_1)
        model_1 = model_1 / 30.0
        model_1 = ops.tanh(model_1)
        model_1 = model_1 * 30.0
        return present_key_1, present_value_1, x, model, model_1


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        input_ids: int64[batch, sequence]
        attention_mask: int64[batch, total]
        past_key_0: float32[batch, 1, past, 8]
        past_value_0: float32[batch, 1, past, 8]
        past_key_1: float32[batch, 1, past, 8]
        past_value_1: float32[batch, 1, past, 8]
    Outputs:
        logits: float32[batch, sequence, 40]
        present_key_0: float32[batch, 1, 4095, 8]
        present_value_0: float32[batch, 1, 4095, 8]
        present_key_1: float32[batch, 1, past + sequence, 8]
        present_value_1: float32[batch, 1, past + sequence, 8]
    """

    def __init__(self):
        super().__init__()
        self.model = Model2()
        self.model.lm_head.weight = self.model.model.embed_tokens.embedding_table

    def construct(
        self,
        input_ids,
        attention_mask,
        past_key_0,
        past_value_0,
        past_key_1,
        past_value_1,
    ):
        x = past_key_0[:, :, -4095:]
        out = past_value_0[:, :, -4095:]
        present_key_1, present_value_1, present_key_0, present_value_0, logits = (
            self.model(past_key_1, x, out, past_value_1, input_ids, attention_mask)
        )
        return logits, present_key_0, present_value_0, present_key_1, present_value_1


def dynamic_inputs():
    """The inputs with their dynamic dimensions (None), for GRAPH_MODE:
    ``net.set_inputs(*dynamic_inputs())`` compiles one graph for every size."""
    return (
        ms.Tensor(shape=[None, None], dtype=ms.int64),
        ms.Tensor(shape=[None, None], dtype=ms.int64),
        ms.Tensor(shape=[None, 1, None, 8], dtype=ms.float32),
        ms.Tensor(shape=[None, 1, None, 8], dtype=ms.float32),
        ms.Tensor(shape=[None, 1, None, 8], dtype=ms.float32),
        ms.Tensor(shape=[None, 1, None, 8], dtype=ms.float32),
    )
