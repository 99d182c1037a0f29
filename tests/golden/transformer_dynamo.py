# MindSpore network converted from tiny_bert_dynamo.onnx by mindconverter 0.1.0.
# Source: ONNX opset 18, produced by pytorch 2.13.0+cpu.
# Converted for input shapes: input_ids: int64[batch, sequence]; attention_mask: int64[batch, sequence].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import mindspore as ms
from mindspore import nn, ops, Parameter


class BertEmbeddings(nn.Cell):
    """Recovered from bert.embeddings."""

    def __init__(self):
        super().__init__()
        self.position_ids = Parameter(ops.zeros((1, 32), ms.int64), requires_grad=False)
        self.expand = Parameter(ops.zeros((1, 32), ms.int64), requires_grad=False)
        self.word_embeddings = nn.Embedding(vocab_size=100, embedding_size=32)
        self.token_type_embeddings = nn.Embedding(vocab_size=2, embedding_size=32)
        self.position_embeddings = nn.Embedding(vocab_size=32, embedding_size=32)
        self.layer_norm = nn.LayerNorm(
            normalized_shape=(32,), begin_norm_axis=2, begin_params_axis=2, epsilon=1e-12
        )

    def construct(self, attention_mask, input_ids):
        shape = ops.cast(ops.tuple_to_array((ops.shape(attention_mask)[1],)), ms.int64)
        x = self.position_ids[:, : shape[0]]
        out = ops.gather_elements(self.expand, 1, x % 32)
        shape_1 = (ops.shape(attention_mask)[0], ops.shape(attention_mask)[1])
        out = ops.broadcast_to(out, (shape_1[0], shape_1[1]))
        input_ids = self.word_embeddings(input_ids)
        out = self.token_type_embeddings(out)
        input_ids = input_ids + out
        x = self.position_embeddings(x)
        input_ids = input_ids + x
        input_ids = self.layer_norm(input_ids)
        return input_ids


class BertSelfAttention(nn.Cell):
    """Recovered from bert.encoder.layer.0.attention.self, bert.encoder.layer.1.attention.self, bert.encoder.layer.2.attention.self."""

    def __init__(self):
        super().__init__()
        self.query = nn.Dense(in_channels=32, out_channels=32)
        self.key = nn.Dense(in_channels=32, out_channels=32)
        self.value = nn.Dense(in_channels=32, out_channels=32)

    def construct(self, x, x_1):
        out = self.query(x)
        shape = (ops.shape(out)[0], ops.shape(out)[1], -1, 16)
        out = ops.reshape(out, shape)
        out = ops.transpose(out, (0, 2, 1, 3))
        key = self.key(x)
        key = ops.reshape(key, shape)
        key = ops.transpose(key, (0, 2, 1, 3))
        x = self.value(x)
        x = ops.reshape(x, shape)
        x = ops.transpose(x, (0, 2, 1, 3))
        shape_1 = (-1, ops.shape(key)[2], 16)
        reshape = ops.reshape(key, shape_1)
        reshape = ops.transpose(reshape, (0, 2, 1))
        shape_2 = (ops.shape(key)[0], 2, 16, ops.shape(key)[2])
        reshape = ops.reshape(reshape, shape_2)
        out = out * 0.5
        reshape = reshape * 0.5
        out = ops.matmul(out, reshape)
        out = out + x_1
        out = ops.softmax(out, axis=-1)
        is_na_n = ops.isnan(out)
        is_na_n = ops.where(is_na_n, ms.Tensor(0.0, ms.float32), out)
        is_na_n = ops.matmul(is_na_n, x)
        is_na_n = ops.transpose(is_na_n, (0, 2, 1, 3))
        shape_3 = (ops.shape(is_na_n)[0], ops.shape(is_na_n)[1], -1)
        is_na_n = ops.reshape(is_na_n, shape_3)
        return is_na_n


class BertSelfOutput(nn.Cell):
    """Recovered from bert.encoder.layer.0.attention.output, bert.encoder.layer.1.attention.output, bert.encoder.layer.2.attention.output."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(in_channels=32, out_channels=32)
        self.layer_norm = nn.LayerNorm(
            normalized_shape=(32,), begin_norm_axis=2, begin_params_axis=2, epsilon=1e-12
        )

    def construct(self, x, x_1):
        x = self.dense(x)
        x = x + x_1
        x = self.layer_norm(x)
        return x


class BertAttention(nn.Cell):
    """Recovered from bert.encoder.layer.0.attention, bert.encoder.layer.1.attention, bert.encoder.layer.2.attention."""

    def __init__(self):
        super().__init__()
        self.self = BertSelfAttention()
        self.output = BertSelfOutput()

    def construct(self, x, x_1):
        x_1 = self.self(x, x_1)
        x_1 = self.output(x_1, x)
        return x_1


class BertIntermediate(nn.Cell):
    """Recovered from bert.encoder.layer.0.intermediate, bert.encoder.layer.1.intermediate, bert.encoder.layer.2.intermediate."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(in_channels=32, out_channels=64)
        self.intermediate_act_fn = nn.GELU(approximate=False)

    def construct(self, x):
        x = self.dense(x)
        x = self.intermediate_act_fn(x)
        return x


