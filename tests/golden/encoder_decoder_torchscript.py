# MindSpore network converted from tiny_bart_torchscript.onnx by mindconverter 0.1.0.
# Source: ONNX opset 17, produced by pytorch 2.13.0.
# Converted for input shapes: input_ids: int64[Dim__batch___min_0__max_8_, Dim__sequence___min_0__max_16_]; attention_mask: int64[Dim__batch___min_0__max_8_, Dim__sequence___min_0__max_16_]; decoder_input_ids: int64[Dim__batch___min_0__max_8_, Dim__target___min_0__max_16_].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import math

import mindspore as ms
from mindspore import nn, ops


class SelfAttnBlock(nn.Cell):
    """Recovered from model.encoder.layers.0.self_attn, model.decoder.layers.0.self_attn."""

    def __init__(self):
        super().__init__()
        self.q_proj = nn.Dense(in_channels=16, out_channels=16)
        self.k_proj = nn.Dense(in_channels=16, out_channels=16)
        self.v_proj = nn.Dense(in_channels=16, out_channels=16)
        self.out_proj = nn.Dense(in_channels=16, out_channels=16)

    def construct(self, x, x_1):
        out = self.q_proj(x)
        shape = (ops.shape(x)[0], ops.shape(x)[1], -1, 8)
        shape_1 = (ops.shape(x)[0], ops.shape(x)[1], -1, 8)
        shape_2 = (ops.shape(x)[0], ops.shape(x)[1], -1, 8)
        out = ops.reshape(out, shape)
        out = ops.transpose(out, (0, 2, 1, 3))
        k_proj = self.k_proj(x)
        v_proj = self.v_proj(x)
        k_proj = ops.reshape(k_proj, shape_1)
        v_proj = ops.reshape(v_proj, shape_2)
        v_proj = ops.transpose(v_proj, (0, 2, 1, 3))
        k_proj = ops.transpose(k_proj, (0, 2, 1, 3))
        x_1 = ops.where(x_1, ms.Tensor([0.0], ms.float32), ms.Tensor([-math.inf], ms.float32))
        # MindSpore's softmax zeroes the whole tensor when a row is all -inf: such rows give 0 here
        masked_rows = ops.amax(x_1, -1, keepdims=True) == -math.inf
        scores = ops.matmul(out, k_proj.swapaxes(-1, -2)) / math.sqrt(8)
        probs = ops.softmax(ops.where(masked_rows, 0.0, scores + x_1), axis=-1)
        context = ops.matmul(ops.where(masked_rows, 0.0, probs), v_proj)
        shape_3 = (ops.shape(out)[0], -1, ops.shape(out)[2], 8)
        context = ops.reshape(context, shape_3)
        context = ops.transpose(context, (0, 2, 1, 3))
        shape_4 = (ops.shape(x)[0], ops.shape(x)[1], -1)
        context = ops.reshape(context, shape_4)
        context = self.out_proj(context)
        return context


class LayersBlock(nn.Cell):
    """Recovered from model.encoder.layers.0."""

    def __init__(self):
        super().__init__()
        self.self_attn = SelfAttnBlock()
        self.self_attn_layer_norm = nn.LayerNorm(
            normalized_shape=(16,), begin_norm_axis=2, begin_params_axis=2, epsilon=1e-05
        )
        self.fc1 = nn.Dense(in_channels=16, out_channels=32)
        self.activation_fn = nn.GELU(approximate=False)
        self.fc2 = nn.Dense(in_channels=32, out_channels=16)
        self.final_layer_norm = nn.LayerNorm(
            normalized_shape=(16,), begin_norm_axis=2, begin_params_axis=2, epsilon=1e-05
        )

    def construct(self, x, x_1):
        self_attn = self.self_attn(x, x_1)
        x = x + self_attn
        x = self.self_attn_layer_norm(x)
        out = self.fc1(x)
        out = self.activation_fn(out)
        out = self.fc2(out)
        x = x + out
        x = self.final_layer_norm(x)
        return x


class LayersBlock2(nn.Cell):
    """Recovered from model.encoder.layers."""

    def __init__(self):
        super().__init__()
        self.model_encoder_layers_0 = LayersBlock()

    def construct(self, x, x_1):
        x = self.model_encoder_layers_0(x, x_1)
        return x


