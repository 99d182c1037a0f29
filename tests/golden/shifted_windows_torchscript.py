# MindSpore network converted from tiny_swin_shifted_torchscript.onnx by mindconverter 0.1.0.
# Source: ONNX opset 17, produced by pytorch 2.13.0.
# Converted for input shapes: pixel_values: float32[batch, 3, 16, 16].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import math

import mindspore as ms
from mindspore import Parameter, nn, ops


def roll(x, shifts, dims):
    """``torch.roll``: each axis of ``dims`` turned by its shift, what leaves one end coming
    back at the other (Swin's shifted windows). Written with slices because ``ops.roll`` has
    no CPU kernel."""
    for shift, dim in zip(shifts, dims):
        size = x.shape[dim]
        shift %= size
        if shift:
            tail = ops.narrow(x, dim, size - shift, shift)
            x = ops.concat((tail, ops.narrow(x, dim, 0, size - shift)), axis=dim)
    return x


class PatchEmbeddings(nn.Cell):
    """Recovered from model.embeddings.patch_embeddings."""

    def __init__(self):
        super().__init__()
        self.projection = nn.Conv2d(
            in_channels=3,
            out_channels=8,
            kernel_size=2,
            stride=2,
            pad_mode="valid",
            has_bias=True,
        )

    def construct(self, pixel_values):
        batch_size = pixel_values.shape[0]
        shape = (batch_size, 8, -1)
        x = ops.reshape(self.projection(pixel_values), shape).swapaxes(1, 2)
        return x


class Embeddings(nn.Cell):
    """Recovered from model.embeddings."""

    def __init__(self):
        super().__init__()
        self.patch_embeddings = PatchEmbeddings()
        self.norm = nn.LayerNorm(normalized_shape=(8,), epsilon=1e-05)

    def construct(self, pixel_values):
        pixel_values = self.patch_embeddings(pixel_values)
        return self.norm(pixel_values)


class Attention(nn.Cell):
    """Recovered from model.encoder.layers.0.blocks.0.attention."""

    def __init__(self):
        super().__init__()
        self.q_proj = nn.Dense(in_channels=8, out_channels=8)
        self.k_proj = nn.Dense(in_channels=8, out_channels=8)
        self.v_proj = nn.Dense(in_channels=8, out_channels=8)
        self.position_bias = Parameter(
            ops.zeros((1, 2, 16, 16), ms.float32), requires_grad=False
        )
        self.o_proj = nn.Dense(in_channels=8, out_channels=8)

    def construct(self, hidden_states):
        batch_size = hidden_states.shape[0]
        shape = (batch_size, 16, -1, 4)
        q = ops.reshape(self.q_proj(hidden_states), shape).swapaxes(1, 2)
        v = ops.reshape(self.v_proj(hidden_states), shape).swapaxes(1, 2)
        k = ops.reshape(self.k_proj(hidden_states), shape).swapaxes(1, 2)
        scores = ops.matmul(q, k.swapaxes(-1, -2)) / math.sqrt(4)
        probs = ops.softmax(scores + self.position_bias, axis=-1)
        context = ops.matmul(probs, v)
        x = ops.reshape(context.swapaxes(1, 2), (batch_size, 16, -1))
        return self.o_proj(x)


