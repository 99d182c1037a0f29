# MindSpore network converted from tiny_bloom_dynamo.onnx by mindconverter 0.1.0.
# Source: ONNX opset 18, produced by pytorch 2.13.0+cpu.
# Converted for input shapes: input_ids: int64[2, 5]; attention_mask: int64[2, 5].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import math

import mindspore as ms
from mindspore import Parameter, nn, ops


class BloomAttention(nn.Cell):
    """Recovered from model.h.0.self_attention."""

    def __init__(self):
        super().__init__()
        self.query_key_value = nn.Dense(in_channels=16, out_channels=48)
        self.dense = nn.Dense(in_channels=16, out_channels=16)

    def construct(self, hidden_states, alibi, attention_mask, residual):
        fused_qkv = ops.reshape(self.query_key_value(hidden_states), (2, 5, 2, 3, 8))
        q = fused_qkv[:, :, :, 0].swapaxes(1, 2)
        k = fused_qkv[:, :, :, 1].swapaxes(1, 2)
        v = fused_qkv[:, :, :, 2].swapaxes(1, 2)
        alibi = ops.reshape(alibi, (2, 2, 1, 5))
        scores = ops.matmul(q, k.swapaxes(-1, -2)) / math.sqrt(8)
        probs = ops.softmax(scores + alibi + attention_mask, axis=-1)
        context = ops.matmul(probs, v)
        x = ops.reshape(context.swapaxes(1, 2), (2, 5, 16))
        x = self.dense(x)
        residual = residual + x
        return residual


class BloomMLP(nn.Cell):
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


class BloomBlock(nn.Cell):
    """Recovered from model.h.0."""

    def __init__(self):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)
        self.self_attention = BloomAttention()
        self.post_attention_layernorm = nn.LayerNorm(
            normalized_shape=(16,), epsilon=1e-05
        )
        self.mlp = BloomMLP()

    def construct(self, hidden_states, alibi, attention_mask):
        x = self.input_layernorm(hidden_states)
        x = self.self_attention(x, alibi, attention_mask, hidden_states)
        out = self.post_attention_layernorm(x)
        return self.mlp(out, x)


class BloomModel(nn.Cell):
    """Recovered from model."""

    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size=40, embedding_size=16)
        self.word_embeddings_layernorm = nn.LayerNorm(
            normalized_shape=(16,), epsilon=1e-05
        )
        self.weight = Parameter(ops.zeros((2, 1), ms.float32))
        self.causal_mask = Parameter(
            ops.zeros((1, 1, 5, 5), ms.bool_), requires_grad=False
        )
        self.h = nn.CellList([BloomBlock()])
        self.ln_f = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)

    def construct(self, input_ids, attention_mask):
        x = self.word_embeddings(input_ids)
        x = self.word_embeddings_layernorm(x)
        out = ops.cumsum(attention_mask, 1)
        out = out - 1
        out = out * attention_mask
        out = ops.unsqueeze(out, dim=1)
        out = ops.cast(out, ms.float32)
        alibi = self.weight * out
        cast = ops.cast(attention_mask, ms.bool_)
        cast = ops.reshape(cast, (2, 1, 1, 5))
        cast = ops.logical_and(self.causal_mask, cast)
        attention_mask_1 = ops.where(cast, 0.0, -3.4028235e38)
        for layer in self.h:
            x = layer(x, alibi, attention_mask_1)
        return self.ln_f(x)


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        input_ids: int64[2, 5]
        attention_mask: int64[2, 5]
    Outputs:
        output: float32[2, 5, 16]
    """

    def __init__(self):
        super().__init__()
        self.model = BloomModel()

    def construct(self, input_ids, attention_mask):
        output = self.model(input_ids, attention_mask)
        return output
