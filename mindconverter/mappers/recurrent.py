"""Recurrent layers: LSTM, GRU and RNN as ``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN`` cells.

ONNX and MindSpore order the gates differently (ONNX LSTM: i, o, f, c; MindSpore: i, f, c, o.
ONNX GRU: z, r, h; MindSpore: r, z, h), so the weights are reordered gate-block by gate-block and
the weight map records it. ONNX's Y is [seq, num_directions, batch, hidden] (layout 0) or
[batch, seq, num_directions, hidden] (layout 1); MindSpore concatenates the directions on the
last axis, so Y is reshaped (and transposed for layout 0). A 'reverse'-only layer runs a forward
cell over the time-reversed sequence and reverses its output back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..graph.weight_steps import GateReorder, Index
from .base import Cell, Input, Item, Lit, NodeContext, Outputs, Temp, Unsupported, Weight
from .recurrent_inputs import has_run_time_weights, recurrence_of_inputs
from .registry import mapper
from .syntax import ops


@dataclass(frozen=True)
class _Kind:
    cls: str
    gates: int
    order: tuple[int, ...]  # MindSpore gate k is ONNX gate order[k]
    order_text: str
    activations: tuple[str, ...]  # ONNX defaults for one direction


_LSTM = _Kind("nn.LSTM", 4, (0, 2, 3, 1), "gates i,o,f,c -> i,f,c,o", ("sigmoid", "tanh", "tanh"))
_GRU = _Kind("nn.GRU", 3, (1, 0, 2), "gates z,r,h -> r,z,h", ("sigmoid", "tanh"))
_RNN = _Kind("nn.RNN", 1, (0,), "", ("tanh",))


def _gate_steps(kind: _Kind) -> tuple:
    """The gate reorder of ``kind`` as a typed step (none for a one-gate RNN)."""
    if not kind.order_text:
        return ()
    source, target = kind.order_text.removeprefix("gates ").split(" -> ")
    return (GateReorder(tuple(source.split(",")), tuple(target.split(","))),)


def _reorder(array: np.ndarray, kind: _Kind, hidden: int) -> np.ndarray:
    blocks = [array[g * hidden : (g + 1) * hidden] for g in range(kind.gates)]
    return np.concatenate([blocks[g] for g in kind.order], axis=0)


def _check_common(ctx: NodeContext, kind: _Kind, directions: int) -> list[str]:
    """Reject what the MindSpore cells cannot do; returns the (lower-case) activation list."""
    if ctx.attr("clip") is not None:
        raise Unsupported("the clip attribute (MindSpore's recurrent cells do not clip)")
    names = [a.lower() for a in ctx.attr("activations", [])] or list(kind.activations) * directions
    if len(names) != len(kind.activations) * directions:
        raise Unsupported(f"activations {names} do not match {directions} direction(s)")
    if kind is not _LSTM and not _full_lengths(ctx):
        raise Unsupported("sequence_lens shorter than the sequence (variable-length batches)")
    return names


def _full_lengths(ctx: NodeContext) -> bool:
    """True when every batch runs the whole sequence: no sequence_lens, or constant ones equal
    to the sequence length."""
    if not ctx.has_input(4):
        return True
    lengths = ctx.const(4)
    seq_len = ctx.require_shape(0)[1 if int(ctx.attr("layout", 0)) else 0]
    return lengths is not None and bool(np.all(np.asarray(lengths) == seq_len))


def _recurrent(ctx: NodeContext, kind: _Kind, extra_kwargs: dict, state_inputs: tuple[int, ...]):
    direction = ctx.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise Unsupported(f"direction '{direction}'")
    directions = 2 if direction == "bidirectional" else 1
    layout = int(ctx.attr("layout", 0))
    x_shape = ctx.require_shape(0)
    if len(x_shape) != 3:
        raise Unsupported(f"a rank-{len(x_shape)} sequence input")
    w = ctx.require_const(1, "W")
    r = ctx.require_const(2, "R")
    hidden = int(ctx.attr("hidden_size", r.shape[-1]))
    if w.shape != (directions, kind.gates * hidden, x_shape[2]) or r.shape != (
        directions,
        kind.gates * hidden,
        hidden,
    ):
        raise Unsupported(
            f"weights of shape {w.shape} / {r.shape} do not match hidden_size {hidden}"
        )

    weights: dict[str, Weight] = {}
    has_bias = ctx.has_input(3)
    b = ctx.require_const(3, "B") if has_bias else None
    for d in range(directions):
        suffix = "_reverse" if d == 1 else ""
        order = _gate_steps(kind)
        note = (Index((d,)), *order)
        weights[f"weight_ih_l0{suffix}"] = ctx.weight(1, _reorder(w[d], kind, hidden), note)
        weights[f"weight_hh_l0{suffix}"] = ctx.weight(2, _reorder(r[d], kind, hidden), note)
        if b is not None:
            size = kind.gates * hidden
            weights[f"bias_ih_l0{suffix}"] = ctx.weight(
                3, _reorder(b[d, :size], kind, hidden), (Index((d, (None, size))), *order)
            )
            weights[f"bias_hh_l0{suffix}"] = ctx.weight(
                3, _reorder(b[d, size:], kind, hidden), (Index((d, (size, None))), *order)
            )

    kwargs = {"input_size": int(x_shape[2]), "hidden_size": hidden, **extra_kwargs}
    if not has_bias:
        kwargs["has_bias"] = False
    if layout:
        kwargs["batch_first"] = True
    if directions == 2:
        kwargs["bidirectional"] = True

    time_axis = 1 if layout else 0
    x = Input(0)
    if direction == "reverse":
        x = ops.flip(x, Lit((time_axis,)))

    # initial states: ONNX [num_directions, batch, hidden] (layout 1: [batch, num_directions, hidden])
    states = []
    for index in state_inputs:
        if ctx.has_input(index):
            state = ctx.operand(index)
            states.append(ops.transpose(state, Lit((1, 0, 2))) if layout else state)
        else:
            states.append(None)
    args = [x]
    if any(s is not None for s in states):
        if len(states) == 2:  # LSTM: (h0, c0), a missing one is zeros like the other
            given = next(s for s in states if s is not None)
            states = [s if s is not None else ops.zeros_like(given) for s in states]
            args.append(tuple(states))
        else:
            args.append(states[0])
    result = Temp(
        Cell(
            kind.cls, kwargs=kwargs, args=args, weights=weights, role=kind.cls.split(".")[1].lower()
        ),
        kind.cls.split(".")[1].lower() + "_out",
    )

    y = Item(result, 0)
    if direction == "reverse":
        y = ops.flip(y, Lit((time_axis,)))
    # the cell concatenates the directions on the last axis; ONNX gives them an axis of their
    # own (after the time axis, or after batch and time with layout 1): no size is needed, so
    # dynamic batch and sequence sizes stay dynamic
    direction_axis = 2 if layout else 1
    if directions == 1:
        y = ops.expand_dims(y, Lit(direction_axis))
    else:
        halves = ops.split(y, Lit(hidden), axis=Lit(2))
        y = ops.stack(halves, axis=Lit(direction_axis))
    finals = (
        [Item(Item(result, 1), i) for i in range(len(state_inputs))]
        if len(state_inputs) == 2
        else [Item(result, 1)]
    )
    if layout:
        finals = [ops.transpose(f, Lit((1, 0, 2))) for f in finals]
    exprs = [y] + finals
    return Outputs([e if ctx.has_output(i) else None for i, e in enumerate(exprs)])


@mapper("LSTM", since=7)
def lstm(ctx: NodeContext):
    """LSTM -> nn.LSTM (gates reordered), or the script's LSTMByStep cell for peepholes and
    variable sequence lengths (RecurrenceOfInputs for weights given at run time); input_forget,
    clip and custom activations are not supported."""
    if has_run_time_weights(ctx, "lstm"):
        return recurrence_of_inputs(ctx, "lstm")
    directions = 2 if ctx.attr("direction", "forward") == "bidirectional" else 1
    names = _check_common(ctx, _LSTM, directions)
    if names != list(_LSTM.activations) * directions:
        raise Unsupported(f"LSTM activations {names} (MindSpore's nn.LSTM uses sigmoid/tanh/tanh)")
    if int(ctx.attr("input_forget", 0)):
        raise Unsupported("LSTM with input_forget=1 (coupled input and forget gates)")
    peepholes = ctx.require_const(7, "the peephole weights P") if ctx.has_input(7) else None
    if np.any(peepholes) or not _full_lengths(ctx):
        return _lstm_by_step(ctx, directions)
    return _recurrent(ctx, _LSTM, {}, (5, 6))


_LSTM_BY_STEP = '''class LSTMByStep(nn.Cell):
    """ONNX's LSTM written out step by step, for what nn.LSTM cannot do: peephole weights and
    per-batch sequence lengths (a batch's steps past its length keep its states and output
    zeros). Weights keep ONNX's layout and gate order (i, o, f, c) per direction; x is
    [seq, batch, input]; returns Y [seq, directions, batch, hidden], Y_h and Y_c
    [directions, batch, hidden]; missing initial states are zeros."""

    def __init__(self, input_size, hidden_size, directions=1, reverse=False):
        super().__init__()
        self.hidden_size = hidden_size
        self.directions = directions
        self.reverse = reverse  # one direction, run from the last step to the first
        gates = 4 * hidden_size
        self.weight_ih = Parameter(ops.zeros((directions, gates, input_size), ms.float32))
        self.weight_hh = Parameter(ops.zeros((directions, gates, hidden_size), ms.float32))
        self.bias = Parameter(ops.zeros((directions, 2 * gates), ms.float32))
        self.peephole = Parameter(ops.zeros((directions, 3 * hidden_size), ms.float32))

    def step(self, x_t, h, c, d):
        size = self.hidden_size
        bias, peephole = self.bias[d], self.peephole[d]
        gates = ops.matmul(x_t, self.weight_ih[d].T) + ops.matmul(h, self.weight_hh[d].T)
        gates = gates + bias[: 4 * size] + bias[4 * size :]
        i = ops.sigmoid(gates[:, :size] + peephole[:size] * c)
        f = ops.sigmoid(gates[:, 2 * size : 3 * size] + peephole[2 * size :] * c)
        c = f * c + i * ops.tanh(gates[:, 3 * size :])
        o = ops.sigmoid(gates[:, size : 2 * size] + peephole[size : 2 * size] * c)
        return o * ops.tanh(c), c

    def scan(self, x, h, c, lengths, d, backwards):
        steps = x.shape[0]
        outputs = []
        for k in range(steps):
            t = steps - 1 - k if backwards else k
            h_next, c_next = self.step(x[t], h, c, d)
            if lengths is None:
                h, c = h_next, c_next
                outputs.append(h)
            else:  # only the batches still inside their sequence move on
                running = ops.expand_dims(lengths > t, 1)
                h = ops.where(running, h_next, h)
                c = ops.where(running, c_next, c)
                outputs.append(ops.where(running, h_next, ops.zeros_like(h_next)))
        if backwards:
            outputs = outputs[::-1]
        return ops.stack(outputs, 0), h, c

    def construct(self, x, h0=None, c0=None, lengths=None):
        shape = (self.directions, x.shape[1], self.hidden_size)
        h0 = ops.zeros(shape, x.dtype) if h0 is None else h0
        c0 = ops.zeros(shape, x.dtype) if c0 is None else c0
        ys, hs, cs = [], [], []
        for d in range(self.directions):
            y, h, c = self.scan(x, h0[d], c0[d], lengths, d, self.reverse or d == 1)
            ys.append(y)
            hs.append(h)
            cs.append(c)
        return ops.stack(ys, 1), ops.stack(hs, 0), ops.stack(cs, 0)'''


def _lstm_by_step(ctx: NodeContext, directions: int):
    """LSTM with peepholes or variable sequence lengths -> the script's LSTMByStep cell."""
    layout = int(ctx.attr("layout", 0))
    x_shape = ctx.require_shape(0)
    w, r = ctx.require_const(1, "W"), ctx.require_const(2, "R")
    hidden = int(ctx.attr("hidden_size", r.shape[-1]))
    gates = 4 * hidden
    if len(x_shape) != 3 or w.shape != (directions, gates, x_shape[2]):
        raise Unsupported(f"weights of shape {w.shape} do not match the input {x_shape}")
    if r.shape != (directions, gates, hidden) or w.dtype != np.float32:
        raise Unsupported(f"recurrent weights of shape {r.shape} and dtype {w.dtype}")
    weights = {"weight_ih": ctx.weight(1), "weight_hh": ctx.weight(2)}
    for name, index, size in (("bias", 3, 2 * gates), ("peephole", 7, 3 * hidden)):
        if ctx.has_input(index):
            weights[name] = ctx.weight(index)
        else:
            zeros = np.zeros((directions, size), np.float32)
            weights[name] = Weight(zeros, "", f"zeros (no {name} in the source)")
    if weights["bias"].array.shape != (directions, 2 * gates) or weights[
        "peephole"
    ].array.shape != (directions, 3 * hidden):
        raise Unsupported("bias or peephole weights of unexpected shape")

    def batch_second(value):  # layout 1 keeps the batch first
        return ops.transpose(value, Lit((1, 0, 2))) if layout else value

    args = [batch_second(Input(0))]
    args += [batch_second(ctx.operand(i)) if ctx.has_input(i) else None for i in (5, 6)]
    args.append(None if _full_lengths(ctx) else ctx.operand(4))
    while args[-1] is None:
        args.pop()
    kwargs = {"input_size": int(x_shape[2]), "hidden_size": hidden}
    if directions == 2:
        kwargs["directions"] = 2
    elif ctx.attr("direction", "forward") == "reverse":
        kwargs["reverse"] = True
    cell = Cell(
        "LSTMByStep",
        kwargs=kwargs,
        args=args,
        weights=weights,
        role="lstm",
        definition=_LSTM_BY_STEP,
        uses=frozenset({"ms", "ops", "Parameter"}),
    )
    result = Temp(cell, "lstm_out")
    outputs = [Item(result, i) for i in range(3)]
    if layout:
        outputs[0] = ops.transpose(outputs[0], Lit((2, 0, 1, 3)))
        outputs[1:] = [ops.transpose(v, Lit((1, 0, 2))) for v in outputs[1:]]
    return Outputs([e if ctx.has_output(i) else None for i, e in enumerate(outputs)])


