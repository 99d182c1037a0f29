# MindSpore network converted from tiny_gpt_dynamo.onnx by mindconverter 0.1.0.
# Source: ONNX opset 18, produced by pytorch 2.13.0+cpu.
# Converted for input shapes: ids: int64[batch, sequence].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import math

import mindspore as ms
from mindspore import Parameter, nn, ops


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        ids: int64[batch, sequence]
    Outputs:
        logits: float32[batch, sequence, 40]
    """

    def __init__(self):
        super().__init__()
        self.lm_head = nn.Embedding(vocab_size=40, embedding_size=16)
        self.wpe = nn.Embedding(vocab_size=24, embedding_size=16)
        self.causal = Parameter(ops.zeros((24, 24), ms.float32), requires_grad=False)
        self.h_0_ln_1 = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)
        self.h_0_attn_qkv = nn.Dense(in_channels=16, out_channels=48)
        self.h_0_attn_proj = nn.Dense(in_channels=16, out_channels=16)
        self.h_0_ln_2 = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)
        self.h_0_fc = nn.Dense(in_channels=16, out_channels=32)
        self.h_0_act = nn.GELU(approximate=False)
        self.h_0_out = nn.Dense(in_channels=32, out_channels=16)
        self.h_1_ln_1 = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)
        self.h_1_attn_qkv = nn.Dense(in_channels=16, out_channels=48)
        self.h_1_attn_proj = nn.Dense(in_channels=16, out_channels=16)
        self.h_1_ln_2 = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)
        self.h_1_fc = nn.Dense(in_channels=16, out_channels=32)
        self.h_1_act = nn.GELU(approximate=False)
        self.h_1_out = nn.Dense(in_channels=32, out_channels=16)
        self.ln_f = nn.LayerNorm(normalized_shape=(16,), epsilon=1e-05)
        self.lm_head_1 = nn.Dense(in_channels=16, out_channels=40, has_bias=False)
        self.lm_head_1.weight = self.lm_head.embedding_table

    def construct(self, ids):
        shape = ops.cast(ops.tuple_to_array((ops.shape(ids)[1],)), ms.int64)
        shape_1 = ops.shape(ids)[1]
        x = self.lm_head(ids)
        out = ops.arange(0, shape_1, 1)
        out = self.wpe(out)
        x = x + out
        slice_ = self.causal[: shape[0]]
        slice_ = slice_[:, : shape[0]]
        ln_1 = self.h_0_ln_1(x)
        ln_1 = self.h_0_attn_qkv(ln_1)
        shape_2 = (ops.shape(ids)[0], ops.shape(ids)[1], 2, 8)
        shape_3 = (ops.shape(ids)[0], ops.shape(ids)[1], 16)
        split, split_1, split_2 = ops.split(ln_1, 16, axis=2)
        split = ops.reshape(split, shape_2)
        split = ops.transpose(split, (0, 2, 1, 3))
        split_1 = ops.reshape(split_1, shape_2)
        split_2 = ops.reshape(split_2, shape_2)
        split_2 = ops.transpose(split_2, (0, 2, 1, 3))
        split_1 = ops.transpose(split_1, (0, 2, 1, 3))
        scores = ops.matmul(split, split_1.swapaxes(-1, -2)) / math.sqrt(8)
        probs = ops.softmax(scores + slice_, axis=-1)
        context = ops.matmul(probs, split_2)
        context = ops.transpose(context, (0, 2, 1, 3))
        context = ops.reshape(context, shape_3)
        context = self.h_0_attn_proj(context)
        x_0 = x + context
        ln_2 = self.h_0_ln_2(x_0)
        ln_2 = self.h_0_fc(ln_2)
        ln_2 = self.h_0_act(ln_2)
        ln_2 = self.h_0_out(ln_2)
        x_0_1 = x_0 + ln_2
        ln_1_1 = self.h_1_ln_1(x_0_1)
        ln_1_1 = self.h_1_attn_qkv(ln_1_1)
        split_3, split_4, split_5 = ops.split(ln_1_1, 16, axis=2)
        split_3 = ops.reshape(split_3, shape_2)
        split_3 = ops.transpose(split_3, (0, 2, 1, 3))
        split_4 = ops.reshape(split_4, shape_2)
        split_5 = ops.reshape(split_5, shape_2)
        split_5 = ops.transpose(split_5, (0, 2, 1, 3))
        split_4 = ops.transpose(split_4, (0, 2, 1, 3))
        scores_1 = ops.matmul(split_3, split_4.swapaxes(-1, -2)) / math.sqrt(8)
        probs_1 = ops.softmax(scores_1 + slice_, axis=-1)
        context_1 = ops.matmul(probs_1, split_5)
        context_1 = ops.transpose(context_1, (0, 2, 1, 3))
        context_1 = ops.reshape(context_1, shape_3)
        context_1 = self.h_1_attn_proj(context_1)
        x_1 = x_0_1 + context_1
        ln_2_1 = self.h_1_ln_2(x_1)
        ln_2_1 = self.h_1_fc(ln_2_1)
        ln_2_1 = self.h_1_act(ln_2_1)
        ln_2_1 = self.h_1_out(ln_2_1)
        x_1_1 = x_1 + ln_2_1
        x_1_1 = self.ln_f(x_1_1)
        logits = self.lm_head_1(x_1_1)
        return logits


def dynamic_inputs():
    """The inputs with their dynamic dimensions (None), for GRAPH_MODE:
    ``net.set_inputs(*dynamic_inputs())`` compiles one graph for every size."""
    return (ms.Tensor(shape=[None, None], dtype=ms.int64),)