class EncoderBlock(nn.Cell):
    """Recovered from model.encoder."""

    def __init__(self):
        super().__init__()
        self.shared = nn.Embedding(vocab_size=40, embedding_size=16)
        self.embed_positions = nn.Embedding(vocab_size=34, embedding_size=16)
        self.layernorm_embedding = nn.LayerNorm(
            normalized_shape=(16,), begin_norm_axis=2, begin_params_axis=2, epsilon=1e-05
        )
        self.layers = LayersBlock2()

    def construct(self, input_ids, x):
        input_ids = self.shared(input_ids)
        input_ids = input_ids * 1.0
        out = ops.gather(input_ids, ms.Tensor(15, ms.int64), 2)
        shape = ops.shape(out)[1]
        shape = ops.arange(0, shape, 1)
        shape_1 = (ops.shape(out)[0], 1)
        shape = ops.broadcast_to(shape, (shape_1[0], -1))
        shape = shape + ms.Tensor(2, ms.int64)
        shape = self.embed_positions(shape)
        add = input_ids + shape
        add = self.layernorm_embedding(add)
        shape_2 = ops.scalar_to_tensor(ops.shape(input_ids)[1], ms.int64)
        shape_3 = ops.scalar_to_tensor(ops.shape(x)[1], ms.int64)
        shape_4 = ops.scalar_to_tensor(ops.shape(input_ids)[0], ms.int64)
        shape_4 = ops.arange(0, shape_4, 1)
        shape_2 = ops.arange(0, shape_2, 1)
        shape_3 = ops.arange(0, shape_3, 1)
        shape_4 = ops.unsqueeze(ops.unsqueeze(ops.unsqueeze(shape_4, dim=1), dim=2), dim=3)
        shape_2 = ops.unsqueeze(ops.unsqueeze(ops.unsqueeze(shape_2, dim=0), dim=1), dim=3)
        shape_3 = ops.unsqueeze(ops.unsqueeze(ops.unsqueeze(shape_3, dim=0), dim=1), dim=2)
        shape_2 = shape_2 >= ms.Tensor(0, ms.int64)
        shape_2 = ops.logical_and(ms.Tensor(True, ms.bool_), shape_2)
        shape_5 = ops.cast(ops.tuple_to_array((ops.shape(x)[1],)), ms.int64)
        flatten = ops.reshape(x, (-1, 1))
        shape_4 = shape_4 * shape_5
        add_1 = shape_3 + shape_4
        flatten = ops.gather(flatten, add_1 % ops.shape(flatten)[0], 0)
        shape_6 = (ops.shape(add_1)[0], 1, 1, ops.shape(add_1)[3])
        flatten = ops.reshape(flatten, (-1,))
        flatten = ops.reshape(flatten, shape_6)
        shape_2 = ops.logical_and(shape_2, flatten)
        shape_7 = (ops.shape(x)[0], 1, ops.shape(x)[1], ops.shape(x)[1])
        shape_2 = ops.broadcast_to(shape_2, (shape_7[0], -1, shape_7[2], shape_7[3]))
        add = self.layers(add, shape_2)
        return shape_3, add


