# MindSpore network converted from tiny_bart_torchscript.onnx by mindconverter 0.1.0.
# Source: ONNX opset 17, produced by pytorch 2.13.0.
# Converted for input shapes: input_ids: int64[Dim__batch___min_0__max_8_, Dim__sequence___min_0__max_16_]; attention_mask: int64[Dim__batch___min_0__max_8_, Dim__sequence___min_0__max_16_]; decoder_input_ids: int64[Dim__batch___min_0__max_8_, Dim__target___min_0__max_16_].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import math

import mindspore as ms
from mindspore import nn, ops


def masked_softmax(scores, mask):
    """Softmax of ``scores + mask`` over the last axis (a boolean mask marks the positions to
    keep); a row the mask hides entirely gives zeros, as PyTorch's scaled_dot_product_attention
    does."""
    if mask.dtype == ms.bool_:
        mask = ops.where(mask, 0.0, -math.inf)
    # MindSpore's softmax zeroes the whole tensor when a row is all -inf: such rows give 0 here
    masked_rows = ops.amax(mask, -1, keepdims=True) == -math.inf
    probs = ops.softmax(ops.where(masked_rows, 0.0, scores + mask), axis=-1)
    return ops.where(masked_rows, 0.0, probs)


class SelfAttention(nn.Cell):
    """Recovered from model.encoder.layers.0.self_attn, model.decoder.layers.0.self_attn."""

    def __init__(self):
        super().__init__()
        self.q_proj = nn.Dense(in_channels=16, out_channels=16)
        self.k_proj = nn.Dense(in_channels=16, out_channels=16)
        self.v_proj = nn.Dense(in_channels=16, out_channels=16)
        self.out_proj = nn.Dense(in_channels=16, out_channels=16)

    def construct(self, hidden_states, attention_mask):
        batch_size, seq_len, _ = hidden_states.shape
        shape = (batch_size, seq_len, -1, 8)
        q = ops.reshape(self.q_proj(hidden_states), shape).swapaxes(1, 2)
        v = ops.reshape(self.v_proj(hidden_states), shape).swapaxes(1, 2)
        k = ops.reshape(self.k_proj(hidden_states), shape).swapaxes(1, 2)
        scores = ops.matmul(q, k.swapaxes(-1, -2)) / math.sqrt(8)
        probs = masked_softmax(scores, attention_mask)
        context = ops.matmul(probs, v)
        x = ops.reshape(context.swapaxes(1, 2), (batch_size, seq_len, -1))
        return self.out_proj(x)


class Layer(nn.Cell):
    """Recovered from model.encoder.layers.0."""

    def __init__(self):
        super().__init__()
        self.self_attn = SelfAttention()
        self.self_attn_layer_norm = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)
        self.fc1 = nn.Dense(in_channels=16, out_channels=32)
        self.activation_fn = nn.GELU(approximate=False)
        self.fc2 = nn.Dense(in_channels=32, out_channels=16)
        self.final_layer_norm = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)

    def construct(self, hidden_states, attention_mask):
        x = self.self_attn(hidden_states, attention_mask)
        out = hidden_states + x
        out = self.self_attn_layer_norm(out)
        fc1 = self.fc1(out)
        fc1 = self.activation_fn(fc1)
        fc1 = self.fc2(fc1)
        add = out + fc1
        return self.final_layer_norm(add)


class Encoder(nn.Cell):
    """Recovered from model.encoder."""

    def __init__(self):
        super().__init__()
        self.shared = nn.Embedding(vocab_size=40, embedding_size=16)
        self.embed_positions = nn.Embedding(vocab_size=34, embedding_size=16)
        self.layernorm_embedding = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)
        self.layers = nn.CellList([Layer()])

    def construct(self, input_ids, attention_mask):
        batch_size, seq_len = input_ids.shape
        x = self.shared(input_ids)
        embed_positions = ops.arange(0, seq_len, 1)
        embed_positions = ops.broadcast_to(embed_positions, (batch_size, -1))
        embed_positions = embed_positions + 2
        embed_positions_1 = self.embed_positions(embed_positions)
        add = x + embed_positions_1
        add = self.layernorm_embedding(add)
        attention_mask = attention_mask[:, None, None, :]
        for layer in self.layers:
            add = layer(add, attention_mask)
        return add


