"""LSTM, GRU and RNN whose weights are graph inputs (computed or fed at run time): the ONNX
recurrence written out step by step with ops, the weights passed in as arguments, so nothing
is stored in the checkpoint. ONNX's layout and gate order are kept (LSTM i, o, f, c; GRU z, r,
h); peepholes, both GRU reset forms, per-batch sequence lengths and both directions follow the
ONNX equations."""

from __future__ import annotations

import numpy as np

from .base import Cell, Input, Item, Lit, NodeContext, Outputs, Temp, Unsupported
from .syntax import ops

GATES = {"lstm": 4, "gru": 3, "rnn": 1}
DEFAULT_ACTIVATIONS = {
    "lstm": ("sigmoid", "tanh", "tanh"),
    "gru": ("sigmoid", "tanh"),
    "rnn": ("tanh",),
}

_DEFINITION = '''class RecurrenceOfInputs(nn.Cell):
    """ONNX's LSTM, GRU or RNN step by step, for weights given at run time: W [directions,
    gates * hidden, input], R [directions, gates * hidden, hidden], B [directions, 2 * gates *
    hidden], P [directions, 3 * hidden] in ONNX's gate order (LSTM i, o, f, c; GRU z, r, h).
    x is [seq, batch, input]; returns Y [seq, directions, batch, hidden], Y_h and Y_c
    [directions, batch, hidden]. A batch's steps past its length keep its states and output
    zeros; missing biases, peepholes and initial states are zeros."""

    def __init__(self, kind, hidden_size, directions=1, reverse=False, relu=False, reset_after=0):
        super().__init__()
        self.kind = kind
        self.hidden_size = hidden_size
        self.directions = directions
        self.reverse = reverse  # one direction, run from the last step to the first
        self.relu = relu  # an RNN with Relu instead of Tanh
        self.reset_after = reset_after  # GRU linear_before_reset
        self.gates = {"lstm": 4, "gru": 3, "rnn": 1}[kind]

    def step(self, x_t, h, c, w, r, b, p):
        size, gates = self.hidden_size, self.gates
        gx = ops.matmul(x_t, w.T) + b[: gates * size]
        gh = ops.matmul(h, r.T) + b[gates * size :]
        if self.kind == "lstm":
            g = gx + gh
            i = ops.sigmoid(g[:, :size] + p[:size] * c)
            f = ops.sigmoid(g[:, 2 * size : 3 * size] + p[2 * size :] * c)
            c = f * c + i * ops.tanh(g[:, 3 * size :])
            o = ops.sigmoid(g[:, size : 2 * size] + p[size : 2 * size] * c)
            return o * ops.tanh(c), c
        if self.kind == "gru":
            z = ops.sigmoid(gx[:, :size] + gh[:, :size])
            reset = ops.sigmoid(gx[:, size : 2 * size] + gh[:, size : 2 * size])
            if self.reset_after:
                n = ops.tanh(gx[:, 2 * size :] + reset * gh[:, 2 * size :])
            else:
                recurrent = ops.matmul(reset * h, r[2 * size :].T) + b[5 * size :]
                n = ops.tanh(gx[:, 2 * size :] + recurrent)
            return (1 - z) * n + z * h, c
        a = gx + gh
        return (ops.relu(a) if self.relu else ops.tanh(a)), c

    def scan(self, x, h, c, weights, lengths, backwards):
        steps = x.shape[0]
        outputs = []
        for k in range(steps):
            t = steps - 1 - k if backwards else k
            h_next, c_next = self.step(x[t], h, c, *weights)
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

    def construct(self, x, w, r, b=None, h0=None, c0=None, lengths=None, p=None):
        size, gates = self.hidden_size, self.gates
        shape = (self.directions, x.shape[1], size)
        b = ops.zeros((self.directions, 2 * gates * size), x.dtype) if b is None else b
        p = ops.zeros((self.directions, 3 * size), x.dtype) if p is None else p
        h0 = ops.zeros(shape, x.dtype) if h0 is None else h0
        c0 = ops.zeros(shape, x.dtype) if c0 is None else c0
        ys, hs, cs = [], [], []
        for d in range(self.directions):
            weights = (w[d], r[d], b[d], p[d])
            y, h, c = self.scan(x, h0[d], c0[d], weights, lengths, self.reverse or d == 1)
            ys.append(y)
            hs.append(h)
            cs.append(c)
        return ops.stack(ys, 1), ops.stack(hs, 0), ops.stack(cs, 0)'''


