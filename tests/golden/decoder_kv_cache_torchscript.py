# MindSpore network converted from tiny_llama_torchscript.onnx by mindconverter 0.1.0.
# Source: ONNX opset 17, produced by pytorch 2.13.0.
# Converted for input shapes: input_ids: int64[batch, sequence]; past_keys: float32[2, batch, 2, past, 4]; past_values: float32[2, batch, 2, past, 4].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import math

import mindspore as ms
from mindspore import nn, ops, Parameter


class SelfAttnBlock(nn.Cell):
    """Recovered from layers.0.self_attn, layers.1.self_attn."""

    def __init__(self):
        super().__init__()
        self.q_proj = nn.Dense(in_channels=16, out_channels=16, has_bias=False)
        self.k_proj = nn.Dense(in_channels=16, out_channels=8, has_bias=False)
        self.v_proj = nn.Dense(in_channels=16, out_channels=8, has_bias=False)
        self.o_proj = nn.Dense(in_channels=16, out_channels=16, has_bias=False)

    def construct(self, x, x_1, x_2, x_3, x_4, x_5):
        out = self.q_proj(x)
        shape = (ops.shape(x)[0], ops.shape(x)[1], 4, 4)
        out = ops.reshape(out, shape)
        out = ops.transpose(out, (0, 2, 1, 3))
        k_proj = self.k_proj(x)
        shape_1 = (ops.shape(x)[0], ops.shape(x)[1], 2, 4)
        shape_2 = (ops.shape(x)[0], ops.shape(x)[1], 2, 4)
        k_proj = ops.reshape(k_proj, shape_1)
        k_proj = ops.transpose(k_proj, (0, 2, 1, 3))
        v_proj = self.v_proj(x)
        v_proj = ops.reshape(v_proj, shape_2)
        v_proj = ops.transpose(v_proj, (0, 2, 1, 3))
        mul = out * x_1
        slice_ = out[:, :, :, 2:]
        slice_ = -slice_
        out = out[:, :, :, :2]
        slice_ = ops.concat((slice_, out), axis=-1)
        slice_ = slice_ * x_2
        mul = mul + slice_
        mul_1 = k_proj * x_1
        slice__1 = k_proj[:, :, :, 2:]
        slice__1 = -slice__1
        k_proj = k_proj[:, :, :, :2]
        slice__1 = ops.concat((slice__1, k_proj), axis=-1)
        slice__1 = slice__1 * x_2
        mul_1 = mul_1 + slice__1
        x_3 = ops.concat((x_3, mul_1), axis=2)
        x_4 = ops.concat((x_4, v_proj), axis=2)
        k = ops.repeat_interleave(x_3, 2, axis=1)
        scores = ops.matmul(mul, k.swapaxes(-1, -2)) / math.sqrt(4)
        probs = ops.softmax(scores + x_5, axis=-1)
        v = ops.repeat_interleave(x_4, 2, axis=1)
        context = ops.matmul(probs, v)
        context = ops.transpose(context, (0, 2, 1, 3))
        shape_3 = (ops.shape(x)[0], ops.shape(x)[1], -1)
        context = ops.reshape(context, shape_3)
        context = self.o_proj(context)
        return x_3, x_4, context


