# MindSpore network converted from tiny_bert_dynamo.onnx by mindconverter 0.1.0.
# Source: ONNX opset 18, produced by pytorch 2.13.0+cpu.
# Converted for input shapes: input_ids: int64[1, 8]; attention_mask: int64[1, 8].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import mindspore as ms
from mindspore import nn, ops, Parameter


class UnconvertedOperator(nn.Cell):
    """Placeholder for an operator mindconverter could not convert (see the report).

    The script imports and the network builds; calling this cell raises. Replace it with an
    implementation of the operator for the recorded input and output shapes.
    """

    def __init__(self, op_type, input_shapes, output_shapes):
        super().__init__()
        self.op_type = op_type
        self.input_shapes = input_shapes
        self.output_shapes = output_shapes

    def construct(self, *inputs):
        raise NotImplementedError("An operator was not converted; see the conversion report.")


class BertEmbeddings(nn.Cell):
    """Recovered from bert.embeddings."""

    def __init__(self):
        super().__init__()
        self.expand = Parameter(ops.zeros((1, 32), ms.int64), requires_grad=False)
        self.word_embeddings = nn.Embedding(vocab_size=100, embedding_size=32)
        self.token_type_embeddings = nn.Embedding(vocab_size=2, embedding_size=32)
        self.position_embeddings_weight = Parameter(ops.zeros((1, 8, 32), ms.float32))
        self.layer_norm = nn.LayerNorm(
            normalized_shape=(32,), begin_norm_axis=2, begin_params_axis=2, epsilon=1e-12
        )

    def construct(self, input_ids):
        x = ops.gather_elements(self.expand, 1, ms.Tensor([[0, 1, 2, 3, 4, 5, 6, 7]], ms.int64))
        input_ids = self.word_embeddings(input_ids)
        x = self.token_type_embeddings(x)
        input_ids = input_ids + x
        input_ids = input_ids + self.position_embeddings_weight
        input_ids = self.layer_norm(input_ids)
        return input_ids


class BertSelfAttention(nn.Cell):
    """Recovered from bert.encoder.layer.0.attention.self, bert.encoder.layer.1.attention.self, bert.encoder.layer.2.attention.self."""

    def __init__(self):
        super().__init__()
        self.query = nn.Dense(in_channels=32, out_channels=32)
        self.key = nn.Dense(in_channels=32, out_channels=32)
        self.value = nn.Dense(in_channels=32, out_channels=32)
        self.unconverted_reshape = UnconvertedOperator(
            "Reshape", input_shapes=((1, 2, 8, 16), (3,)), output_shapes=((2, 8, 16),)
        )
        self.unconverted_reshape_1 = UnconvertedOperator(
            "Reshape", input_shapes=((2, 16, 8), (4,)), output_shapes=((1, 2, 16, 8),)
        )

    def construct(self, x, x_1):
        out = self.query(x)
        out = ops.reshape(out, (1, 8, -1, 16))
        out = ops.transpose(out, (0, 2, 1, 3))
        key = self.key(x)
        key = ops.reshape(key, (1, 8, -1, 16))
        key = ops.transpose(key, (0, 2, 1, 3))
        x = self.value(x)
        x = ops.reshape(x, (1, 8, -1, 16))
        x = ops.transpose(x, (0, 2, 1, 3))
        shape = ms.Tensor([1, 2, 8, 16], ms.int64)
        slice_ = shape[3:]
        slice__1 = shape[2:3]
        shape = shape[:2]
        concat = ops.concat((ms.Tensor([-1], ms.int64), slice__1, slice_), axis=0)
        key = self.unconverted_reshape(key, concat)
        key = ops.transpose(key, (0, 2, 1))
        shape = ops.concat((shape, slice_, slice__1), axis=0)
        key = self.unconverted_reshape_1(key, shape)
        out = out * 0.5
        key = key * 0.5
        out = ops.matmul(out, key)
        out = out + x_1
        out = ops.softmax(out, axis=-1)
        is_na_n = ops.isnan(out)
        is_na_n = ops.where(is_na_n, ms.Tensor(0.0, ms.float32), out)
        is_na_n = ops.matmul(is_na_n, x)
        is_na_n = ops.transpose(is_na_n, (0, 2, 1, 3))
        is_na_n = ops.reshape(is_na_n, (1, 8, -1))
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
        self_ = self.self(x, x_1)
        self_ = self.output(self_, x)
        return self_


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
        x = self.output(intermediate, x)
        return x


class BertEncoder(nn.Cell):
    """Recovered from bert.encoder."""

    def __init__(self):
        super().__init__()
        self.layer = nn.CellList([BertLayer(), BertLayer(), BertLayer()])

    def construct(self, x, x_1):
        x_1 = ops.where(x_1, ms.Tensor(0.0, ms.float32), ms.Tensor(-3.402823e38, ms.float32))
        x = self.layer[0](x, x_1)
        x = self.layer[1](x, x_1)
        x = self.layer[2](x, x_1)
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

    def construct(self, input_ids, attention_mask):
        x = self.embeddings(input_ids)
        attention_mask = ops.cast(attention_mask, ms.bool_)
        attention_mask = ops.gather_nd(
            attention_mask,
            ms.Tensor(
                [[[[[0, 0], [0, 1], [0, 2], [0, 3], [0, 4], [0, 5], [0, 6], [0, 7]]]]], ms.int64
            ),
        )
        attention_mask = ops.logical_and(
            ms.Tensor(
                [[[[True], [True], [True], [True], [True], [True], [True], [True]]]], ms.bool_
            ),
            attention_mask,
        )
        x = self.encoder(x, attention_mask)
        pooler = self.pooler(x)
        return x, pooler


class MindSporeModel(nn.Cell):
    """Converted network.

    Inputs:
        input_ids: int64[1, 8]
        attention_mask: int64[1, 8]
    Outputs:
        x: float32[1, 8, 32]
        bert: float32[1, 32]
    """

    def __init__(self):
        super().__init__()
        self.bert = BertModel()

    def construct(self, input_ids, attention_mask):
        x, bert = self.bert(input_ids, attention_mask)
        return x, bert