class EncoderAttnBlock(nn.Cell):
    """Recovered from model.decoder.layers.0.encoder_attn."""

    def __init__(self):
        super().__init__()
        self.q_proj = nn.Dense(in_channels=16, out_channels=16)
        self.k_proj = nn.Dense(in_channels=16, out_channels=16)
        self.v_proj = nn.Dense(in_channels=16, out_channels=16)
        self.out_proj = nn.Dense(in_channels=16, out_channels=16)

    def construct(self, x, x_1, x_2):
        out = self.q_proj(x)
        shape = (ops.shape(x)[0], ops.shape(x)[1], -1, 8)
        out = ops.reshape(out, shape)
        out = ops.transpose(out, (0, 2, 1, 3))
        k_proj = self.k_proj(x_1)
        v_proj = self.v_proj(x_1)
        shape_1 = (ops.shape(x_1)[0], ops.shape(x_1)[1], -1, 8)
        shape_2 = (ops.shape(x_1)[0], ops.shape(x_1)[1], -1, 8)
        k_proj = ops.reshape(k_proj, shape_1)
        v_proj = ops.reshape(v_proj, shape_2)
        v_proj = ops.transpose(v_proj, (0, 2, 1, 3))
        k_proj = ops.transpose(k_proj, (0, 2, 1, 3))
        x_2 = ops.where(x_2, ms.Tensor([0.0], ms.float32), ms.Tensor([-math.inf], ms.float32))
        # MindSpore's softmax zeroes the whole tensor when a row is all -inf: such rows give 0 here
        masked_rows = ops.amax(x_2, -1, keepdims=True) == -math.inf
        scores = ops.matmul(out, k_proj.swapaxes(-1, -2)) / math.sqrt(8)
        probs = ops.softmax(ops.where(masked_rows, 0.0, scores + x_2), axis=-1)
        context = ops.matmul(ops.where(masked_rows, 0.0, probs), v_proj)
        shape_3 = (ops.shape(out)[0], -1, ops.shape(out)[2], 8)
        context = ops.reshape(context, shape_3)
        context = ops.transpose(context, (0, 2, 1, 3))
        shape_4 = (ops.shape(x)[0], ops.shape(x)[1], -1)
        context = ops.reshape(context, shape_4)
        context = self.out_proj(context)
        return context


class LayersBlock3(nn.Cell):
    """Recovered from model.decoder.layers.0."""

    def __init__(self):
        super().__init__()
        self.self_attn = SelfAttnBlock()
        self.self_attn_layer_norm = nn.LayerNorm(
            normalized_shape=(16,), begin_norm_axis=2, begin_params_axis=2, epsilon=1e-05
        )
        self.encoder_attn = EncoderAttnBlock()
        self.encoder_attn_layer_norm = nn.LayerNorm(
            normalized_shape=(16,), begin_norm_axis=2, begin_params_axis=2, epsilon=1e-05
        )
        self.fc1 = nn.Dense(in_channels=16, out_channels=32)
        self.activation_fn = nn.GELU(approximate=False)
        self.fc2 = nn.Dense(in_channels=32, out_channels=16)
        self.final_layer_norm = nn.LayerNorm(
            normalized_shape=(16,), begin_norm_axis=2, begin_params_axis=2, epsilon=1e-05
        )

    def construct(self, x, x_1, x_2, x_3):
        self_attn = self.self_attn(x, x_2)
        x = x + self_attn
        x = self.self_attn_layer_norm(x)
        x_1 = self.encoder_attn(x, x_1, x_3)
        x = x + x_1
        x = self.encoder_attn_layer_norm(x)
        out = self.fc1(x)
        out = self.activation_fn(out)
        out = self.fc2(out)
        x = x + out
        x = self.final_layer_norm(x)
        return x


class LayersBlock4(nn.Cell):
    """Recovered from model.decoder.layers."""

    def __init__(self):
        super().__init__()
        self.model_decoder_layers_0 = LayersBlock3()

    def construct(self, x, x_1, x_2, x_3):
        x = self.model_decoder_layers_0(x, x_1, x_2, x_3)
        return x