class LayersBlock(nn.Cell):
    """Recovered from layers.0, layers.1."""

    def __init__(self):
        super().__init__()
        self.input_layernorm_weight = Parameter(ops.zeros((16,), ms.float32))
        self.self_attn = SelfAttnBlock()
        self.post_attention_layernorm_weight = Parameter(ops.zeros((16,), ms.float32))
        self.gate_proj = nn.Dense(in_channels=16, out_channels=32, has_bias=False)
        self.up_proj = nn.Dense(in_channels=16, out_channels=32, has_bias=False)
        self.down_proj = nn.Dense(in_channels=32, out_channels=16, has_bias=False)

    def construct(self, x, x_1, x_2, x_3, x_4, x_5):
        out = x**2
        out = ops.mean(out, axis=2, keep_dims=True)
        out = out + 1e-06
        out = ops.sqrt(out)
        out = 1.0 / out
        input_layernorm = x * out
        input_layernorm = self.input_layernorm_weight * input_layernorm
        self_attn, self_attn_1, self_attn_2 = self.self_attn(
            input_layernorm, x_1, x_2, x_3, x_4, x_5
        )
        x = x + self_attn_2
        post_attention_layernorm = x**2
        post_attention_layernorm = ops.mean(post_attention_layernorm, axis=2, keep_dims=True)
        post_attention_layernorm = post_attention_layernorm + 1e-06
        post_attention_layernorm = ops.sqrt(post_attention_layernorm)
        post_attention_layernorm = 1.0 / post_attention_layernorm
        post_attention_layernorm_1 = x * post_attention_layernorm
        post_attention_layernorm_1 = (
            self.post_attention_layernorm_weight * post_attention_layernorm_1
        )
        gate_proj = self.gate_proj(post_attention_layernorm_1)
        sigmoid = ops.sigmoid(gate_proj)
        gate_proj = gate_proj * sigmoid
        post_attention_layernorm_1 = self.up_proj(post_attention_layernorm_1)
        gate_proj = gate_proj * post_attention_layernorm_1
        gate_proj = self.down_proj(gate_proj)
        x = x + gate_proj
        return self_attn, self_attn_1, x


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        input_ids: int64[batch, sequence]
        past_keys: float32[2, batch, 2, past, 4]
        past_values: float32[2, batch, 2, past, 4]
    Outputs:
        logits: float32[batch, sequence, 48]
        present_keys: float32[2, batch, 2, past + sequence, 4]
        present_values: float32[2, batch, 2, past + sequence, 4]
    """

    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size=48, embedding_size=16)
        self.layers = nn.CellList([LayersBlock(), LayersBlock()])
        self.norm_weight = Parameter(ops.zeros((16,), ms.float32))
        self.lm_head = nn.Dense(in_channels=16, out_channels=48, has_bias=False)

    def construct(self, input_ids, past_keys, past_values):
        shape = ops.scalar_to_tensor(ops.shape(input_ids)[1], ms.int64)
        shape_1 = ops.scalar_to_tensor(ops.shape(past_keys)[3], ms.int64)
        shape_2 = ops.shape(past_keys)[3] + ops.shape(input_ids)[1]
        x = ops.arange(shape_1, shape_2, 1)
        x = ops.cast(x, ms.float32)
        x = ops.unsqueeze(x, dim=1)
        x = x * ms.Tensor([[1.0, 0.01]], ms.float32)
        x = ops.concat((x, x), axis=-1)
        out = ops.cos(x)
        out = ops.unsqueeze(ops.unsqueeze(out, dim=0), dim=1)
        x = ops.sin(x)
        x = ops.unsqueeze(ops.unsqueeze(x, dim=0), dim=1)
        shape = ops.arange(0, shape, 1)
        shape = ops.unsqueeze(shape, dim=1)
        shape = shape + shape_1
        shape_2 = ops.arange(0, shape_2, 1)
        shape_2 = ops.unsqueeze(shape_2, dim=0)
        shape_2 = shape_2 <= shape
        shape_2 = ops.where(
            shape_2, ms.Tensor(0.0, ms.float32), ms.Tensor(-3.402823e38, ms.float32)
        )
        shape_2 = ops.unsqueeze(ops.unsqueeze(shape_2, dim=0), dim=1)
        embed_tokens = self.embed_tokens(input_ids)
        gather = ops.gather(past_keys, ms.Tensor(0, ms.int64), 0)
        gather_1 = ops.gather(past_values, ms.Tensor(0, ms.int64), 0)
        gather_2 = ops.gather(past_keys, ms.Tensor(1, ms.int64), 0)
        gather_3 = ops.gather(past_values, ms.Tensor(1, ms.int64), 0)
        layers, layers_1, layers_2 = self.layers[0](embed_tokens, out, x, gather, gather_1, shape_2)
        layers_3, layers_4, layers_5 = self.layers[1](layers_2, out, x, gather_2, gather_3, shape_2)
        norm = layers_5**2
        norm = ops.mean(norm, axis=2, keep_dims=True)
        norm = norm + 1e-06
        norm = ops.sqrt(norm)
        norm = 1.0 / norm
        layers_5 = layers_5 * norm
        layers_5 = self.norm_weight * layers_5
        logits = self.lm_head(layers_5)
        layers = ops.unsqueeze(layers, dim=0)
        layers_3 = ops.unsqueeze(layers_3, dim=0)
        present_keys = ops.concat((layers, layers_3), axis=0)
        layers_1 = ops.unsqueeze(layers_1, dim=0)
        layers_4 = ops.unsqueeze(layers_4, dim=0)
        present_values = ops.concat((layers_1, layers_4), axis=0)
        return logits, present_keys, present_values


def dynamic_inputs():
    """The inputs with their dynamic dimensions (None), for GRAPH_MODE:
    ``net.set_inputs(*dynamic_inputs())`` compiles one graph for every size."""
    return (
        ms.Tensor(shape=[None, None], dtype=ms.int64),
        ms.Tensor(shape=[2, None, 2, None, 4], dtype=ms.float32),
        ms.Tensor(shape=[2, None, 2, None, 4], dtype=ms.float32),
    )
