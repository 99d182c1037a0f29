# MindSpore network converted from tiny_swin_dynamo.onnx by mindconverter 0.1.0.
# Source: ONNX opset 18, produced by pytorch 2.13.0+cpu.
# Converted for input shapes: pixel_values: float32[batch, 3, 32, 32].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import math

import mindspore as ms
from mindspore import Parameter, nn, ops


class SwinPatchEmbeddings(nn.Cell):
    """Recovered from model.embeddings.patch_embeddings."""

    def __init__(self):
        super().__init__()
        self.projection = nn.Conv2d(
            in_channels=3,
            out_channels=16,
            kernel_size=4,
            stride=4,
            pad_mode="valid",
            has_bias=True,
        )

    def construct(self, pixel_values):
        x = ops.reshape(self.projection(pixel_values), (-1, 16, 64)).swapaxes(1, 2)
        return x


class SwinEmbeddings(nn.Cell):
    """Recovered from model.embeddings."""

    def __init__(self):
        super().__init__()
        self.patch_embeddings = SwinPatchEmbeddings()
        self.norm = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)

    def construct(self, pixel_values):
        pixel_values = self.patch_embeddings(pixel_values)
        return self.norm(pixel_values)


class SwinAttention(nn.Cell):
    """Recovered from model.encoder.layers.0.blocks.0.attention, model.encoder.layers.1.blocks.0.attention."""

    def __init__(self, in_channels, head_dim):
        super().__init__()
        self.q_proj = nn.Dense(in_channels=in_channels, out_channels=in_channels)
        self.k_proj = nn.Dense(in_channels=in_channels, out_channels=in_channels)
        self.v_proj = nn.Dense(in_channels=in_channels, out_channels=in_channels)
        self.weight = Parameter(ops.zeros((1, 2, 16, 16), ms.float32))
        self.o_proj = nn.Dense(in_channels=in_channels, out_channels=in_channels)
        self.head_dim = head_dim
        self.in_channels = in_channels

    def construct(self, hidden_states):
        shape = (-1, 16, 2, self.head_dim)
        q = ops.reshape(self.q_proj(hidden_states), shape).swapaxes(1, 2)
        v = ops.reshape(self.v_proj(hidden_states), shape).swapaxes(1, 2)
        k = ops.reshape(self.k_proj(hidden_states), shape).swapaxes(1, 2)
        scores = ops.matmul(q, k.swapaxes(-1, -2)) / math.sqrt(self.head_dim)
        probs = ops.softmax(scores + self.weight, axis=-1)
        context = ops.matmul(probs, v)
        x = ops.reshape(context.swapaxes(1, 2), (-1, 16, self.in_channels))
        return self.o_proj(x)


