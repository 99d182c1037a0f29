# MindSpore network converted from tiny_whisper_encoder_dynamo.onnx by mindconverter 0.1.0.
# Source: ONNX opset 18, produced by pytorch 2.13.0+cpu.
# Converted for input shapes: input_features: float32[batch, 8, 16].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import mindspore as ms
from mindspore import Parameter, nn, ops


class WhisperAttention(nn.Cell):
    """Recovered from model.layers.0.self_attn, model.layers.1.self_attn."""

    def __init__(self):
        super().__init__()
        self.q_proj = nn.Dense(in_channels=16, out_channels=16)
        self.k_proj = nn.Dense(in_channels=16, out_channels=16, has_bias=False)
        self.v_proj = nn.Dense(in_channels=16, out_channels=16)
        self.out_proj = nn.Dense(in_channels=16, out_channels=16)

    def construct(self, hidden_states):
        q_proj = self.q_proj(hidden_states)
        q_proj = q_proj * 0.35355338
        shape = (-1, 8, 2, 8)
        q = ops.reshape(q_proj, shape).swapaxes(1, 2)
        k = ops.reshape(self.k_proj(hidden_states), shape).swapaxes(1, 2)
        v = ops.reshape(self.v_proj(hidden_states), shape).swapaxes(1, 2)
        scores = ops.matmul(q, k.swapaxes(-1, -2))
        probs = ops.softmax(scores, axis=-1)
        context = ops.matmul(probs, v)
        x = ops.reshape(context.swapaxes(1, 2), (-1, 8, 16))
        return self.out_proj(x)


class WhisperEncoderLayer(nn.Cell):
    """Recovered from model.layers.0, model.layers.1."""

    def __init__(self):
        super().__init__()
        self.self_attn_layer_norm = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)
        self.self_attn = WhisperAttention()
        self.final_layer_norm = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)
        self.fc1 = nn.Dense(in_channels=16, out_channels=32)
        self.activation_fn = nn.GELU(approximate=False)
        self.fc2 = nn.Dense(in_channels=32, out_channels=16)

    def construct(self, hidden_states):
        x = self.self_attn_layer_norm(hidden_states)
        x = self.self_attn(x)
        out = hidden_states + x
        final_layer_norm = self.final_layer_norm(out)
        final_layer_norm = self.fc1(final_layer_norm)
        final_layer_norm = self.activation_fn(final_layer_norm)
        final_layer_norm = self.fc2(final_layer_norm)
        add = out + final_layer_norm
        return add


class WhisperEncoder(nn.Cell):
    """Recovered from model."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(
            in_channels=8,
            out_channels=16,
            kernel_size=3,
            pad_mode="pad",
            padding=1,
            has_bias=True,
        )
        self.gelu = nn.GELU(approximate=False)
        self.conv2 = nn.Conv1d(
            in_channels=16,
            out_channels=16,
            kernel_size=3,
            stride=2,
            pad_mode="pad",
            padding=1,
            has_bias=True,
        )
        self.gelu_1 = nn.GELU(approximate=False)
        self.embedding = Parameter(ops.zeros((8, 16), ms.float32))
        self.layers = nn.SequentialCell([WhisperEncoderLayer(), WhisperEncoderLayer()])
        self.layer_norm = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)

    def construct(self, input_features):
        input_features = self.conv1(input_features)
        input_features = self.gelu(input_features)
        input_features = self.conv2(input_features)
        input_features = self.gelu_1(input_features)
        input_features = input_features.swapaxes(1, 2)
        input_features = input_features + self.embedding
        input_features = self.layers(input_features)
        return self.layer_norm(input_features)


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        input_features: float32[batch, 8, 16]
    Outputs:
        output: float32[batch, 8, 16]
    """

    def __init__(self):
        super().__init__()
        self.model = WhisperEncoder()

    def construct(self, input_features):
        output = self.model(input_features)
        return output


def dynamic_inputs():
    """The inputs with their dynamic dimensions (None), for GRAPH_MODE:
    ``net.set_inputs(*dynamic_inputs())`` compiles one graph for every size."""
    return (ms.Tensor(shape=[None, 8, 16], dtype=ms.float32),)
