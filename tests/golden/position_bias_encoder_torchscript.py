# MindSpore network converted from tiny_t5_encoder_torchscript.onnx by mindconverter 0.1.0.
# Source: ONNX opset 17, produced by pytorch 2.13.0.
# Converted for input shapes: input_ids: int64[Dim__batch___min_0__max_8_, Dim__sequence___min_0__max_16_]; attention_mask: int64[Dim__batch___min_0__max_8_, Dim__sequence___min_0__max_16_].
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


class SelfAttention(nn.Cell):
    """Recovered from model.encoder.block.0.layer.0.SelfAttention, model.encoder.block.1.layer.0.SelfAttention."""

    def __init__(self):
        super().__init__()
        self.q = nn.Dense(in_channels=16, out_channels=16, has_bias=False)
        self.k = nn.Dense(in_channels=16, out_channels=16, has_bias=False)
        self.v = nn.Dense(in_channels=16, out_channels=16, has_bias=False)
        self.o = nn.Dense(in_channels=16, out_channels=16, has_bias=False)

    def construct(self, hidden_states, attention_bias):
        batch_size, seq_len, _ = hidden_states.shape
        shape = (batch_size, seq_len, -1, 8)
        q = ops.reshape(self.q(hidden_states), shape).swapaxes(1, 2)
        k = ops.reshape(self.k(hidden_states), shape).swapaxes(1, 2)
        v = ops.reshape(self.v(hidden_states), shape).swapaxes(1, 2)
        scores = ops.matmul(q, k.swapaxes(-1, -2))
        probs = ops.softmax(scores + attention_bias, axis=-1)
        context = ops.matmul(probs, v)
        x = ops.reshape(context.swapaxes(1, 2), (batch_size, seq_len, -1))
        return self.o(x)


class SelfAttentionLayer(nn.Cell):
    """Recovered from model.encoder.block.0.layer.0, model.encoder.block.1.layer.0."""

    def __init__(self):
        super().__init__()
        self.layer_norm = RMSNorm(hidden_size=16, eps=1e-06)
        self.self_attention = SelfAttention()

    def construct(self, hidden_states, attention_bias):
        x = self.layer_norm(hidden_states)
        x = self.self_attention(x, attention_bias)
        out = hidden_states + x
        return out


class DenseReluDense(nn.Cell):
    """Recovered from model.encoder.block.0.layer.1.DenseReluDense, model.encoder.block.1.layer.1.DenseReluDense."""

    def __init__(self):
        super().__init__()
        self.wi = nn.Dense(in_channels=16, out_channels=32, has_bias=False)
        self.wo = nn.Dense(in_channels=32, out_channels=16, has_bias=False)

    def construct(self, hidden_states):
        hidden_states = self.wi(hidden_states)
        hidden_states = ops.relu(hidden_states)
        return self.wo(hidden_states)


class DenseReluDenseLayer(nn.Cell):
    """Recovered from model.encoder.block.0.layer.1, model.encoder.block.1.layer.1."""

    def __init__(self):
        super().__init__()
        self.layer_norm = RMSNorm(hidden_size=16, eps=1e-06)
        self.dense_relu_dense = DenseReluDense()

    def construct(self, hidden_states):
        x = self.layer_norm(hidden_states)
        x = self.dense_relu_dense(x)
        out = hidden_states + x
        return out


class Block(nn.Cell):
    """Recovered from model.encoder.block.0, model.encoder.block.1."""

    def __init__(self):
        super().__init__()
        self.layer = nn.CellList([SelfAttentionLayer(), DenseReluDenseLayer()])

    def construct(self, hidden_states, attention_bias):
        self_attention, dense_relu_dense = self.layer
        hidden_states = self_attention(hidden_states, attention_bias)
        hidden_states = dense_relu_dense(hidden_states)
        return hidden_states


class Encoder(nn.Cell):
    """Recovered from model.encoder."""

    def __init__(self):
        super().__init__()
        self.shared = nn.Embedding(vocab_size=40, embedding_size=16)
        self.block = nn.CellList([Block(), Block()])
        self.relative_attention_bias = nn.Embedding(vocab_size=8, embedding_size=2)
        self.final_layer_norm = RMSNorm(hidden_size=16, eps=1e-06)

    def construct(self, input_ids, attention_mask):
        seq_len = input_ids.shape[1]
        x = self.shared(input_ids)
        attention_mask = ops.cast(attention_mask, ms.bool_)
        attention_mask = attention_mask[:, None, None, :]
        out = ops.arange(0, seq_len, 1)
        out = ops.unsqueeze(out, dim=1)
        range_ = ops.arange(0, seq_len, 1)
        range_ = ops.unsqueeze(range_, dim=0)
        sub = range_ - out
        greater = sub > 0
        greater = ops.cast(greater, ms.int64)
        greater = greater * 4
        abs_ = ops.abs(sub)
        less = abs_ < 2
        cast = ops.cast(abs_, ms.float32)
        cast = cast / 2.0
        # float64 log: MindSpore's float32 log is a few ulps low and would floor a bucket
        cast = ops.cast(ops.log(ops.cast(cast, ms.float64)), ms.float32)
        cast = cast / 2.0794415
        cast = cast * 2.0
        cast = ops.cast(cast, ms.int64)
        cast = cast + 2
        full_like = ops.full_like(cast, 3, dtype=ms.int64)
        min_ = ops.minimum(cast, full_like)
        where = ops.where(less, abs_, min_)
        greater = greater + where
        gather = self.relative_attention_bias(greater)
        gather = ops.transpose(gather, (2, 0, 1))
        gather = ops.unsqueeze(gather, dim=0)
        attention_bias = ops.where(attention_mask, gather, -3.4028235e38)
        for layer in self.block:
            x = layer(x, attention_bias)
        return self.final_layer_norm(x)


class Model(nn.Cell):
    """Recovered from model."""

    def __init__(self):
        super().__init__()
        self.encoder = Encoder()

    def construct(self, input_ids, attention_mask):
        return self.encoder(input_ids, attention_mask)


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