class SwinMLP(nn.Cell):
    """Recovered from model.encoder.layers.0.blocks.0.mlp, model.encoder.layers.1.blocks.0.mlp."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.fc1 = nn.Dense(in_channels=in_channels, out_channels=out_channels)
        self.activation_fn = nn.GELU(approximate=False)
        self.fc2 = nn.Dense(in_channels=out_channels, out_channels=in_channels)

    def construct(self, hidden_states):
        hidden_states = self.fc1(hidden_states)
        hidden_states = self.activation_fn(hidden_states)
        return self.fc2(hidden_states)


class SwinLayer(nn.Cell):
    """Recovered from model.encoder.layers.0.blocks.0, model.encoder.layers.1.blocks.0."""

    def __init__(
        self, normalized_shape, in_channels, out_channels, head_dim, size, size_1
    ):
        super().__init__()
        self.layernorm_before = nn.LayerNorm(
            normalized_shape=normalized_shape, epsilon=1e-05
        )
        self.attention = SwinAttention(in_channels=in_channels, head_dim=head_dim)
        self.layernorm_after = nn.LayerNorm(
            normalized_shape=normalized_shape, epsilon=1e-05
        )
        self.mlp = SwinMLP(in_channels=in_channels, out_channels=out_channels)
        self.size = size
        self.in_channels = in_channels
        self.size_1 = size_1

    def construct(self, hidden_states):
        x = ops.reshape(
            self.layernorm_before(hidden_states),
            (-1, self.size, 4, self.size, 4, self.in_channels),
        ).swapaxes(2, 3)
        x = ops.reshape(x, (-1, 16, self.in_channels))
        x = self.attention(x)
        out = ops.reshape(
            x, (-1, self.size, self.size, 4, 4, self.in_channels)
        ).swapaxes(2, 3)
        out = ops.reshape(out, (-1, self.size_1, self.in_channels))
        add = hidden_states + out
        layernorm_after = self.layernorm_after(add)
        layernorm_after = self.mlp(layernorm_after)
        layernorm_after = layernorm_after + add
        return layernorm_after


class SwinPatchMerging(nn.Cell):
    """Recovered from model.encoder.layers.0.downsample."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(normalized_shape=(64,), epsilon=1e-05)
        self.reduction = nn.Dense(in_channels=64, out_channels=32, has_bias=False)

    def construct(self, hidden_states):
        hidden_states = ops.reshape(hidden_states, (-1, 8, 8, 16))
        x = hidden_states[:, ::2]
        out = x[:, :, ::2]
        slice_ = hidden_states[:, 1::2]
        slice_1 = slice_[:, :, ::2]
        slice_2 = x[:, :, 1::2]
        slice_3 = slice_[:, :, 1::2]
        concat = ops.concat((out, slice_1, slice_2, slice_3), axis=-1)
        concat = ops.reshape(concat, (-1, 16, 64))
        concat = self.norm(concat)
        return self.reduction(concat)


class SwinStage(nn.Cell):
    """Recovered from model.encoder.layers.0, model.encoder.layers.1."""

    def __init__(
        self,
        normalized_shape,
        in_channels,
        out_channels,
        head_dim,
        size,
        size_1,
        has_downsample=False,
    ):
        super().__init__()
        self.blocks = nn.SequentialCell(
            [
                SwinLayer(
                    normalized_shape=normalized_shape,
                    in_channels=in_channels,
                    out_channels=out_channels,
                    head_dim=head_dim,
                    size=size,
                    size_1=size_1,
                )
            ]
        )
        self.downsample = SwinPatchMerging() if has_downsample else None

    def construct(self, hidden_states):
        hidden_states = self.blocks(hidden_states)
        if self.downsample is not None:
            hidden_states = self.downsample(hidden_states)
        return hidden_states


class SwinEncoder(nn.Cell):
    """Recovered from model.encoder."""

    def __init__(self):
        super().__init__()
        self.layers = nn.SequentialCell(
            [
                SwinStage(
                    normalized_shape=(16,),
                    in_channels=16,
                    out_channels=64,
                    head_dim=8,
                    size=2,
                    size_1=64,
                    has_downsample=True,
                ),
                SwinStage(
                    normalized_shape=(32,),
                    in_channels=32,
                    out_channels=128,
                    head_dim=16,
                    size=1,
                    size_1=16,
                ),
            ]
        )

    def construct(self, hidden_states):
        return self.layers(hidden_states)


class SwinModel(nn.Cell):
    """Recovered from model."""

    def __init__(self):
        super().__init__()
        self.embeddings = SwinEmbeddings()
        self.encoder = SwinEncoder()
        self.layernorm = nn.LayerNorm(normalized_shape=(32,), epsilon=1e-05)

    def construct(self, pixel_values):
        pixel_values = self.embeddings(pixel_values)
        pixel_values = self.encoder(pixel_values)
        return self.layernorm(pixel_values)


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        pixel_values: float32[batch, 3, 32, 32]
    Outputs:
        output: float32[batch, 16, 32]
    """

    def __init__(self):
        super().__init__()
        self.model = SwinModel()

    def construct(self, pixel_values):
        output = self.model(pixel_values)
        return output


def dynamic_inputs():
    """The inputs with their dynamic dimensions (None), for GRAPH_MODE:
    ``net.set_inputs(*dynamic_inputs())`` compiles one graph for every size."""
    return (ms.Tensor(shape=[None, 3, 32, 32], dtype=ms.float32),)