class MLP(nn.Cell):
    """Recovered from model.encoder.layers.0.blocks.0.mlp, model.encoder.layers.0.blocks.1.mlp."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(in_channels=8, out_channels=32)
        self.activation_fn = nn.GELU(approximate=False)
        self.fc2 = nn.Dense(in_channels=32, out_channels=8)

    def construct(self, hidden_states):
        hidden_states = self.fc1(hidden_states)
        hidden_states = self.activation_fn(hidden_states)
        return self.fc2(hidden_states)


class Block(nn.Cell):
    """Recovered from model.encoder.layers.0.blocks.0."""

    def __init__(self):
        super().__init__()
        self.layernorm_before = nn.LayerNorm(normalized_shape=(8,), epsilon=1e-05)
        self.attention = Attention()
        self.layernorm_after = nn.LayerNorm(normalized_shape=(8,), epsilon=1e-05)
        self.mlp = MLP()

    def construct(self, hidden_states):
        batch_size = hidden_states.shape[0]
        x = self.layernorm_before(hidden_states)
        transpose = ops.reshape(x, (batch_size, 2, 4, 2, 4, 8)).swapaxes(2, 3)
        transpose = ops.reshape(transpose, (-1, 16, 8))
        transpose = self.attention(transpose)
        transpose_1 = ops.reshape(transpose, (-1, 2, 2, 4, 4, 8)).swapaxes(2, 3)
        transpose_1 = ops.reshape(transpose_1, (batch_size, 64, 8))
        add = hidden_states + transpose_1
        layernorm_after = self.layernorm_after(add)
        layernorm_after = self.mlp(layernorm_after)
        layernorm_after = layernorm_after + add
        return layernorm_after


class Attention2(nn.Cell):
    """Recovered from model.encoder.layers.0.blocks.1.attention."""

    def __init__(self):
        super().__init__()
        self.q_proj = nn.Dense(in_channels=8, out_channels=8)
        self.k_proj = nn.Dense(in_channels=8, out_channels=8)
        self.v_proj = nn.Dense(in_channels=8, out_channels=8)
        self.o_proj = nn.Dense(in_channels=8, out_channels=8)

    def construct(self, hidden_states, attention_bias):
        batch_size = hidden_states.shape[0]
        shape = (batch_size, 16, -1, 4)
        q = ops.reshape(self.q_proj(hidden_states), shape).swapaxes(1, 2)
        v = ops.reshape(self.v_proj(hidden_states), shape).swapaxes(1, 2)
        k = ops.reshape(self.k_proj(hidden_states), shape).swapaxes(1, 2)
        scores = ops.matmul(q, k.swapaxes(-1, -2)) / math.sqrt(4)
        probs = ops.softmax(scores + attention_bias, axis=-1)
        context = ops.matmul(probs, v)
        x = ops.reshape(context.swapaxes(1, 2), (batch_size, 16, -1))
        return self.o_proj(x)


class Block2(nn.Cell):
    """Recovered from model.encoder.layers.0.blocks.1."""

    def __init__(self):
        super().__init__()
        self.layernorm_before = nn.LayerNorm(normalized_shape=(8,), epsilon=1e-05)
        self.attention = Attention2()
        self.layernorm_after = nn.LayerNorm(normalized_shape=(8,), epsilon=1e-05)
        self.mlp = MLP()

    def construct(self, hidden_states, attention_bias):
        batch_size = hidden_states.shape[0]
        x = ops.reshape(self.layernorm_before(hidden_states), (batch_size, 8, 8, 8))
        x = roll(x, (-2, -2), (1, 2))
        out = ops.reshape(x, (batch_size, 2, 4, 2, 4, 8)).swapaxes(2, 3)
        out = ops.reshape(out, (-1, 16, 8))
        out = self.attention(out, attention_bias)
        transpose = ops.reshape(out, (-1, 2, 2, 4, 4, 8)).swapaxes(2, 3)
        transpose = ops.reshape(transpose, (-1, 8, 8, 8))
        transpose = roll(transpose, (2, 2), (1, 2))
        transpose = ops.reshape(transpose, (batch_size, 64, 8))
        add = hidden_states + transpose
        layernorm_after = self.layernorm_after(add)
        layernorm_after = self.mlp(layernorm_after)
        layernorm_after = layernorm_after + add
        return layernorm_after


class Layer(nn.Cell):
    """Recovered from model.encoder.layers.0."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.CellList([Block(), Block2()])

    def construct(self, hidden_states, attention_bias):
        hidden_states = self.blocks[0](hidden_states)
        hidden_states = self.blocks[1](hidden_states, attention_bias)
        return hidden_states


class Encoder(nn.Cell):
    """Recovered from model.encoder."""

    def __init__(self):
        super().__init__()
        self.layers = nn.CellList([Layer()])
        self.mask = Parameter(
            ops.zeros((1, 4, 1, 16, 16), ms.float32), requires_grad=False
        )
        self.const = Parameter(
            ops.zeros((1, 2, 16, 16), ms.float32), requires_grad=False
        )

    def construct(self, hidden_states):
        batch_size = hidden_states.shape[0]
        x = ops.broadcast_to(self.mask, (batch_size, -1, -1, -1, -1))
        alibi = ops.reshape(x, (-1, 1, 16, 16))
        alibi = self.const + alibi
        for layer in self.layers:
            hidden_states = layer(hidden_states, alibi)
        return hidden_states


class Model(nn.Cell):
    """Recovered from model."""

    def __init__(self):
        super().__init__()
        self.embeddings = Embeddings()
        self.encoder = Encoder()
        self.layernorm = nn.LayerNorm(normalized_shape=(8,), epsilon=1e-05)

    def construct(self, pixel_values):
        pixel_values = self.embeddings(pixel_values)
        pixel_values = self.encoder(pixel_values)
        return self.layernorm(pixel_values)


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        pixel_values: float32[batch, 3, 16, 16]
    Outputs:
        output: float32[batch, 64, 8]
    """

    def __init__(self):
        super().__init__()
        self.model = Model()

    def construct(self, pixel_values):
        output = self.model(pixel_values)
        return output


def dynamic_inputs():
    """The inputs with their dynamic dimensions (None), for GRAPH_MODE:
    ``net.set_inputs(*dynamic_inputs())`` compiles one graph for every size."""
    return (ms.Tensor(shape=[None, 3, 16, 16], dtype=ms.float32),)
