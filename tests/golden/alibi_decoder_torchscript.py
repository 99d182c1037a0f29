# MindSpore network converted from tiny_bloom_torchscript.onnx by mindconverter 0.1.0.
# Source: ONNX opset 17, produced by pytorch 2.13.0.
# Converted for input shapes: input_ids: int64[Dim__batch___min_0__max_8_, Dim__sequence___min_0__max_16_]; attention_mask: int64[Dim__batch___min_0__max_8_, Dim__sequence___min_0__max_16_].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import math

import mindspore as ms
from mindspore import nn, ops


class SelfAttention(nn.Cell):
    """Recovered from model.h.0.self_attention."""

    def __init__(self):
        super().__init__()
        self.query_key_value = nn.Dense(in_channels=16, out_channels=48)
        self.dense = nn.Dense(in_channels=16, out_channels=16)

    def construct(self, hidden_states, alibi, attention_mask, residual):
        batch_size, seq_len, _ = hidden_states.shape
        shape = (batch_size, seq_len, 2, 3, 8)
        fused_qkv = ops.reshape(self.query_key_value(hidden_states), shape)
        q = fused_qkv[:, :, :, 0].swapaxes(1, 2)
        k = fused_qkv[:, :, :, 1].swapaxes(1, 2)
        v = fused_qkv[:, :, :, 2].swapaxes(1, 2)
        alibi_1 = ops.reshape(alibi, (batch_size, 2, 1, -1))
        scores = ops.matmul(q, k.swapaxes(-1, -2)) / math.sqrt(8)
        probs = ops.softmax(scores + alibi_1 + attention_mask, axis=-1)
        context = ops.matmul(probs, v)
        out = ops.reshape(context.swapaxes(1, 2), (batch_size, seq_len, 16))
        out = self.dense(out)
        residual = residual + out
        return residual


class MLP(nn.Cell):
    """Recovered from model.h.0.mlp."""

    def __init__(self):
        super().__init__()
        self.dense_h_to_4h = nn.Dense(in_channels=16, out_channels=64)
        self.gelu_impl = nn.GELU(approximate=True)
        self.dense_4h_to_h = nn.Dense(in_channels=64, out_channels=16)

    def construct(self, hidden_states, residual):
        hidden_states = self.dense_h_to_4h(hidden_states)
        hidden_states = self.gelu_impl(hidden_states)
        hidden_states = self.dense_4h_to_h(hidden_states)
        residual = residual + hidden_states
        return residual


class HBlock(nn.Cell):
    """Recovered from model.h.0."""

    def __init__(self):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)
        self.self_attention = SelfAttention()
        self.post_attention_layernorm = nn.LayerNorm(
            normalized_shape=(16,), epsilon=1e-05
        )
        self.mlp = MLP()

    def construct(self, hidden_states, alibi, attention_mask):
        x = self.input_layernorm(hidden_states)
        x = self.self_attention(x, alibi, attention_mask, hidden_states)
        out = self.post_attention_layernorm(x)
        return self.mlp(out, x)


class Model(nn.Cell):
    """Recovered from model."""

    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size=40, embedding_size=16)
        self.word_embeddings_layernorm = nn.LayerNorm(
            normalized_shape=(16,), epsilon=1e-05
        )
        self.h = nn.CellList([HBlock()])
        self.ln_f = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)

    def construct(self, input_ids, attention_mask):
        seq_len = input_ids.shape[1]
        x = self.word_embeddings(input_ids)
        out = self.word_embeddings_layernorm(x)
        cum_sum = ops.cumsum(attention_mask, 1)
        cum_sum = cum_sum - 1
        cum_sum = cum_sum * attention_mask
        cum_sum = ops.unsqueeze(cum_sum, dim=1)
        cum_sum = ops.cast(cum_sum, ms.float32)
        alibi = ms.Tensor([[0.0625], [0.00390625]], ms.float32) * cum_sum
        cast = ops.cast(attention_mask, ms.bool_)
        range_ = ops.arange(0, seq_len, 1)
        range_1 = ops.arange(0, seq_len, 1)
        range_ = range_[None, None, :, None]
        range_1 = range_1[None, None, None, :]
        less_or_equal = range_1 <= range_
        cast = cast[:, None, None, :]
        and_ = ops.logical_and(less_or_equal, cast)
        attention_mask_1 = ops.where(and_, 0.0, -3.4028235e38)
        for layer in self.h:
            out = layer(out, alibi, attention_mask_1)
        return self.ln_f(out)


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
