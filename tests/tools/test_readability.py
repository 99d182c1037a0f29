"""tools/readability.py finds each property it reports in a small script."""

from tools.readability import measure

SCRIPT = """
import mindspore as ms
from mindspore import nn, ops


class BertSelfAttention(nn.Cell):
    def construct(self, x, x_1, shape):
        mask = ops.logical_and(ms.Tensor(True, ms.bool_), x_1)
        pos = ops.unsqueeze(ops.arange(0, 4, 1), 0)
        ok = pos >= 0
        y = ops.squeeze(ops.unsqueeze(x, 0), 0)
        y = y * 1.0 + 0
        y = ops.reshape(ops.reshape(y, shape), shape)
        first = ops.gather(y, ms.Tensor(0, ms.int64), 1)
        s1 = (ops.shape(y)[0], 4)
        s2 = (ops.shape(y)[0], 4)
        y = ops.softmax(first, axis=-1)
        s2 = ops.relu(x)
        return ops.reshape(y, shape), mask, ok, s1, s2


class Encoder(nn.Cell):
    def __init__(self):
        super().__init__()
        self.layer = nn.CellList([BertSelfAttention(), nn.Dense(2, 2)])

    def construct(self, x, x_1, shape):
        x = self.layer[0](x, x_1, shape)
        return x
"""


def test_every_property_is_found():
    found = measure(SCRIPT, run_ruff=False)
    assert found["attention_lines"] == 12
    assert found["x_params"] == 2
    kinds = found["noop_kinds"]
    for kind in (
        "logical_and_true",
        "arange_ge_zero",
        "squeeze_of_unsqueeze",
        "times_one",
        "plus_zero",
        "reshape_of_reshape",
        "constant_gather",
        "repeated_shape_tuple",
    ):
        assert kinds.get(kind), (kind, kinds)
    assert found["unrolled_calls"] == 1 and found["loops"] == 0
    assert found["mixed_containers"] == 1
    assert found["size_only_params"] == 1  # ``shape`` of the attention (only given to reshape)
    # s2 = ops.relu(x) after s2 held sizes; y = ops.softmax(first) is a chain through first
    assert found["renamed_meanings"] == 1


def test_a_list_of_different_sublayers_taken_apart_by_name_is_not_mixed():
    """T5's ``layer`` list holds a different sublayer in each place, each called once."""
    script = """
from mindspore import nn


class Block(nn.Cell):
    def __init__(self):
        super().__init__()
        self.layer = nn.CellList([SelfAttentionLayer(), DenseReluDenseLayer()])

    def construct(self, hidden_states):
        self_attention, dense_relu_dense = self.layer
        hidden_states = self_attention(hidden_states)
        return dense_relu_dense(hidden_states)
"""
    found = measure(script, run_ruff=False)
    assert found["mixed_containers"] == 0 and found["unrolled_calls"] == 0
    indexed = script.replace("self_attention, dense_relu_dense = self.layer", "pass")
    assert measure(indexed, run_ruff=False)["mixed_containers"] == 1


def test_clean_script_has_nothing_to_report():
    code = "from mindspore import nn, ops\n\n\nclass Block(nn.Cell):\n    def construct(self, hidden_states):\n        hidden_states = ops.relu(hidden_states)\n        return hidden_states\n"
    found = measure(code)
    assert found["noops"] == 0 and found["x_params"] == 0 and found["renamed_meanings"] == 0
    assert found["ruff_check"] and found["ruff_imports"] and found["ruff_format"]


def test_an_attention_dissolved_into_another_class_is_measured_too():
    script = """
from mindspore import nn, ops


class Layer(nn.Cell):
    def construct(self, q, k, v):
        scores = ops.matmul(q, k.swapaxes(-1, -2))
        probs = ops.softmax(scores, axis=-1)
        return ops.matmul(probs, v)


class Head(nn.Cell):
    def construct(self, x):
        return ops.softmax(self.fc(x), axis=-1)
"""
    found = measure(script, run_ruff=False)
    assert found["attention_lines"] == 3 and found["attention_classes"] == 1
