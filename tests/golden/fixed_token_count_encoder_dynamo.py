# MindSpore network converted from tiny_dinov2_dynamo.onnx by mindconverter 0.1.0.
# Source: ONNX opset 18, produced by pytorch 2.13.0+cpu.
# Converted for input shapes: pixel_values: float32[batch, 3, d_7_side, d_7_side].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import math

import mindspore as ms
from mindspore import Parameter, nn, ops


class Dinov2PatchEmbeddings(nn.Cell):
    """Recovered from model.embeddings.patch_embeddings."""

    def __init__(self):
        super().__init__()
        self.projection = nn.Conv2d(
            in_channels=3,
            out_channels=32,
            kernel_size=7,
            stride=7,
            pad_mode="valid",
            has_bias=True,
        )

    def construct(self, pixel_values):
        batch_size, _, height, _ = pixel_values.shape
        shape = (batch_size, 32, (height // 7) ** 2)
        x = ops.reshape(self.projection(pixel_values), shape).swapaxes(1, 2)
        return x


class Dinov2Embeddings(nn.Cell):
    """Recovered from model.embeddings."""

    def __init__(self):
        super().__init__()
        self.patch_embeddings = Dinov2PatchEmbeddings()
        self.cls_token = Parameter(ops.zeros((1, 1, 32), ms.float32))
        self.position_embeddings = Parameter(ops.zeros((1, 17, 32), ms.float32))

    def construct(self, pixel_values):
        batch_size = pixel_values.shape[0]
        x = self.patch_embeddings(pixel_values)
        out = ops.broadcast_to(self.cls_token, (batch_size, -1, -1))
        concat = ops.concat((out, x), axis=1)
        concat = concat + self.position_embeddings
        return concat


class Dinov2Attention(nn.Cell):
    """Recovered from model.encoder.layer.0.attention, model.encoder.layer.1.attention."""

    def __init__(self):
        super().__init__()
        self.q_proj = nn.Dense(in_channels=32, out_channels=32)
        self.k_proj = nn.Dense(in_channels=32, out_channels=32)
        self.v_proj = nn.Dense(in_channels=32, out_channels=32)
        self.o_proj = nn.Dense(in_channels=32, out_channels=32)

    def construct(self, hidden_states):
        batch_size = hidden_states.shape[0]
        shape = (batch_size, 17, -1, 16)
        q = ops.reshape(self.q_proj(hidden_states), shape).swapaxes(1, 2)
        k = ops.reshape(self.k_proj(hidden_states), shape).swapaxes(1, 2)
        v = ops.reshape(self.v_proj(hidden_states), shape).swapaxes(1, 2)
        scores = ops.matmul(q, k.swapaxes(-1, -2)) / math.sqrt(16)
        probs = ops.softmax(scores, axis=-1)
        context = ops.matmul(probs, v)
        x = ops.reshape(context, (batch_size, 2, 17, 16)).swapaxes(1, 2)
        out = ops.reshape(x, (batch_size, 17, -1))
        return self.o_proj(out)


class Dinov2MLP(nn.Cell):
    """Recovered from model.encoder.layer.0.mlp, model.encoder.layer.1.mlp."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(in_channels=32, out_channels=128)
        self.activation_fn = nn.GELU(approximate=False)
        self.fc2 = nn.Dense(in_channels=128, out_channels=32)

    def construct(self, hidden_states):
        hidden_states = self.fc1(hidden_states)
        hidden_states = self.activation_fn(hidden_states)
        return self.fc2(hidden_states)


class Dinov2Layer(nn.Cell):
    """Recovered from model.encoder.layer.0, model.encoder.layer.1."""

    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(normalized_shape=(32,), epsilon=1e-06)
        self.attention = Dinov2Attention()
        self.layer_scale1_lambda1 = Parameter(ops.zeros((32,), ms.float32))
        self.norm2 = nn.LayerNorm(normalized_shape=(32,), epsilon=1e-06)
        self.mlp = Dinov2MLP()
        self.layer_scale2_lambda1 = Parameter(ops.zeros((32,), ms.float32))

    def construct(self, hidden_states):
        x = self.norm1(hidden_states)
        x = self.attention(x)
        x = x * self.layer_scale1_lambda1
        x = x + hidden_states
        out = self.norm2(x)
        out = self.mlp(out)
        out = out * self.layer_scale2_lambda1
        out = out + x
        return out


class Dinov2Encoder(nn.Cell):
    """Recovered from model.encoder."""

    def __init__(self):
        super().__init__()
        self.layer = nn.SequentialCell([Dinov2Layer(), Dinov2Layer()])

    def construct(self, hidden_states):
        return self.layer(hidden_states)


class Dinov2Model(nn.Cell):
    """Recovered from model."""

    def __init__(self):
        super().__init__()
        self.embeddings = Dinov2Embeddings()
        self.encoder = Dinov2Encoder()
        self.layernorm = nn.LayerNorm(normalized_shape=(32,), epsilon=1e-06)

    def construct(self, pixel_values):
        pixel_values = self.embeddings(pixel_values)
        pixel_values = self.encoder(pixel_values)
        return self.layernorm(pixel_values)


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        pixel_values: float32[batch, 3, d_7_side, d_7_side]
    Outputs:
        output: float32[batch, 17, 32]
    """

    def __init__(self):
        super().__init__()
        self.model = Dinov2Model()

    def construct(self, pixel_values):
        output = self.model(pixel_values)
        return output


def dynamic_inputs():
    """The inputs with their dynamic dimensions (None), for GRAPH_MODE:
    ``net.set_inputs(*dynamic_inputs())`` compiles one graph for every size."""
    return (ms.Tensor(shape=[None, 3, None, None], dtype=ms.float32),)
