# MindSpore network converted from tiny_vit_torchscript.onnx by mindconverter 0.1.0.
# Source: ONNX opset 17, produced by pytorch 2.13.0.
# Converted for input shapes: pixel_values: float32[Dim__batch___min_0__max_8_, 3, 16, 16].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import math

import mindspore as ms
from mindspore import Parameter, nn, ops


class PatchEmbeddings(nn.Cell):
    """Recovered from model.embeddings.patch_embeddings."""

    def __init__(self):
        super().__init__()
        self.projection = nn.Conv2d(
            in_channels=3,
            out_channels=16,
            kernel_size=8,
            stride=8,
            pad_mode="valid",
            has_bias=True,
        )

    def construct(self, pixel_values):
        batch_size = pixel_values.shape[0]
        shape = (batch_size, 16, -1)
        x = ops.reshape(self.projection(pixel_values), shape).swapaxes(1, 2)
        return x


class Embeddings(nn.Cell):
    """Recovered from model.embeddings."""

    def __init__(self):
        super().__init__()
        self.patch_embeddings = PatchEmbeddings()
        self.cls_token = Parameter(ops.zeros((1, 1, 16), ms.float32))
        self.position_embeddings = Parameter(ops.zeros((1, 5, 16), ms.float32))

    def construct(self, pixel_values):
        batch_size = pixel_values.shape[0]
        x = self.patch_embeddings(pixel_values)
        out = ops.broadcast_to(self.cls_token, (batch_size, -1, -1))
        concat = ops.concat((out, x), axis=1)
        concat = concat + self.position_embeddings
        return concat


class Attention(nn.Cell):
    """Recovered from model.layers.0.attention, model.layers.1.attention."""

    def __init__(self):
        super().__init__()
        self.q_proj = nn.Dense(in_channels=16, out_channels=16)
        self.k_proj = nn.Dense(in_channels=16, out_channels=16)
        self.v_proj = nn.Dense(in_channels=16, out_channels=16)
        self.o_proj = nn.Dense(in_channels=16, out_channels=16)

    def construct(self, hidden_states):
        batch_size = hidden_states.shape[0]
        shape = (batch_size, 5, -1, 8)
        q = ops.reshape(self.q_proj(hidden_states), shape).swapaxes(1, 2)
        v = ops.reshape(self.v_proj(hidden_states), shape).swapaxes(1, 2)
        k = ops.reshape(self.k_proj(hidden_states), shape).swapaxes(1, 2)
        scores = ops.matmul(q, k.swapaxes(-1, -2)) / math.sqrt(8)
        probs = ops.softmax(scores, axis=-1)
        context = ops.matmul(probs, v)
        x = ops.reshape(context.swapaxes(1, 2), (batch_size, 5, -1))
        return self.o_proj(x)


class MLP(nn.Cell):
    """Recovered from model.layers.0.mlp, model.layers.1.mlp."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(in_channels=16, out_channels=32)
        self.activation_fn = nn.GELU(approximate=False)
        self.fc2 = nn.Dense(in_channels=32, out_channels=16)

    def construct(self, hidden_states):
        hidden_states = self.fc1(hidden_states)
        hidden_states = self.activation_fn(hidden_states)
        return self.fc2(hidden_states)


class Layer(nn.Cell):
    """Recovered from model.layers.0, model.layers.1."""

    def __init__(self):
        super().__init__()
        self.layernorm_before = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-12)
        self.attention = Attention()
        self.layernorm_after = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-12)
        self.mlp = MLP()

    def construct(self, hidden_states):
        x = self.layernorm_before(hidden_states)
        x = self.attention(x)
        x = x + hidden_states
        out = self.layernorm_after(x)
        out = self.mlp(out)
        out = out + x
        return out


class Model(nn.Cell):
    """Recovered from model."""

    def __init__(self):
        super().__init__()
        self.embeddings = Embeddings()
        self.layers = nn.SequentialCell([Layer(), Layer()])
        self.layernorm = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-12)

    def construct(self, pixel_values):
        pixel_values = self.embeddings(pixel_values)
        pixel_values = self.layers(pixel_values)
        return self.layernorm(pixel_values)


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        pixel_values: float32[Dim__batch___min_0__max_8_, 3, 16, 16]
    Outputs:
        output: float32[Dim__batch___min_0__max_8_, 5, 16]
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
