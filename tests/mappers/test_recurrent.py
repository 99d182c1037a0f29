"""Numeric tests of LSTM, GRU and RNN (directions, layouts, initial states) against onnxruntime."""

import numpy as np
import onnx
import pytest
from onnx import helper

from mindconverter import convert
from mindconverter.check.network import run_mindspore
from mindconverter.check.verify import run_onnxruntime
from tests.helpers import assert_matches, make_model

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
SEQ, BATCH, INPUT, HIDDEN = 5, 2, 3, 4


def w(rng, *shape):
    return (rng.standard_normal(shape) * 0.5).astype(np.float32)


def rnn_model(
    op,
    direction="forward",
    layout=0,
    bias=True,
    initial=(),
    outputs=None,
    opset=14,
    seq_lens=None,
    weights=None,
    peepholes=False,
    lengths_input=False,
    **attrs,
):
    """One recurrent node; ``initial`` names the given initial states ('h', 'c'); LSTM
    ``peepholes`` adds random P; ``lengths_input`` makes sequence_lens a graph input."""
    nd = 2 if direction == "bidirectional" else 1
    g = GATES[op]
    rng = np.random.default_rng(11)  # the same weights whatever ran before (xdist)
    x_shape = (BATCH, SEQ, INPUT) if layout else (SEQ, BATCH, INPUT)
    state_shape = (BATCH, nd, HIDDEN) if layout else (nd, BATCH, HIDDEN)
    inits = (
        dict(weights)
        if weights
        else {
            "W": w(rng, nd, g * HIDDEN, INPUT),
            "R": w(rng, nd, g * HIDDEN, HIDDEN),
            "B": w(rng, nd, 2 * g * HIDDEN),
        }
    )
    names = ["x", "W", "R"]
    if not bias:
        inits.pop("B")
    names.append("B" if bias else "")
    graph_inputs = [("x", np.float32, x_shape)]
    if lengths_input:
        graph_inputs.append(("L", np.int32, [BATCH]))
    elif seq_lens is not None:
        inits["L"] = np.array(seq_lens, np.int32)
    names.append("L" if seq_lens is not None or lengths_input else "")
    for state in ("h", "c") if op == "LSTM" else ("h",):
        if state in initial:
            graph_inputs.append((f"{state}0", np.float32, state_shape))
        names.append(f"{state}0" if state in initial else "")
    if peepholes:
        inits["P"] = w(rng, nd, 3 * HIDDEN)
        names.append("P")
    while names and not names[-1]:
        names.pop()
    if layout:
        attrs["layout"] = 1
    count = 3 if op == "LSTM" else 2
    outputs = list(range(count)) if outputs is None else outputs
    out_names = [f"y{i}" if i in outputs else "" for i in range(count)]
    while out_names and not out_names[-1]:
        out_names.pop()
    node = helper.make_node(op, names, out_names, direction=direction, hidden_size=HIDDEN, **attrs)
    return make_model(
        [node], graph_inputs, [(n, np.float32, None) for n in out_names if n], inits, opset=opset
    )


LSTM_CASES = [
    {},
    {"direction": "reverse"},
    {"direction": "bidirectional"},
    {"initial": ("h", "c")},
    {"initial": ("c",)},
    {"direction": "bidirectional", "initial": ("h", "c"), "bias": False},
    {"direction": "reverse", "initial": ("h", "c")},
    {"opset": 7, "outputs": [1]},
    {"outputs": [0], "seq_lens": [SEQ] * BATCH},
]
GRU_CASES = [
    {},
    {"direction": "reverse", "initial": ("h",)},
    {"direction": "bidirectional", "initial": ("h",)},
    {"bias": False, "outputs": [1]},
]
RNN_CASES = [
    {},
    {"direction": "reverse"},
    {"direction": "bidirectional", "initial": ("h",)},
    {"activations": ["Relu"]},
    {"direction": "bidirectional", "activations": ["Relu", "Relu"]},
]


@pytest.mark.parametrize("case", LSTM_CASES)
def test_lstm(tmp_path, case):
    assert_matches(rnn_model("LSTM", **case), tmp_path)


@pytest.mark.parametrize("case", GRU_CASES)
def test_gru(tmp_path, case):
    assert_matches(rnn_model("GRU", linear_before_reset=1, **case), tmp_path)


@pytest.mark.parametrize("graph_mode", [False, True])
@pytest.mark.parametrize("case", GRU_CASES)
def test_gru_resetting_before_the_recurrent_transform(tmp_path, case, graph_mode):
    """linear_before_reset=0 (Keras' reset_after=False): the script's GRUResetFirst cell."""
    result = assert_matches(rnn_model("GRU", **case), tmp_path, graph_mode=graph_mode)
    assert "class GRUResetFirst(nn.Cell)" in result.script_path.read_text()


@pytest.mark.parametrize("case", RNN_CASES)
def test_rnn(tmp_path, case):
    assert_matches(rnn_model("RNN", **case), tmp_path)


