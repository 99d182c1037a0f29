# MindSpore network converted from tiny_gpt_dynamo.onnx by mindconverter 0.1.0.
# Source: ONNX opset 18, produced by pytorch 2.13.0+cpu.
# Converted for input shapes: ids: int64[batch, sequence].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import math

import mindspore as ms
from mindspore import Parameter, nn, ops


class CausalSelfAttention(nn.Cell):
    """Recovered from h.0.attn, h.1.attn."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Dense(in_channels=16, out_channels=48)
        self.proj = nn.Dense(in_channels=16, out_channels=16)

    def construct(self, hidden_states, attention_mask):
        batch_size, seq_len, _ = hidden_states.shape
        hidden_states = self.qkv(hidden_states)
        query, key, value = ops.split(hidden_states, 16, axis=2)
        shape = (batch_size, seq_len, 2, 8)
        q = ops.reshape(query, shape).swapaxes(1, 2)
        v = ops.reshape(value, shape).swapaxes(1, 2)
        k = ops.reshape(key, shape).swapaxes(1, 2)
        scores = ops.matmul(q, k.swapaxes(-1, -2)) / math.sqrt(8)
        probs = ops.softmax(scores + attention_mask, axis=-1)
        context = ops.matmul(probs, v)
        out = ops.reshape(context.swapaxes(1, 2), (batch_size, seq_len, 16))
        return self.proj(out)


class GPTBlock(nn.Cell):
    """Recovered from h.0, h.1."""

    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)
        self.fc = nn.Dense(in_channels=16, out_channels=32)
        self.act = nn.GELU(approximate=False)
        self.out = nn.Dense(in_channels=32, out_channels=16)

    def construct(self, hidden_states, attention_mask):
        x = self.ln_1(hidden_states)
        x = self.attn(x, attention_mask)
        out = hidden_states + x
        ln_2 = self.ln_2(out)
        ln_2 = self.fc(ln_2)
        ln_2 = self.act(ln_2)
        ln_2 = self.out(ln_2)
        add = out + ln_2
        return add


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        ids: int64[batch, sequence]
    Outputs:
        logits: float32[batch, sequence, 40]
    """

    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(vocab_size=40, embedding_size=16)
        self.wpe = nn.Embedding(vocab_size=24, embedding_size=16)
        self.causal = Parameter(ops.zeros((24, 24), ms.float32), requires_grad=False)
        self.h = nn.CellList([GPTBlock(), GPTBlock()])
        self.ln_f = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)
        self.lm_head = nn.Dense(in_channels=16, out_channels=40, has_bias=False)
        self.lm_head.weight = self.wte.embedding_table

    def construct(self, ids):
        sequence = ids.shape[1]
        x = self.wte(ids)
        out = ops.arange(0, sequence, 1)
        wpe = self.wpe(out)
        x = x + wpe
        slice_ = self.causal[:sequence]
        attention_mask = slice_[:, :sequence]
        for layer in self.h:
            x = layer(x, attention_mask)
        x = self.ln_f(x)
        logits = self.lm_head(x)
        return logits


def dynamic_inputs():
    """The inputs with their dynamic dimensions (None), for GRAPH_MODE:
    ``net.set_inputs(*dynamic_inputs())`` compiles one graph for every size."""
    return (ms.Tensor(shape=[None, None], dtype=ms.int64),)