class BertOutput(nn.Cell):
    """Recovered from bert.encoder.layer.0.output, bert.encoder.layer.1.output, bert.encoder.layer.2.output."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(in_channels=64, out_channels=32)
        self.layer_norm = nn.LayerNorm(
            normalized_shape=(32,), begin_norm_axis=2, begin_params_axis=2, epsilon=1e-12
        )

    def construct(self, x, x_1):
        x = self.dense(x)
        x = x + x_1
        x = self.layer_norm(x)
        return x


class BertLayer(nn.Cell):
    """Recovered from bert.encoder.layer.0, bert.encoder.layer.1, bert.encoder.layer.2."""

    def __init__(self):
        super().__init__()
        self.attention = BertAttention()
        self.intermediate = BertIntermediate()
        self.output = BertOutput()

    def construct(self, x, x_1):
        x = self.attention(x, x_1)
        intermediate = self.intermediate(x)
        intermediate = self.output(intermediate, x)
        return intermediate


class BertEncoder(nn.Cell):
    """Recovered from bert.encoder."""

    def __init__(self):
        super().__init__()
        self.layer = nn.CellList([BertLayer(), BertLayer(), BertLayer()])

    def construct(self, x, x_1):
        x_1 = ops.where(x_1, ms.Tensor(0.0, ms.float32), ms.Tensor(-3.402823e38, ms.float32))
        for layer in self.layer:
            x = layer(x, x_1)
        return x


class BertPooler(nn.Cell):
    """Recovered from bert.pooler."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(in_channels=32, out_channels=32)

    def construct(self, x):
        x = ops.gather(x, ms.Tensor(0, ms.int64), 1)
        x = self.dense(x)
        x = ops.tanh(x)
        return x


class BertModel(nn.Cell):
    """Recovered from bert."""

    def __init__(self):
        super().__init__()
        self.embeddings = BertEmbeddings()
        self.encoder = BertEncoder()
        self.pooler = BertPooler()

    def construct(self, attention_mask, input_ids):
        x = self.embeddings(attention_mask, input_ids)
        out = ops.cast(attention_mask, ms.bool_)
        shape = ops.shape(attention_mask)[0]
        range_ = ops.arange(0, shape, 1)
        shape_1 = ops.shape(attention_mask)[1]
        range__1 = ops.arange(0, shape_1, 1)
        range_ = ops.unsqueeze(ops.unsqueeze(ops.unsqueeze(range_, dim=1), dim=2), dim=3)
        unsqueeze = ops.unsqueeze(ops.unsqueeze(ops.unsqueeze(range__1, dim=0), dim=1), dim=3)
        range__1 = ops.unsqueeze(ops.unsqueeze(ops.unsqueeze(range__1, dim=0), dim=1), dim=2)
        unsqueeze = unsqueeze >= ms.Tensor(0, ms.int64)
        unsqueeze = ops.logical_and(ms.Tensor(True, ms.bool_), unsqueeze)
        max_ = ops.maximum(range_, range__1)
        shape_2 = (ops.shape(max_)[0], 1, 1, ops.shape(max_)[3])
        range_ = ops.broadcast_to(range_, (shape_2[0], -1, -1, shape_2[3]))
        range_ = ops.unsqueeze(range_, dim=4)
        range__1 = ops.broadcast_to(range__1, (shape_2[0], -1, -1, shape_2[3]))
        range__1 = ops.unsqueeze(range__1, dim=4)
        range_ = ops.concat((range_, range__1), axis=-1)
        out = ops.gather_nd(
            out, range_ % ops.tuple_to_array((ops.shape(out)[0], ops.shape(out)[1]))
        )
        unsqueeze = ops.logical_and(unsqueeze, out)
        x = self.encoder(x, unsqueeze)
        pooler = self.pooler(x)
        return x, pooler


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        input_ids: int64[batch, sequence]
        attention_mask: int64[batch, sequence]
    Outputs:
        last_hidden_state: float32[batch, sequence, 32]
        pooler_output: float32[batch, 32]
    """

    def __init__(self):
        super().__init__()
        self.bert = BertModel()

    def construct(self, input_ids, attention_mask):
        last_hidden_state, pooler_output = self.bert(attention_mask, input_ids)
        return last_hidden_state, pooler_output


def dynamic_inputs():
    """The inputs with their dynamic dimensions (None), for GRAPH_MODE:
    ``net.set_inputs(*dynamic_inputs())`` compiles one graph for every size."""
    return (
        ms.Tensor(shape=[None, None], dtype=ms.int64),
        ms.Tensor(shape=[None, None], dtype=ms.int64),
    )
