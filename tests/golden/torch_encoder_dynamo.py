# MindSpore network converted from tiny_torch_encoder_dynamo.onnx by mindconverter 0.1.0.
# Source: ONNX opset 18, produced by pytorch 2.13.0+cpu.
# Converted for input shapes: x: float32[batch, seq, 16].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import math

import mindspore as ms
from mindspore import nn, ops


class MultiheadAttention(nn.Cell):
    """Recovered from encoder.layers.0.self_attn, encoder.layers.1.self_attn."""

    def __init__(self):
        super().__init__()
        self.in_proj = nn.Dense(in_channels=16, out_channels=48)
        self.out_proj = nn.Dense(in_channels=16, out_channels=16)

    def construct(self, hidden_states):
        batch_size, seq_len, _ = hidden_states.shape
        hidden_states = self.in_proj(hidden_states)
        query, key, value = ops.split(hidden_states, 16, axis=2)
        q = ops.reshape(query, (batch_size, seq_len, 2, 8)).swapaxes(1, 2)
        k = ops.reshape(key, (batch_size, seq_len, 2, 8)).swapaxes(1, 2)
        v = ops.reshape(value, (batch_size, seq_len, 2, 8)).swapaxes(1, 2)
        scores = ops.matmul(q, k.swapaxes(-1, -2)) / math.sqrt(8)
        probs = ops.softmax(scores, axis=-1)
        context = ops.matmul(probs, v)
        x = ops.reshape(context.swapaxes(1, 2), (batch_size, seq_len, 16))
        return self.out_proj(x)


class TransformerEncoderLayer(nn.Cell):
    """Recovered from encoder.layers.0, encoder.layers.1."""

    def __init__(self):
        super().__init__()
        self.self_attn = MultiheadAttention()
        self.norm1 = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)
        self.linear1 = nn.Dense(in_channels=16, out_channels=32)
        self.linear2 = nn.Dense(in_channels=32, out_channels=16)
        self.norm2 = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)

    def construct(self, hidden_states):
        x = self.self_attn(hidden_states)
        out = hidden_states + x
        out = self.norm1(out)
        linear1 = self.linear1(out)
        linear1 = ops.relu(linear1)
        linear1 = self.linear2(linear1)
        add = out + linear1
        return self.norm2(add)


class TransformerEncoder(nn.Cell):
    """Recovered from encoder."""

    def __init__(self):
        super().__init__()
        self.layers = nn.SequentialCell(
            [TransformerEncoderLayer(), TransformerEncoderLayer()]
        )

    def construct(self, x):
        return self.layers(x)


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        x: float32[batch, seq, 16]
    Outputs:
        y: float32[batch, seq, 3]
    """

    def __init__(self):
        super().__init__()
        self.encoder = TransformerEncoder()
        self.head = nn.Dense(in_channels=16, out_channels=3)

    def construct(self, x):
        encoder = self.encoder(x)
        y = self.head(encoder)
        return y


def dynamic_inputs():
    """The inputs with their dynamic dimensions (None), for GRAPH_MODE:
    ``net.set_inputs(*dynamic_inputs())`` compiles one graph for every size."""
    return (ms.Tensor(shape=[None, None, 16], dtype=ms.float32),)