@mapper("GRU", since=7)
def gru(ctx: NodeContext):
    """GRU with linear_before_reset=1 (PyTorch's form) -> nn.GRU (gates reordered)."""
    if has_run_time_weights(ctx, "gru"):
        return recurrence_of_inputs(ctx, "gru")
    directions = 2 if ctx.attr("direction", "forward") == "bidirectional" else 1
    names = _check_common(ctx, _GRU, directions)
    if names != list(_GRU.activations) * directions:
        raise Unsupported(f"GRU activations {names} (MindSpore's nn.GRU uses sigmoid/tanh)")
    if not int(ctx.attr("linear_before_reset", 0)):
        return _gru_reset_first(ctx, directions)
    return _recurrent(ctx, _GRU, {}, (5,))


def _gru_reset_first(ctx: NodeContext, directions: int):
    """GRU with linear_before_reset=0 (Keras' reset_after=False) -> the script's GRUResetFirst
    cell, which writes the recurrence out (nn.GRU resets after the recurrent transform)."""
    layout = int(ctx.attr("layout", 0))
    x_shape = ctx.require_shape(0)
    w, r = ctx.require_const(1, "W"), ctx.require_const(2, "R")
    hidden = int(ctx.attr("hidden_size", r.shape[-1]))
    gates = 3 * hidden
    if len(x_shape) != 3 or w.shape != (directions, gates, x_shape[2]):
        raise Unsupported(f"weights of shape {w.shape} do not match the input {x_shape}")
    if r.shape != (directions, gates, hidden) or w.dtype != np.float32:
        raise Unsupported(f"recurrent weights of shape {r.shape} and dtype {w.dtype}")
    b = ctx.require_const(3, "B") if ctx.has_input(3) else None
    weights: dict[str, Weight] = {}
    for d in range(directions):
        suffix = "_reverse" if d == 1 else ""
        weights[f"weight_ih_l0{suffix}"] = ctx.weight(1, w[d], f"[{d}]")
        weights[f"weight_hh_l0{suffix}"] = ctx.weight(2, r[d], f"[{d}]")
        for name, part in (("bias_ih_l0", slice(0, gates)), ("bias_hh_l0", slice(gates, None))):
            if b is None:
                zeros = np.zeros(gates, np.float32)
                weights[name + suffix] = Weight(zeros, "", "zeros (no bias in the source)")
            else:
                text = f"[{d}, {part.start or ''}:{part.stop or ''}]"
                weights[name + suffix] = ctx.weight(3, np.ascontiguousarray(b[d, part]), text)
    x = ops.transpose(Input(0), Lit((1, 0, 2))) if layout else Input(0)
    args = [x]  # without an initial state the cell starts from zeros
    if ctx.has_input(5):
        h0 = ctx.operand(5)
        args.append(ops.transpose(h0, Lit((1, 0, 2))) if layout else h0)
    kwargs = {"input_size": int(x_shape[2]), "hidden_size": hidden}
    if directions == 2:
        kwargs["bidirectional"] = True
    elif ctx.attr("direction", "forward") == "reverse":
        kwargs["reverse"] = True
    cell = Cell("GRUResetFirst", kwargs=kwargs, args=args, weights=weights, role="gru")
    result = Temp(cell, "gru_out")
    y, y_h = Item(result, 0), Item(result, 1)
    if layout:
        y = ops.transpose(y, Lit((2, 0, 1, 3)))
        y_h = ops.transpose(y_h, Lit((1, 0, 2)))
    return Outputs([e if ctx.has_output(i) else None for i, e in enumerate([y, y_h])])


@mapper("RNN", since=7)
def rnn(ctx: NodeContext):
    """RNN -> nn.RNN with nonlinearity 'tanh' (default) or 'relu'."""
    if has_run_time_weights(ctx, "rnn"):
        return recurrence_of_inputs(ctx, "rnn")
    directions = 2 if ctx.attr("direction", "forward") == "bidirectional" else 1
    names = _check_common(ctx, _RNN, directions)
    if len(set(names)) != 1 or names[0] not in ("tanh", "relu"):
        raise Unsupported(
            f"RNN activations {names} (MindSpore's nn.RNN offers one of tanh/relu for all directions)"
        )
    extra = {"nonlinearity": "relu"} if names[0] == "relu" else {}
    return _recurrent(ctx, _RNN, extra, (5,))
