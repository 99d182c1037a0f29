# MindSpore network converted from tiny_bert_dynamo.onnx by mindconverter 0.1.0.
# Source: ONNX opset 18, produced by pytorch 2.13.0+cpu.
# Converted for input shapes: input_ids: int64[batch, sequence]; attention_mask: int64[batch, sequence].
# Load the weights with:
#     net = MindSporeModel()
#     ms.load_param_into_net(net, ms.load_checkpoint("<this script's stem>.ckpt"))
import math

import mindspore as ms
from mindspore import Parameter, nn, ops


class BertEmbeddings(nn.Cell):
    """Recovered from bert.embeddings."""

    def __init__(self):
        super().__init__()
        self.position_ids = Parameter(ops.zeros((1, 32), ms.int64), requires_grad=False)
        self.word_embeddings = nn.Embedding(vocab_size=100, embedding_size=32)
        self.token_type_embeddings = nn.Embedding(vocab_size=2, embedding_size=32)
        self.position_embeddings = nn.Embedding(vocab_size=32, embedding_size=32)
        self.layer_norm = nn.LayerNorm(normalized_shape=(32,), epsilon=1e-12)

    def construct(self, input_ids):
        batch_size, seq_len = input_ids.shape
        position_ids = self.position_ids[:, :seq_len]
        x = ops.zeros_like(position_ids)
        token_type_ids = ops.broadcast_to(x, (batch_size, seq_len))
        out = self.word_embeddings(input_ids)
        token_type_embeddings = self.token_type_embeddings(token_type_ids)
        out = out + token_type_embeddings
        position_embeddings = self.position_embeddings(position_ids)
        out = out + position_embeddings
        return self.layer_norm(out)


class BertSelfAttention(nn.Cell):
    """Recovered from bert.encoder.layer.0.attention.self, bert.encoder.layer.1.attention.self, bert.encoder.layer.2.attention.self."""

    def __init__(self):
        super().__init__()
        self.query = nn.Dense(in_channels=32, out_channels=32)
        self.key = nn.Dense(in_channels=32, out_channels=32)
        self.value = nn.Dense(in_channels=32, out_channels=32)

    def construct(self, hidden_states, attention_mask):
        batch_size, seq_len, _ = hidden_states.shape
        shape = (batch_size, seq_len, -1, 16)
        q = ops.reshape(self.query(hidden_states), shape).swapaxes(1, 2)
        k = ops.reshape(self.key(hidden_states), shape).swapaxes(1, 2)
        v = ops.reshape(self.value(hidden_states), shape).swapaxes(1, 2)
        scores = ops.matmul(q, k.swapaxes(-1, -2)) / math.sqrt(16)
        probs = ops.softmax(scores + attention_mask, axis=-1)
        context = ops.matmul(probs, v)
        out = ops.reshape(context.swapaxes(1, 2), (batch_size, seq_len, -1))
        return out


class BertSelfOutput(nn.Cell):
    """Recovered from bert.encoder.layer.0.attention.output, bert.encoder.layer.1.attention.output, bert.encoder.layer.2.attention.output."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(in_channels=32, out_channels=32)
        self.layer_norm = nn.LayerNorm(normalized_shape=(32,), epsilon=1e-12)

    def construct(self, hidden_states, residual):
        hidden_states = self.dense(hidden_states)
        hidden_states = hidden_states + residual
        return self.layer_norm(hidden_states)


class BertAttention(nn.Cell):
    """Recovered from bert.encoder.layer.0.attention, bert.encoder.layer.1.attention, bert.encoder.layer.2.attention."""

    def __init__(self):
        super().__init__()
        self.self = BertSelfAttention()
        self.output = BertSelfOutput()

    def construct(self, hidden_states, attention_mask):
        x = self.self(hidden_states, attention_mask)
        return self.output(x, hidden_states)


class BertIntermediate(nn.Cell):
    """Recovered from bert.encoder.layer.0.intermediate, bert.encoder.layer.1.intermediate, bert.encoder.layer.2.intermediate."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(in_channels=32, out_channels=64)
        self.intermediate_act_fn = nn.GELU(approximate=False)

    def construct(self, hidden_states):
        hidden_states = self.dense(hidden_states)
        return self.intermediate_act_fn(hidden_states)


class BertOutput(nn.Cell):
    """Recovered from bert.encoder.layer.0.output, bert.encoder.layer.1.output, bert.encoder.layer.2.output."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(in_channels=64, out_channels=32)
        self.layer_norm = nn.LayerNorm(normalized_shape=(32,), epsilon=1e-12)

    def construct(self, hidden_states, residual):
        hidden_states = self.dense(hidden_states)
        hidden_states = hidden_states + residual
        return self.layer_norm(hidden_states)


class BertLayer(nn.Cell):
    """Recovered from bert.encoder.layer.0, bert.encoder.layer.1, bert.encoder.layer.2."""

    def __init__(self):
        super().__init__()
        self.attention = BertAttention()
        self.intermediate = BertIntermediate()
        self.output = BertOutput()

    def construct(self, hidden_states, attention_mask):
        hidden_states = self.attention(hidden_states, attention_mask)
        x = self.intermediate(hidden_states)
        return self.output(x, hidden_states)


class BertEncoder(nn.Cell):
    """Recovered from bert.encoder."""

    def __init__(self):
        super().__init__()
        self.layer = nn.CellList([BertLayer(), BertLayer(), BertLayer()])

    def construct(self, hidden_states, attention_mask):
        attention_mask = ops.where(attention_mask, 0.0, -3.4028235e38)
        for layer in self.layer:
            hidden_states = layer(hidden_states, attention_mask)
        return hidden_states


class BertPooler(nn.Cell):
    """Recovered from bert.pooler."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(in_channels=32, out_channels=32)

    def construct(self, hidden_states):
        hidden_states = hidden_states[:, 0]
        hidden_states = self.dense(hidden_states)
        hidden_states = ops.tanh(hidden_states)
        return hidden_states


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
        attention_mask = attention_mask[:, None, None, :]
        x = self.encoder(x, attention_mask)
        return x, self.pooler(x)


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
        last_hidden_state, pooler_output = self.bert(input_ids, attention_mask)
        return last_hidden_state, pooler_output


def dynamic_inputs():
    """The inputs with their dynamic dimensions (None), for GRAPH_MODE:
    ``net.set_inputs(*dynamic_inputs())`` compiles one graph for every size."""
    return (
        ms.Tensor(shape=[None, None], dtype=ms.int64),
        ms.Tensor(shape=[None, None], dtype=ms.int64),
    )