class EncoderAttention(nn.Cell):
    """Recovered from model.decoder.layers.0.encoder_attn."""

    def __init__(self):
        super().__init__()
        self.q_proj = nn.Dense(in_channels=16, out_channels=16)
        self.k_proj = nn.Dense(in_channels=16, out_channels=16)
        self.v_proj = nn.Dense(in_channels=16, out_channels=16)
        self.out_proj = nn.Dense(in_channels=16, out_channels=16)

    def construct(self, hidden_states, hidden_states_1, attention_mask):
        batch_size, seq_len, _ = hidden_states.shape
        seq_len_1 = hidden_states_1.shape[1]
        shape = (batch_size, seq_len, -1, 8)
        q = ops.reshape(self.q_proj(hidden_states), shape).swapaxes(1, 2)
        shape_1 = (batch_size, seq_len_1, -1, 8)
        v = ops.reshape(self.v_proj(hidden_states_1), shape_1).swapaxes(1, 2)
        k = ops.reshape(self.k_proj(hidden_states_1), shape_1).swapaxes(1, 2)
        scores = ops.matmul(q, k.swapaxes(-1, -2)) / math.sqrt(8)
        probs = masked_softmax(scores, attention_mask)
        context = ops.matmul(probs, v)
        x = ops.reshape(context.swapaxes(1, 2), (batch_size, seq_len, -1))
        return self.out_proj(x)


class Layer2(nn.Cell):
    """Recovered from model.decoder.layers.0."""

    def __init__(self):
        super().__init__()
        self.self_attn = SelfAttention()
        self.self_attn_layer_norm = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)
        self.encoder_attn = EncoderAttention()
        self.encoder_attn_layer_norm = nn.LayerNorm(
            normalized_shape=(16,), epsilon=1e-05
        )
        self.fc1 = nn.Dense(in_channels=16, out_channels=32)
        self.activation_fn = nn.GELU(approximate=False)
        self.fc2 = nn.Dense(in_channels=32, out_channels=16)
        self.final_layer_norm = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)

    def construct(
        self, hidden_states, hidden_states_1, attention_mask, attention_mask_1
    ):
        x = self.self_attn(hidden_states, attention_mask)
        out = hidden_states + x
        out = self.self_attn_layer_norm(out)
        encoder_attn = self.encoder_attn(out, hidden_states_1, attention_mask_1)
        add = out + encoder_attn
        add = self.encoder_attn_layer_norm(add)
        fc1 = self.fc1(add)
        fc1 = self.activation_fn(fc1)
        fc1 = self.fc2(fc1)
        add_1 = add + fc1
        return self.final_layer_norm(add_1)


class Decoder(nn.Cell):
    """Recovered from model.decoder."""

    def __init__(self):
        super().__init__()
        self.shared = nn.Embedding(vocab_size=40, embedding_size=16)
        self.embed_positions = nn.Embedding(vocab_size=34, embedding_size=16)
        self.layernorm_embedding = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)
        self.layers = nn.CellList([Layer2()])

    def construct(self, hidden_states, decoder_input_ids, attention_mask):
        seq_len = decoder_input_ids.shape[1]
        x = self.shared(decoder_input_ids)
        out = ops.arange(0, seq_len, 1)
        range_ = ops.arange(0, seq_len, 1)
        unsqueeze = ops.unsqueeze(out, dim=0)
        unsqueeze_1 = out[None, None, :, None]
        range_ = range_[None, None, None, :]
        causal_mask = range_ <= unsqueeze_1
        attention_mask = attention_mask[:, None, None, :]
        unsqueeze = unsqueeze + 2
        embed_positions = self.embed_positions(unsqueeze)
        add = x + embed_positions
        add = self.layernorm_embedding(add)
        for layer in self.layers:
            add = layer(add, hidden_states, causal_mask, attention_mask)
        return add


class Model(nn.Cell):
    """Recovered from model."""

    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.decoder = Decoder()

    def construct(self, attention_mask, input_ids, decoder_input_ids):
        attention_mask = ops.cast(attention_mask, ms.bool_)
        x = self.encoder(input_ids, attention_mask)
        return self.decoder(x, decoder_input_ids, attention_mask)


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        input_ids: int64[Dim__batch___min_0__max_8_, Dim__sequence___min_0__max_16_]
        attention_mask: int64[Dim__batch___min_0__max_8_, Dim__sequence___min_0__max_16_]
        decoder_input_ids: int64[Dim__batch___min_0__max_8_, Dim__target___min_0__max_16_]
    Outputs:
        output: float32[Dim__batch___min_0__max_8_, Dim__target___min_0__max_16_, 16]
    """

    def __init__(self):
        super().__init__()
        self.model = Model()
        self.model.decoder.shared.embedding_table = (
            self.model.encoder.shared.embedding_table
        )

    def construct(self, input_ids, attention_mask, decoder_input_ids):
        output = self.model(attention_mask, input_ids, decoder_input_ids)
        return output


def dynamic_inputs():
    """The inputs with their dynamic dimensions (None), for GRAPH_MODE:
    ``net.set_inputs(*dynamic_inputs())`` compiles one graph for every size."""
    return (
        ms.Tensor(shape=[None, None], dtype=ms.int64),
        ms.Tensor(shape=[None, None], dtype=ms.int64),
        ms.Tensor(shape=[None, None], dtype=ms.int64),
    )