@pytest.mark.parametrize(
    "op, case",
    [
        ("LSTM", {"direction": "bidirectional", "initial": ("h", "c")}),
        ("LSTM", {"direction": "reverse", "initial": ("h",)}),
        ("GRU", {"direction": "bidirectional", "initial": ("h",), "linear_before_reset": 1}),
        ("GRU", {"direction": "bidirectional", "initial": ("h",)}),
        ("GRU", {"direction": "reverse"}),
        ("RNN", {"direction": "reverse"}),
    ],
)
def test_batch_first_layout(tmp_path, op, case):
    """layout=1 (opset 14): onnxruntime has no kernel, so compare with the same layer in layout 0."""
    nd = 2 if case.get("direction") == "bidirectional" else 1
    g = GATES[op]
    rng = np.random.default_rng(5)
    weights = {
        "W": w(rng, nd, g * HIDDEN, INPUT),
        "R": w(rng, nd, g * HIDDEN, HIDDEN),
        "B": w(rng, nd, 2 * g * HIDDEN),
    }
    batch_first = rnn_model(op, layout=1, weights=weights, **case)
    onnx.save(batch_first, str(tmp_path / "m.onnx"))
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out")
    assert result.unconverted == []
    feeds = {"x": w(rng, BATCH, SEQ, INPUT)}
    feeds.update({f"{s}0": w(rng, BATCH, nd, HIDDEN) for s in case.get("initial", ())})
    got = run_mindspore(result.script_path, result.checkpoint_path, list(feeds.values()))
    seq_first = rnn_model(op, weights=weights, **case)
    want = run_onnxruntime(
        seq_first,
        {k: v.transpose(1, 0, 2) for k, v in feeds.items()},
        [o.name for o in seq_first.graph.output],
    )
    want = [want[0].transpose(2, 0, 1, 3)] + [v.transpose(1, 0, 2) for v in want[1:]]
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_lstm_weight_map_records_reorder(tmp_path):
    result = assert_matches(rnn_model("LSTM", direction="bidirectional"), tmp_path)
    text = result.script_path.read_text()
    assert "nn.LSTM(" in text and "bidirectional=True" in text


@pytest.mark.parametrize(
    "op, kwargs, reason",
    [
        ("LSTM", {"clip": 1.0}, "clip"),
        ("LSTM", {"activations": ["Sigmoid", "Tanh", "Relu"]}, "activations"),
        ("GRU", {"seq_lens": [SEQ, SEQ - 1], "linear_before_reset": 1}, "sequence_lens"),
        ("LSTM", {"peepholes": True, "clip": 1.0}, "clip"),
        ("LSTM", {"input_forget": 1}, "input_forget"),
        ("RNN", {"direction": "bidirectional", "activations": ["Relu", "Tanh"]}, "activations"),
    ],
)
def test_unsupported(tmp_path, op, kwargs, reason):
    onnx.save(rnn_model(op, **kwargs), str(tmp_path / "m.onnx"))
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out")
    assert [u.op_type for u in result.unconverted] == [op]
    assert reason in result.unconverted[0].reason


LSTM_BY_STEP_CASES = [
    {"peepholes": True},
    {"peepholes": True, "direction": "reverse", "initial": ("h", "c")},
    {"peepholes": True, "direction": "bidirectional", "initial": ("c",), "bias": False},
    {"seq_lens": [SEQ, 2]},
    {"seq_lens": [3, SEQ], "direction": "reverse", "initial": ("h",)},
    {"seq_lens": [1, 4], "direction": "bidirectional", "peepholes": True, "initial": ("h", "c")},
    {"seq_lens": [2, 3], "outputs": [1, 2], "opset": 7},
]


@pytest.mark.parametrize("graph_mode", [False, True])
@pytest.mark.parametrize("case", LSTM_BY_STEP_CASES)
def test_lstm_by_step(tmp_path, case, graph_mode):
    """Peepholes and variable sequence lengths: the script's LSTMByStep cell."""
    result = assert_matches(rnn_model("LSTM", **case), tmp_path, graph_mode=graph_mode)
    assert "class LSTMByStep(nn.Cell)" in result.script_path.read_text()


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_sequence_lengths_given_at_run_time(tmp_path, direction):
    """Y is zero past each batch's length; Y_h and Y_c hold its last valid step."""
    model = rnn_model("LSTM", direction=direction, lengths_input=True, initial=("h",))
    rng = np.random.default_rng(3)
    nd = 2 if direction == "bidirectional" else 1
    feeds = {
        "x": w(rng, SEQ, BATCH, INPUT),
        "L": np.array([2, SEQ], np.int32),
        "h0": w(rng, nd, BATCH, HIDDEN),
    }
    assert_matches(model, tmp_path, feeds)


def test_lstm_by_step_batch_first_layout(tmp_path):
    """layout=1 (onnxruntime has no kernel): the same layer in layout 0 gives the reference."""
    rng = np.random.default_rng(7)
    weights = {
        "W": w(rng, 2, 4 * HIDDEN, INPUT),
        "R": w(rng, 2, 4 * HIDDEN, HIDDEN),
        "B": w(rng, 2, 8 * HIDDEN),
    }
    case = {"direction": "bidirectional", "initial": ("h", "c"), "seq_lens": [SEQ, 3]}
    batch_first = rnn_model("LSTM", layout=1, weights=weights, peepholes=True, **case)
    onnx.save(batch_first, str(tmp_path / "m.onnx"))
    result = convert(tmp_path / "m.onnx", output=tmp_path / "out")
    assert result.unconverted == []
    feeds = {"x": w(rng, BATCH, SEQ, INPUT)}
    feeds.update({f"{s}0": w(rng, BATCH, 2, HIDDEN) for s in ("h", "c")})
    got = run_mindspore(result.script_path, result.checkpoint_path, list(feeds.values()))
    seq_first = rnn_model("LSTM", weights=weights, peepholes=True, **case)
    want = run_onnxruntime(
        seq_first,
        {k: v.transpose(1, 0, 2) for k, v in feeds.items()},
        [o.name for o in seq_first.graph.output],
    )
    want = [want[0].transpose(2, 0, 1, 3)] + [v.transpose(1, 0, 2) for v in want[1:]]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