class DecoderBlock(nn.Cell):
    """Recovered from model.decoder."""

    def __init__(self):
        super().__init__()
        self.shared = nn.Embedding(vocab_size=40, embedding_size=16)
        self.embed_positions = nn.Embedding(vocab_size=34, embedding_size=16)
        self.layernorm_embedding = nn.LayerNorm(
            normalized_shape=(16,), begin_norm_axis=2, begin_params_axis=2, epsilon=1e-05
        )
        self.layers = LayersBlock4()

    def construct(self, x, decoder_input_ids, x_1, x_2):
        decoder_input_ids = self.shared(decoder_input_ids)
        decoder_input_ids = decoder_input_ids * 1.0
        shape = ops.scalar_to_tensor(ops.shape(decoder_input_ids)[0], ms.int64)
        shape_1 = ops.scalar_to_tensor(ops.shape(decoder_input_ids)[1], ms.int64)
        out = ops.arange(0, shape_1, 1)
        shape_2 = (ops.shape(decoder_input_ids)[0], ops.shape(decoder_input_ids)[1])
        shape_2 = ops.fill(ms.float32, shape_2, 1.0)
        shape_2 = ops.cast(shape_2, ms.bool_)
        shape = ops.arange(0, shape, 1)
        shape_1 = ops.arange(0, shape_1, 1)
        shape = ops.unsqueeze(ops.unsqueeze(ops.unsqueeze(shape, dim=1), dim=2), dim=3)
        unsqueeze = ops.unsqueeze(out, dim=0)
        out = ops.unsqueeze(ops.unsqueeze(ops.unsqueeze(out, dim=0), dim=1), dim=3)
        shape_1 = ops.unsqueeze(ops.unsqueeze(ops.unsqueeze(shape_1, dim=0), dim=1), dim=2)
        less_or_equal = shape_1 <= out
        less_or_equal = ops.logical_and(ms.Tensor(True, ms.bool_), less_or_equal)
        shape_3 = ops.cast(ops.tuple_to_array((ops.shape(shape_2)[1],)), ms.int64)
        shape_2 = ops.reshape(shape_2, (-1, 1))
        shape = shape * shape_3
        shape_1 = shape_1 + shape
        shape_2 = ops.gather(shape_2, shape_1 % ops.shape(shape_2)[0], 0)
        shape_4 = (ops.shape(shape_1)[0], 1, 1, ops.shape(shape_1)[3])
        shape_2 = ops.reshape(shape_2, (-1,))
        shape_2 = ops.reshape(shape_2, shape_4)
        less_or_equal = ops.logical_and(less_or_equal, shape_2)
        shape_5 = (
            ops.shape(decoder_input_ids)[0],
            1,
            ops.shape(decoder_input_ids)[1],
            ops.shape(decoder_input_ids)[1],
        )
        less_or_equal = ops.broadcast_to(less_or_equal, (shape_5[0], -1, shape_5[2], shape_5[3]))
        shape_6 = ops.scalar_to_tensor(ops.shape(x)[0], ms.int64)
        shape_6 = ops.arange(0, shape_6, 1)
        shape_6 = ops.unsqueeze(ops.unsqueeze(ops.unsqueeze(shape_6, dim=1), dim=2), dim=3)
        out = out >= ms.Tensor(0, ms.int64)
        out = ops.logical_and(ms.Tensor(True, ms.bool_), out)
        shape_7 = ops.cast(ops.tuple_to_array((ops.shape(x_1)[1],)), ms.int64)
        flatten = ops.reshape(x_1, (-1, 1))
        shape_6 = shape_6 * shape_7
        x_2 = x_2 + shape_6
        flatten = ops.gather(flatten, x_2 % ops.shape(flatten)[0], 0)
        shape_8 = (ops.shape(x_2)[0], 1, 1, ops.shape(x_2)[3])
        flatten = ops.reshape(flatten, (-1,))
        flatten = ops.reshape(flatten, shape_8)
        out = ops.logical_and(out, flatten)
        shape_9 = (ops.shape(x_1)[0], 1, ops.shape(decoder_input_ids)[1], ops.shape(x_1)[1])
        out = ops.broadcast_to(out, (shape_9[0], -1, shape_9[2], shape_9[3]))
        unsqueeze = unsqueeze + ms.Tensor(2, ms.int64)
        unsqueeze = self.embed_positions(unsqueeze)
        decoder_input_ids = decoder_input_ids + unsqueeze
        decoder_input_ids = self.layernorm_embedding(decoder_input_ids)
        decoder_input_ids = self.layers(decoder_input_ids, x, less_or_equal, out)
        return decoder_input_ids


class ModelBlock(nn.Cell):
    """Recovered from model."""

    def __init__(self):
        super().__init__()
        self.encoder = EncoderBlock()
        self.decoder = DecoderBlock()

    def construct(self, attention_mask, input_ids, decoder_input_ids):
        attention_mask = ops.cast(attention_mask, ms.bool_)
        x, encoder = self.encoder(input_ids, attention_mask)
        encoder = self.decoder(encoder, decoder_input_ids, attention_mask, x)
        return encoder


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
        self.model = ModelBlock()
        self.model.decoder.shared.embedding_table = self.model.encoder.shared.embedding_table

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