def has_run_time_weights(ctx: NodeContext, kind: str) -> bool:
    """Whether a weight input (W, R, B, and an LSTM's P) is computed at run time."""
    indices = (1, 2, 3, 7) if kind == "lstm" else (1, 2, 3)
    return any(ctx.has_input(i) and not ctx.is_const(i) for i in indices)


def _activation_options(ctx: NodeContext, kind: str, directions: int) -> dict:
    if ctx.attr("clip") is not None:
        raise Unsupported("the clip attribute")
    if kind == "lstm" and int(ctx.attr("input_forget", 0)):
        raise Unsupported("LSTM with input_forget=1 (coupled input and forget gates)")
    defaults = list(DEFAULT_ACTIVATIONS[kind]) * directions
    names = [a.lower() for a in ctx.attr("activations", [])] or defaults
    if kind == "rnn" and names == ["relu"] * directions:
        return {"relu": True}
    if names != defaults:
        raise Unsupported(f"{kind.upper()} activations {names} with weights given at run time")
    return {}


def _sequence_lengths(ctx: NodeContext, seq_len):
    """The sequence_lens operand, or None when every batch runs the whole sequence."""
    if not ctx.has_input(4):
        return None
    lengths = ctx.const(4)
    if lengths is not None and np.all(np.asarray(lengths) == seq_len):
        return None
    return ctx.operand(4)


def recurrence_of_inputs(ctx: NodeContext, kind: str) -> Outputs:
    """LSTM/GRU/RNN with run-time weights -> the script's RecurrenceOfInputs cell (no weights
    of its own: W, R, B and P are its arguments)."""
    direction = ctx.attr("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise Unsupported(f"direction '{direction}'")
    directions = 2 if direction == "bidirectional" else 1
    layout = int(ctx.attr("layout", 0))
    x_shape = ctx.require_shape(0)
    r_shape = ctx.require_shape(2)
    if len(x_shape) != 3 or len(r_shape) != 3:
        raise Unsupported(f"a rank-{len(x_shape)} sequence input")
    hidden = ctx.attr("hidden_size", r_shape[-1])
    if not isinstance(hidden, (int, np.integer)):
        raise Unsupported("a hidden size known only at run time")
    kwargs = {"kind": kind, "hidden_size": int(hidden)}
    if directions == 2:
        kwargs["directions"] = 2
    elif direction == "reverse":
        kwargs["reverse"] = True
    kwargs.update(_activation_options(ctx, kind, directions))
    if kind == "gru" and int(ctx.attr("linear_before_reset", 0)):
        kwargs["reset_after"] = 1

    def batch_second(value):  # layout 1 keeps the batch first
        return ops.transpose(value, Lit((1, 0, 2))) if layout else value

    args = [batch_second(Input(0)), ctx.operand(1), ctx.operand(2)]
    args.append(ctx.operand(3) if ctx.has_input(3) else None)
    args += [batch_second(ctx.operand(i)) if ctx.has_input(i) else None for i in (5, 6)]
    args.append(_sequence_lengths(ctx, x_shape[1 if layout else 0]))
    args.append(ctx.operand(7) if kind == "lstm" and ctx.has_input(7) else None)
    while args[-1] is None:
        args.pop()
    args = [Lit(None) if a is None else a for a in args]
    cell = Cell(
        "RecurrenceOfInputs",
        kwargs=kwargs,
        args=args,
        role=kind,
        definition=_DEFINITION,
        uses=frozenset({"ops"}),
    )
    result = Temp(cell, f"{kind}_out")
    outputs = [Item(result, i) for i in range(3 if kind == "lstm" else 2)]
    if layout:
        outputs[0] = ops.transpose(outputs[0], Lit((2, 0, 1, 3)))
        outputs[1:] = [ops.transpose(v, Lit((1, 0, 2))) for v in outputs[1:]]
    return Outputs([e if ctx.has_output(i) else None for i, e in enumerate(outputs)])
