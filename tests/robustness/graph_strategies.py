"""Hypothesis strategies for small, valid ONNX graphs over operators the converter supports.

:func:`graph_cases` draws a :class:`GraphCase`: a model of a few nodes wired over 1-3 graph
inputs (and sometimes a weight that is an operand in its own right, which the converter folds),
random small shapes and one opset of :data:`OPSETS`, plus the input values to run it on. Each
operator builder writes the operator in the form its opset defines (attributes before the opset
that moved them to inputs, negative axes only where allowed...) and picks attribute values that
give a non-empty result; shapes are then taken from ONNX shape inference, so the next node sees
what onnxruntime will compute. Callers still check the model with ``onnx.checker`` and
onnxruntime (:func:`check_valid`) and reject the rare invalid draw.

Operator families (``family=``) keep each property test focused: ``elementwise`` (unary and
binary arithmetic with broadcasting, comparisons, logic, Where, Cast), ``linear`` (MatMul, Gemm,
Conv, ConvTranspose, pooling, normalisation, depth/space), ``shape`` (Reshape, Transpose, Concat,
Slice, Squeeze, Unsqueeze, Flatten, Expand, Tile, Split, Gather, Pad, Shape arithmetic...),
``reduce`` (Softmax family, reductions, ArgMax/ArgMin, TopK, CumSum) and ``mixed`` (all).
With ``dynamic=True`` some inputs declare their leading dimension as ``N`` (the conversion then
gets ``--shape`` example sizes).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import onnx
from hypothesis import assume
from hypothesis import strategies as st
from onnx import helper, numpy_helper

OPSETS = (7, 9, 11, 13, 17, 18, 21)
F32, F64, F16 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16)
I32, I64, BOOL = np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.bool_)
FLOATS = (F32, F64)  # float16 only reaches the operators listed in HALF_OK
INTS = (I32, I64)
INT_MAX = 2**63 - 1


# Bugs these graphs found that are not fixed yet: the generator steers clear of them (each has
# a strict xfail test with its minimal reproducer in test_properties.py).
KNOWN_FINDINGS = {
    "dynamic-slice-start": "Slice with a negative step over a dynamic dimension: a start below "
    "-size is clamped the Python way (empty result) instead of to the first element, and "
    "MindSpore's indexing mishandles bounds beyond the axis (x[:-3:-2] of one element is empty)",
    "symbolic-slice-bounds": "in models with dynamic inputs, onnxruntime's symbolic shape "
    "inference gives Slice wrong sizes for bounds beyond the axis (any axis, static ones too): "
    "a Shape of the result folds to a wrong constant",
    "pinned-dim-at-example-one": "a dynamic dimension given size 1 by --shape that an Expand "
    "broadcasts to a constant size k: the converter pins the dimension to k (report note 'the model "
    "fixes it to k') and drops the Expand, so the network is wrong at the size the user gave",
    "shape-as-output": "a Reshape target that is also a graph output, in a model with a dynamic "
    "batch: ops.reshape gets the target tensor and MindSpore crashes (SIGSEGV)",
}


class Unusable(Exception):
    """The drawn node cannot be built on the current values (the draw is rejected)."""


@dataclass
class Value:
    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    live: bool = True  # computed from a graph input (not from weights alone)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


@dataclass
class GraphCase:
    """A drawn model, its input values and (when dynamic) example shapes per input name."""

    model: onnx.ModelProto
    feeds: dict[str, np.ndarray]
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    dynamic_inputs: list[str] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)

    def __repr__(self) -> str:  # what hypothesis prints for a failing example
        text = onnx.printer.to_text(self.model.graph)
        return f"GraphCase(ops={self.ops}, shapes={self.shapes})\n{text}"


class Builder:
    """The graph under construction: inputs, weights, nodes and the values they make."""

    def __init__(self, draw, opset: int, dynamic: bool = False):
        self.draw = draw
        self.opset = opset
        self.dynamic = dynamic
        self.inputs: list[Value] = []
        self.consts: dict[str, np.ndarray] = {}
        self.const_nodes: set[str] = set()
        self.nodes: list[onnx.NodeProto] = []
        self.pool: list[Value] = []  # values operators may read (inputs, operand weights, outputs)
        self.made: list[Value] = []  # values nodes made (graph output candidates)
        self.ops: list[str] = []
        self._count = 0
        self.rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))

    # --- naming, values, weights -----------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self._count += 1
        return f"{prefix}{self._count}"

    def add_input(self, dtype: np.dtype, shape) -> Value:
        value = Value(self.fresh("in"), np.dtype(dtype), tuple(int(d) for d in shape))
        self.inputs.append(value)
        self.pool.append(value)
        return value

    def const(self, array, dtype=None, prefix: str = "c") -> str:
        """A weight (initializer, or a Constant node now and then)."""
        array = np.asarray(array, dtype=dtype)
        name = self.fresh(prefix)
        self.consts[name] = array
        if self.draw(st.integers(0, 5)) == 0:
            tensor = numpy_helper.from_array(array)
            self.nodes.append(helper.make_node("Constant", [], [name], value=tensor))
            self.const_nodes.add(name)
        return name

    def operand_weight(self, dtype: np.dtype, shape) -> Value:
        """A weight that an operator reads like any value (the converter folds what it feeds)."""
        name = self.const(self.random_array(dtype, shape), prefix="w")
        return Value(name, np.dtype(dtype), tuple(shape), live=False)

    def random_array(self, dtype: np.dtype, shape) -> np.ndarray:
        dtype = np.dtype(dtype)
        if dtype.kind == "f":
            return self.rng.standard_normal(shape).astype(dtype)
        if dtype.kind == "b":
            return self.rng.integers(0, 2, shape).astype(bool)
        return self.rng.integers(-4, 5, shape).astype(dtype)

    def away_from_zero(self, dtype: np.dtype, shape) -> np.ndarray:
        """Values in ±[0.5, 2] (floats) or ±[1, 4] (integers): safe divisors."""
        dtype = np.dtype(dtype)
        sign = np.where(self.rng.integers(0, 2, shape) == 1, 1, -1)
        if dtype.kind == "f":
            return (sign * self.rng.uniform(0.5, 2.0, shape)).astype(dtype)
        return (sign * self.rng.integers(1, 5, shape)).astype(dtype)

    def ints(self, values) -> str:
        return self.const(np.array(values, np.int64), prefix="i")

    # --- picking -------------------------------------------------------------------------------
    def candidates(self, dtypes=None, min_rank=0, max_rank=8, test=None) -> list[Value]:
        return [
            v
            for v in self.pool
            if (dtypes is None or v.dtype in dtypes)
            and min_rank <= v.rank <= max_rank
            and (test is None or test(v))
        ]

    def pick(self, dtypes=None, min_rank=0, max_rank=8, test=None) -> Value:
        found = self.candidates(dtypes, min_rank, max_rank, test)
        if not found:
            raise Unusable
        # favour recent values: deeper graphs
        weights = list(range(1, len(found) + 1))
        index = self.draw(st.integers(0, sum(weights) - 1))
        for value, weight in zip(found, weights):
            if index < weight:
                return value
            index -= weight
        return found[-1]

    def choice(self, options):
        return self.draw(st.sampled_from(list(options)))

    def flag(self, chance: int = 2) -> bool:
        """True with probability 1/chance."""
        return self.draw(st.integers(0, chance - 1)) == 0

    def often(self, chance: int = 3) -> bool:
        """True with probability 1 - 1/chance."""
        return not self.flag(chance)

    def axis(self, rank: int, extra: int = 0) -> int:
        """An axis of ``rank + extra`` dims; negative where the opset allows it."""
        total = rank + extra
        low = -total if self.opset >= 11 else 0
        return self.draw(st.integers(low, total - 1))

    # --- nodes ---------------------------------------------------------------------------------
    def node(self, op: str, inputs, outputs: int = 1, **attrs) -> list[Value]:
        names = [self.fresh("v") for _ in range(outputs)]
        self.nodes.append(
            helper.make_node(op, list(inputs), names, name=f"/n{len(self.nodes)}/{op}", **attrs)
        )
        self.ops.append(op)
        made = self._infer(names)
        live = {v.name for v in self.pool if v.live}
        for value in made:
            value.live = any(name in live for name in inputs)
        self.pool.extend(made)
        self.made.extend(made)
        return made

    def _infer(self, names: list[str]) -> list[Value]:
        model = self.model([], infer=True)
        try:
            inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
        except Exception as exc:
            raise Unusable from exc
        infos = {vi.name: vi for vi in [*inferred.graph.value_info, *inferred.graph.output]}
        values = []
        for name in names:
            if name not in infos:
                raise Unusable
            tensor = infos[name].type.tensor_type
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
            if not tensor.HasField("shape") or None in dims or 0 in dims or not tensor.elem_type:
                raise Unusable  # unknown or empty (the converter rejects zero-size dims)
            if int(np.prod(dims, dtype=np.int64)) > 4096:
                raise Unusable
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
            values.append(Value(name, dtype, tuple(dims)))
        return values

    def model(self, outputs: list[Value], infer: bool = False, dynamic=()) -> onnx.ModelProto:
        def info(value: Value, dims=None):
            return helper.make_tensor_value_info(
                value.name,
                helper.np_dtype_to_tensor_dtype(value.dtype),
                list(value.shape) if dims is None else dims,
            )

        graph_inputs = [
            info(v, ["N", *v.shape[1:]] if v.name in dynamic else None) for v in self.inputs
        ]
        # with a dynamic input, outputs declare only their rank
        graph_outputs = [info(v, [None] * v.rank if dynamic else None) for v in outputs]
        if infer and not graph_outputs:  # shape inference wants a graph output
            last = self.nodes[-1].output[0]
            graph_outputs = [helper.make_tensor_value_info(last, 0, None)]
        initializers = [
            numpy_helper.from_array(array, name)
            for name, array in self.consts.items()
            if name not in self.const_nodes
        ]
        graph = helper.make_graph(self.nodes, "fuzz", graph_inputs, graph_outputs, initializers)
        opsets = [helper.make_opsetid("", self.opset)]
        model = helper.make_model(graph, opset_imports=opsets, producer_name="graph-strategies")
        model.ir_version = max(8 if self.opset <= 18 else 0, helper.find_min_ir_version_for(opsets))
        return model


# --- operator builders -----------------------------------------------------------------------
# Each builder reads values from the pool, adds one operator (sometimes with a helper node that
# makes its operand valid, e.g. Abs + 0.5 before Log) and raises Unusable when nothing fits.

UNARY_ANY_FLOAT = ["Relu", "Sigmoid", "Tanh", "Neg", "Abs", "Exp", "Floor", "Ceil", "Softplus"]
UNARY_ANY_FLOAT += ["Softsign", "Identity", "Sin", "Cos", "Atan", "Reciprocal_safe"]
UNARY_ANY_FLOAT += ["Sqrt_safe", "Log_safe"]
UNARY_SINCE = {"Erf": 9, "Sign": 9, "Round": 11, "HardSwish": 14, "Mish": 18, "Asinh": 9}
HALF_OK = {"Relu", "Neg", "Abs", "Add", "Sub", "Mul", "Cast", "Identity"}


def _float_dtypes(op: str):
    return FLOATS + (F16,) if op in HALF_OK else FLOATS


def build_unary(b: Builder) -> None:
    ops = UNARY_ANY_FLOAT + [op for op, since in UNARY_SINCE.items() if b.opset >= since]
    op = b.choice(ops)
    x = b.pick(_float_dtypes(op))
    if op.endswith("_safe"):
        op = op[: -len("_safe")]
        shift = b.const(np.array(0.5, x.dtype))
        (absolute,) = b.node("Abs", [x.name])
        (x,) = b.node("Add", [absolute.name, shift])
    b.node(op, [x.name])


def build_activation(b: Builder) -> None:
    x = b.pick(FLOATS)
    choices = ["LeakyRelu", "Elu", "Selu", "HardSigmoid", "Clip"]
    choices += ["ThresholdedRelu"] * (b.opset >= 10) + ["Celu"] * (b.opset >= 12)
    choices += ["Shrink"] * (b.opset >= 9) + ["Gelu"] * (b.opset >= 20)
    op = b.choice(choices)
    alpha = b.choice([0.01, 0.2, 1.0, 1.5])
    if op in ("LeakyRelu", "Elu", "Celu", "ThresholdedRelu"):
        b.node(op, [x.name], **({"alpha": alpha} if b.flag() else {}))
    elif op == "Selu":
        b.node(op, [x.name], **({"alpha": alpha, "gamma": 1.2} if b.flag() else {}))
    elif op == "HardSigmoid":
        b.node(op, [x.name], alpha=b.choice([0.2, 1 / 6]), beta=b.choice([0.5, 0.3]))
    elif op == "Shrink":
        lambd = b.choice([0.5, 1.0])
        b.node(op, [x.name], lambd=lambd, bias=b.choice([0.0, lambd, 0.2]))
    elif op == "Gelu":
        b.node(op, [x.name], approximate=b.choice(["none", "tanh"]))
    else:  # Clip
        low, high = sorted(b.rng.uniform(-1.5, 1.5, 2).tolist())
        if b.opset < 11:
            b.node(op, [x.name], min=low, max=high)
        else:
            low_name = b.const(np.array(low, x.dtype))
            high_name = b.const(np.array(high, x.dtype))
            args = b.choice([[low_name, high_name], [low_name], ["", high_name], []])
            b.node(op, [x.name, *args])


def _partner_shape(b: Builder, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with ``shape``: fewer leading dims, some 1s, some grown 1s."""
    drop = b.draw(st.integers(0, len(shape)))
    dims = []
    for d in shape[drop:]:
        kind = b.draw(st.integers(0, 3))
        if kind == 0:
            dims.append(1)
        elif kind == 1 and d == 1:
            dims.append(b.draw(st.integers(2, 3)))
        else:
            dims.append(d)
    if len(shape) < 4 and b.flag(6):
        dims = [b.draw(st.integers(1, 3))] + dims
    return tuple(dims)


def _broadcasts(a: tuple[int, ...], c: tuple[int, ...]) -> bool:
    try:
        np.broadcast_shapes(a, c)
    except ValueError:
        return False
    return True


def _operand(b: Builder, x: Value) -> Value:
    """A second operand broadcasting with ``x``: a pool value, a weight or a new input."""
    kind = b.draw(st.integers(0, 3))
    if kind == 0:
        found = b.candidates([x.dtype], test=lambda v: _broadcasts(v.shape, x.shape))
        if found:
            return b.choice(found)
    shape = _partner_shape(b, x.shape)
    if kind == 1 and len(b.inputs) < 4:
        return b.add_input(x.dtype, shape)
    return b.operand_weight(x.dtype, shape)


def build_binary(b: Builder) -> None:
    op = b.choice(["Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "Mod", "Sum", "Mean"])
    if op in ("Add", "Sub", "Mul", "Div"):
        x = b.pick(_float_dtypes(op) + INTS)
    elif op in ("Max", "Min") and b.opset >= 12:
        x = b.pick(FLOATS + INTS)
    elif op == "Mod":
        if b.opset < 10:
            raise Unusable
        x = b.pick(FLOATS + INTS)
    else:
        x = b.pick(FLOATS)
    if op == "Div" or op == "Mod":
        if b.flag(2):
            divisor = b.away_from_zero(x.dtype, _partner_shape(b, x.shape))
            y = Value(b.const(divisor, prefix="w"), x.dtype, divisor.shape, live=False)
        else:
            other = _operand(b, x)
            one = b.const(np.array(1, x.dtype))
            (absolute,) = b.node("Abs", [other.name])
            (y,) = b.node("Add", [absolute.name, one])
            if b.flag():
                (y,) = b.node("Neg", [y.name])
        attrs = {}
        if op == "Mod":
            attrs["fmod"] = 1 if x.dtype.kind == "f" else b.choice([0, 1])
        b.node(op, [x.name, y.name], **attrs)
        return
    if op == "Pow":
        if b.flag():
            exponent = b.const(np.array(b.choice([2.0, 3.0, 0.5, -1.0]), x.dtype))
        else:
            exponent = _operand(b, x).name
        shift = b.const(np.array(0.5, x.dtype))
        (absolute,) = b.node("Abs", [x.name])
        (base,) = b.node("Add", [absolute.name, shift])
        b.node("Pow", [base.name, exponent])
        return
    y = _operand(b, x)
    names = [x.name, y.name] if b.flag() else [y.name, x.name]
    if op in ("Sum", "Mean", "Max", "Min") and b.flag(3):
        names.append(_operand(b, x).name)
    b.node(op, names)


def build_prelu(b: Builder) -> None:
    x = b.pick(FLOATS, min_rank=1)
    if x.rank >= 2 and b.flag():
        slope = (x.shape[1],) + (1,) * (x.rank - 2)  # per channel, as exporters write it
    else:
        slope = tuple(1 if b.flag(3) else d for d in x.shape[b.draw(st.integers(0, x.rank)) :])
    b.node("PRelu", [x.name, b.const(b.rng.uniform(0, 0.5, slope).astype(x.dtype))])


def build_compare(b: Builder) -> None:
    ops = ["Less", "Greater", "Equal"] + ["LessOrEqual", "GreaterOrEqual"] * (b.opset >= 12)
    op = b.choice(ops)
    if op == "Equal":
        dtypes = INTS + (BOOL,) + (FLOATS if b.opset >= 11 else ())
    else:
        dtypes = FLOATS + (INTS if b.opset >= 9 else ())
    x = b.pick(dtypes)
    y = _operand(b, x)
    b.node(op, [x.name, y.name])


def _bool_value(b: Builder) -> Value:
    found = b.candidates([BOOL])
    if found and b.often(4):
        return b.pick([BOOL])
    x = b.pick(FLOATS + INTS)
    (made,) = b.node("Greater", [x.name, b.const(np.array(0, x.dtype))])
    return made


def build_logic(b: Builder) -> None:
    op = b.choice(["And", "Or", "Xor", "Not"])
    x = _bool_value(b)
    if op == "Not":
        b.node(op, [x.name])
    else:
        b.node(op, [x.name, _operand(b, x).name])


def build_where(b: Builder) -> None:
    if b.opset < 9:
        raise Unusable
    condition = _bool_value(b)
    x = b.pick(FLOATS + INTS, test=lambda v: _broadcasts(v.shape, condition.shape))
    y = _operand(b, x)
    b.node("Where", [condition.name, x.name, y.name])


CASTS = {
    "f": [F32, F64, F16, I32, I64, BOOL],
    "i": [F32, F64, I32, I64, BOOL],
    "b": [F32, I32, I64],
}


def build_cast(b: Builder) -> None:
    x = b.pick(FLOATS + (F16,) + INTS + (BOOL,))
    target = b.choice(CASTS[x.dtype.kind])
    if x.dtype == F16:
        target = b.choice([F32, F64])
    if b.opset >= 15 and b.flag(4):
        like = b.const(np.zeros((1,), target))
        b.node("CastLike", [x.name, like])
    else:
        b.node("Cast", [x.name], to=helper.np_dtype_to_tensor_dtype(target))


def build_matmul(b: Builder) -> None:
    x = b.pick(FLOATS, min_rank=1)
    k = x.shape[-1]
    if x.rank >= 2 and b.flag(3):
        batch = x.shape[:-2][b.draw(st.integers(0, x.rank - 2)) :]
        shape = (*batch, k, b.draw(st.integers(1, 4)))
    elif b.flag(6):
        shape = (k,)
    else:
        shape = (k, b.draw(st.integers(1, 4)))
    found = b.candidates([x.dtype], min_rank=1, test=lambda v: v.shape == shape)
    y = b.choice(found) if found and b.flag() else b.operand_weight(x.dtype, shape)
    b.node("MatMul", [x.name, y.name])


def build_gemm(b: Builder) -> None:
    x = b.pick([F32], min_rank=2, max_rank=2)
    trans_a, trans_b = b.flag(), b.flag()
    m, k = x.shape[::-1] if trans_a else x.shape
    n = b.draw(st.integers(1, 4))
    weight = b.operand_weight(x.dtype, (n, k) if trans_b else (k, n))
    inputs = [x.name, weight.name]
    if b.often() or b.opset < 11:
        bias_shape = b.choice([(n,), (1, n), (m, n), (m, 1), ()])
        inputs.append(b.const(b.random_array(x.dtype, bias_shape)))
    attrs = {}
    if b.flag():
        attrs = {"alpha": b.choice([0.5, 2.0]), "beta": b.choice([0.0, 1.0, 1.5])}
    b.node("Gemm", inputs, transA=int(trans_a), transB=int(trans_b), **attrs)


def _spatial(b: Builder, min_rank=3, max_rank=4) -> Value:
    return b.pick([F32], min_rank=min_rank, max_rank=max_rank)


def _window(b: Builder, x: Value, pool: bool) -> dict:
    """kernel/strides/pads/dilations that give at least one output position per axis."""
    spatial = x.shape[2:]
    kernel, pads_begin, pads_end, strides, dilations = [], [], [], [], []
    for d in spatial:
        k = b.draw(st.integers(1, min(3, d + 2)))
        dil = b.draw(st.integers(1, 2)) if (not pool or b.opset >= 10) and b.flag(3) else 1
        limit = k - 1 if pool else 2  # pads must stay below the kernel for pooling
        begin, end = b.draw(st.integers(0, limit)), b.draw(st.integers(0, limit))
        if d + begin + end < dil * (k - 1) + 1:
            k, dil = 1, 1
            begin = end = 0
        kernel.append(k)
        dilations.append(dil)
        pads_begin.append(begin)
        pads_end.append(end)
        strides.append(b.draw(st.integers(1, 2)))
    attrs = {"kernel_shape": kernel}
    if b.flag(4):
        attrs["auto_pad"] = b.choice(["SAME_UPPER", "SAME_LOWER", "VALID"])
    elif any(pads_begin + pads_end) or b.flag(3):
        attrs["pads"] = pads_begin + pads_end
    if any(s > 1 for s in strides) or b.flag(3):
        attrs["strides"] = strides
    if any(d > 1 for d in dilations):
        attrs["dilations"] = dilations
    return attrs


def build_conv(b: Builder) -> None:
    x = _spatial(b)
    channels = x.shape[1]
    group = b.choice([g for g in range(1, channels + 1) if channels % g == 0])
    out = group * b.draw(st.integers(1, 2))
    attrs = _window(b, x, pool=False)
    weight = b.const(b.rng.standard_normal((out, channels // group, *attrs["kernel_shape"])), F32)
    inputs = [x.name, weight]
    if b.often():
        inputs.append(b.const(b.rng.standard_normal(out).astype(F32)))
    if group > 1:
        attrs["group"] = group
    if b.flag(3):
        del attrs["kernel_shape"]  # inferred from the weight
    b.node("Conv", inputs, **attrs)


def build_conv_transpose(b: Builder) -> None:
    x = _spatial(b)
    channels = x.shape[1]
    group = b.choice([g for g in range(1, channels + 1) if channels % g == 0])
    per_group = b.draw(st.integers(1, 2))
    rank = x.rank - 2
    kernel = [b.draw(st.integers(1, 3)) for _ in range(rank)]
    strides = [b.draw(st.integers(1, 2)) for _ in range(rank)]
    attrs = {"kernel_shape": kernel, "strides": strides}
    if b.flag():
        pads = [b.draw(st.integers(0, k - 1)) for k in kernel * 2]
        attrs["pads"] = pads
    if b.flag(4):  # not past the full result (a documented limitation of the mapper)
        ends = attrs.get("pads", [0] * 2 * rank)[rank:]
        gaps = [max(s - k, 0) for s, k in zip(strides, kernel)]
        attrs["output_padding"] = [
            b.draw(st.integers(0, min(s - 1, e + g))) for s, e, g in zip(strides, ends, gaps)
        ]
    if group > 1:
        attrs["group"] = group
    weight = b.const(b.rng.standard_normal((channels, per_group, *kernel)), F32)
    inputs = [x.name, weight]
    if b.flag():
        inputs.append(b.const(b.rng.standard_normal(per_group * group).astype(F32)))
    b.node("ConvTranspose", inputs, **attrs)


def build_pool(b: Builder) -> None:
    op = b.choice(["MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool"])
    x = _spatial(b)
    if op.startswith("Global"):
        b.node(op, [x.name])
        return
    attrs = _window(b, x, pool=True)
    if op != "MaxPool":
        attrs.pop("dilations", None)  # dilated average pooling: a documented limitation
    if op == "AveragePool" and b.flag():
        attrs["count_include_pad"] = 1
    if op == "LpPool":
        attrs["p"] = b.choice([1, 2])
        if b.opset < 11:
            attrs.pop("strides", None)
    if op != "LpPool" and b.opset >= 10 and "auto_pad" not in attrs and b.flag(3):
        attrs["ceil_mode"] = 1
    b.node(op, [x.name], **attrs)


def build_norm(b: Builder) -> None:
    op = b.choice(["BatchNormalization", "InstanceNormalization", "LpNormalization", "LRN"])
    if b.opset >= 17:
        op = b.choice([op, "LayerNormalization"])
    x = _spatial(b, min_rank=2 if op in ("BatchNormalization", "LayerNormalization") else 3)
    c = x.shape[1]
    if op == "BatchNormalization":
        scale, bias, mean = (b.rng.standard_normal(c).astype(F32) for _ in range(3))
        var = b.rng.uniform(0.5, 2.0, c).astype(F32)
        args = [b.const(a) for a in (scale, bias, mean, var)]
        b.node(op, [x.name, *args], epsilon=b.choice([1e-5, 1e-3]))
    elif op == "InstanceNormalization":
        args = [b.const(b.rng.standard_normal(c).astype(F32)) for _ in range(2)]
        b.node(op, [x.name, *args], epsilon=b.choice([1e-5, 1e-3]))
    elif op == "LpNormalization":
        b.node(
            op,
            [x.name],
            axis=b.axis(x.rank) if b.opset >= 11 else b.draw(st.integers(0, x.rank - 1)),
            p=b.choice([1, 2]),
        )
    elif op == "LRN":
        b.node(op, [x.name], size=b.choice([1, 3, 5]), alpha=1e-3, beta=0.75, bias=1.0)
    else:
        axis = b.axis(x.rank)
        normalized = x.shape[axis:]
        args = [b.const(b.rng.standard_normal(normalized).astype(F32))]
        if b.flag():
            args.append(b.const(b.rng.standard_normal(normalized).astype(F32)))
        b.node(op, [x.name, *args], axis=axis, epsilon=1e-5)


def build_depth_space(b: Builder) -> None:
    x = b.pick(None, min_rank=4, max_rank=4)
    _, c, h, w = x.shape
    if c % 4 == 0 and b.flag():
        attrs = {"blocksize": 2}
        if b.opset >= 11:
            attrs["mode"] = b.choice(["DCR", "CRD"])
        b.node("DepthToSpace", [x.name], **attrs)
    elif h % 2 == 0 and w % 2 == 0:
        b.node("SpaceToDepth", [x.name], blocksize=2)
    else:
        raise Unusable


def _factor(b: Builder, n: int, rank: int) -> list[int]:
    dims = [1] * rank
    if rank == 0:
        return dims
    factors, p, m = [], 2, n
    while m > 1:
        while m % p == 0:
            factors.append(p)
            m //= p
        p += 1
    for f in factors:
        dims[b.draw(st.integers(0, rank - 1))] *= f
    return dims


def build_reshape(b: Builder) -> None:
    x = b.pick()
    rank = b.draw(st.integers(0 if x.size == 1 else 1, 5))
    target = _factor(b, x.size, rank)
    if rank and b.flag():
        target[b.draw(st.integers(0, rank - 1))] = -1
    for i in range(min(rank, x.rank)):
        if target[i] == x.shape[i] and b.flag(3):
            target[i] = 0
    b.node("Reshape", [x.name, b.ints(target)])


def build_flatten_batch(b: Builder) -> None:
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as exporters flatten after a conv."""
    x = b.pick(None, min_rank=2)
    (shape,) = b.node("Shape", [x.name])
    (batch,) = b.node("Gather", [shape.name, b.const(np.array(0, np.int64))], axis=0)
    if b.opset >= 13:
        (batch1,) = b.node("Unsqueeze", [batch.name, b.ints([0])])
    else:
        (batch1,) = b.node("Unsqueeze", [batch.name], axes=[0])
    (target,) = b.node("Concat", [batch1.name, b.ints([-1])], axis=0)
    b.node("Reshape", [x.name, target.name])


def build_transpose(b: Builder) -> None:
    x = b.pick(min_rank=1)
    if b.flag(4):
        b.node("Transpose", [x.name])
    else:
        b.node("Transpose", [x.name], perm=b.draw(st.permutations(list(range(x.rank)))))


def build_concat(b: Builder) -> None:
    x = b.pick(min_rank=1)
    axis = b.axis(x.rank)
    parts = [x]
    for _ in range(b.draw(st.integers(1, 2))):
        kind = b.draw(st.integers(0, 3))
        shape = list(x.shape)
        shape[axis] = b.draw(st.integers(1, 3))
        found = b.candidates(
            [x.dtype],
            test=lambda v: (
                v.rank == x.rank
                and all(
                    a == c for i, (a, c) in enumerate(zip(v.shape, x.shape)) if i != axis % x.rank
                )
            ),
        )
        if kind == 0 and found:
            parts.append(b.choice(found))
        elif kind == 1:
            parts.append(x)
        elif kind == 2 and len(b.inputs) < 4:
            parts.append(b.add_input(x.dtype, shape))
        else:
            parts.append(b.operand_weight(x.dtype, shape))
    order = b.draw(st.permutations(parts))
    b.node("Concat", [v.name for v in order], axis=axis)


def _slice_length(d: int, start: int, end: int, step: int) -> int:
    start = start + d if start < 0 else start
    end = end + d if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), d), min(max(end, 0), d)
        return max(0, math.ceil((end - start) / step))
    start, end = min(max(start, 0), d - 1), min(max(end, -1), d - 1)
    return max(0, math.ceil((start - end) / -step))


def build_slice(b: Builder) -> None:
    x = b.pick(min_rank=1)
    axes = sorted(b.draw(st.sets(st.integers(0, x.rank - 1), min_size=1, max_size=x.rank)))
    starts, ends, steps = [], [], []
    for axis in axes:
        d = x.shape[axis]
        for _ in range(8):
            step = b.choice([1, 1, 1, 2, -1, -2]) if b.opset >= 10 else 1
            bounds = list(range(-d - 2, d + 3)) + [INT_MAX, -INT_MAX]
            start, end = b.choice(bounds), b.choice(bounds)
            if b.dynamic and not (-d <= start < d and -d <= end <= d):
                if not (end == INT_MAX and step > 0 or end == -INT_MAX and step < 0):
                    continue  # KNOWN_FINDINGS["dynamic-slice-start"], ["symbolic-slice-bounds"]
            if _slice_length(d, start, end, step):
                break
        else:
            start, end, step = 0, d, 1
        starts.append(start)
        ends.append(end)
        steps.append(step)
    shown_axes = [a - x.rank if b.opset >= 11 and b.flag() else a for a in axes]
    if b.opset < 10:
        attrs = {"starts": starts, "ends": ends}
        if b.often():
            attrs["axes"] = shown_axes
        elif axes != list(range(len(axes))):
            attrs["axes"] = shown_axes
        b.node("Slice", [x.name], **attrs)
        return
    inputs = [x.name, b.ints(starts), b.ints(ends)]
    if any(s != 1 for s in steps) or b.flag():
        inputs += [b.ints(shown_axes), b.ints(steps)]
    elif axes != list(range(len(axes))) or b.flag():
        inputs.append(b.ints(shown_axes))
    b.node("Slice", inputs)


def build_squeeze(b: Builder) -> None:
    x = b.pick(min_rank=1, test=lambda v: 1 in v.shape)
    ones = [i for i, d in enumerate(x.shape) if d == 1]
    axes = sorted(b.draw(st.sets(st.sampled_from(ones), min_size=1)))
    axes = [a - x.rank if b.opset >= 11 and b.flag() else a for a in axes]
    if b.flag(4):
        b.node("Squeeze", [x.name])
    elif b.opset >= 13:
        b.node("Squeeze", [x.name, b.ints(axes)])
    else:
        b.node("Squeeze", [x.name], axes=axes)


def build_unsqueeze(b: Builder) -> None:
    x = b.pick(max_rank=3)
    extra = b.draw(st.integers(1, 2))
    rank = x.rank + extra
    axes = b.draw(st.sets(st.integers(0, rank - 1), min_size=extra, max_size=extra))
    axes = [a - rank if b.opset >= 11 and b.flag() else a for a in sorted(axes)]
    if b.opset >= 13:
        b.node("Unsqueeze", [x.name, b.ints(axes)])
    else:
        b.node("Unsqueeze", [x.name], axes=axes)


def build_flatten(b: Builder) -> None:
    x = b.pick(min_rank=1)
    axis = b.draw(st.integers(-x.rank if b.opset >= 11 else 0, x.rank))
    b.node("Flatten", [x.name], **({"axis": axis} if b.often(4) else {}))


def build_expand(b: Builder) -> None:
    if b.opset < 8:
        raise Unusable
    x = b.pick()
    target = []
    for d in x.shape:
        if d == 1 and b.flag():
            target.append(b.draw(st.integers(2, 3)))
        elif b.flag(4):
            target.append(1)  # keeps x's size: Expand broadcasts both ways
        else:
            target.append(d)
    if x.rank < 4 and b.flag(3):
        target = [b.draw(st.integers(1, 3))] + target
    b.node("Expand", [x.name, b.ints(target)])


def build_tile(b: Builder) -> None:
    x = b.pick(min_rank=1)
    repeats = [b.draw(st.integers(1, 3)) if x.size < 64 else 1 for _ in x.shape]
    b.node("Tile", [x.name, b.ints(repeats)])


def build_split(b: Builder) -> None:
    x = b.pick(min_rank=1, test=lambda v: max(v.shape) >= 2)
    axis = b.choice([i for i, d in enumerate(x.shape) if d >= 2])
    d = x.shape[axis]
    shown = axis - x.rank if b.opset >= 11 and b.flag() else axis
    equal = [n for n in (2, 3) if d % n == 0]
    if equal and b.flag():
        parts = b.choice(equal)
        if b.opset >= 18:
            b.node("Split", [x.name], outputs=parts, axis=shown, num_outputs=parts)
        else:
            b.node("Split", [x.name], outputs=parts, axis=shown)
        return
    cut = b.draw(st.integers(1, d - 1))
    sizes = [cut, d - cut]
    if b.opset >= 13:
        b.node("Split", [x.name, b.ints(sizes)], outputs=2, axis=shown)
    else:
        b.node("Split", [x.name], outputs=2, axis=shown, split=sizes)


def build_gather(b: Builder) -> None:
    x = b.pick(min_rank=1)
    axis = b.axis(x.rank)
    d = x.shape[axis]
    low = -d if b.opset >= 11 else 0
    shape = b.choice([(), (1,), (2,), (3,), (2, 2)])
    indices = b.rng.integers(low, d, shape)
    if b.opset >= 11 and b.flag(4) and x.dtype != BOOL:
        index_shape = list(x.shape)
        index_shape[axis] = b.draw(st.integers(1, 3))
        indices = b.rng.integers(low, d, index_shape)
        b.node("GatherElements", [x.name, b.ints(indices)], axis=axis)
        return
    b.node("Gather", [x.name, b.const(indices, b.choice([I32, I64]))], axis=axis)


def build_pad(b: Builder) -> None:
    x = b.pick(FLOATS + INTS, min_rank=1)
    mode = b.choice(["constant", "reflect", "edge"])
    pads = []
    for d in x.shape * 2:
        high = d - 1 if mode == "reflect" else 2
        pads.append(
            b.draw(
                st.integers(
                    -1 if d > 2 and mode == "constant" and b.opset >= 11 else 0, max(high, 0)
                )
            )
        )
    if mode == "edge" or mode == "reflect":
        pads = [max(p, 0) for p in pads]
    if b.opset < 11:
        b.node("Pad", [x.name], pads=pads, mode=mode, value=1.5)
        return
    inputs = [x.name, b.ints(pads)]
    if mode == "constant" and b.flag():
        inputs.append(b.const(np.array(2, x.dtype)))
    b.node("Pad", inputs, mode=mode)


def build_shape_arith(b: Builder) -> None:
    """Shape or Size of a value, then integer arithmetic on it (the shape vector is known)."""
    x = b.pick(min_rank=1)
    if b.flag(3):
        (made,) = b.node("Size", [x.name])
    else:
        attrs = {}
        if b.opset >= 15 and b.flag():
            attrs = {"start": b.draw(st.integers(-x.rank, x.rank - 1))}
        (made,) = b.node("Shape", [x.name], **attrs)
    op = b.choice(["Add", "Mul", "Cast"])
    if op == "Cast":
        b.node("Cast", [made.name], to=onnx.TensorProto.FLOAT)
    else:
        b.node(op, [made.name, b.ints(b.draw(st.integers(1, 3)))])


def build_trilu(b: Builder) -> None:
    if b.opset < 14:
        raise Unusable
    x = b.pick(FLOATS + INTS, min_rank=2)
    inputs = [x.name]
    if b.flag():
        inputs.append(b.const(np.array(b.draw(st.integers(-2, 2)), np.int64)))
    b.node("Trilu", inputs, upper=int(b.flag()))


def build_softmax(b: Builder) -> None:
    op = b.choice(["Softmax", "LogSoftmax", "Hardmax"])
    x = b.pick(FLOATS, min_rank=1)
    if b.flag(4):
        if b.opset < 13 and x.rank < 2:
            raise Unusable  # the old default axis 1 needs two dims
        b.node(op, [x.name])
    else:
        b.node(op, [x.name], axis=b.axis(x.rank))


REDUCTIONS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1"]
REDUCTIONS += ["ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"]


def build_reduce(b: Builder) -> None:
    op = b.choice(REDUCTIONS)
    x = b.pick(FLOATS + ((I32, I64) if op in ("ReduceSum", "ReduceMax", "ReduceMin") else ()))
    keep = b.choice([0, 1])
    axes = None
    if x.rank and b.often(4):
        axes = sorted(b.draw(st.sets(st.integers(0, x.rank - 1), min_size=1)))
        axes = [a - x.rank if b.opset >= 11 and b.flag() else a for a in axes]
    attrs = {"keepdims": keep} if b.often(4) else {}
    as_input = b.opset >= (13 if op == "ReduceSum" else 18)
    if axes is None:
        b.node(op, [x.name], **attrs)
    elif as_input:
        b.node(op, [x.name, b.ints(axes)], **attrs)
    else:
        b.node(op, [x.name], axes=axes, **attrs)


def build_arg(b: Builder) -> None:
    op = b.choice(["ArgMax", "ArgMin"])
    x = b.pick(FLOATS + INTS, min_rank=1)
    attrs = {"axis": b.axis(x.rank), "keepdims": b.choice([0, 1])}
    if b.opset >= 12 and b.flag():
        attrs["select_last_index"] = 1
    b.node(op, [x.name], **attrs)


def build_topk(b: Builder) -> None:
    # random values from an input or weight (ties: test_topk_of_tied_values_keeps_index_order)
    x = b.pick(FLOATS, min_rank=1, test=lambda v: v in b.inputs or not v.live)
    axis = b.axis(x.rank)
    k = b.draw(st.integers(1, x.shape[axis]))
    if b.opset < 10:
        b.node("TopK", [x.name], outputs=2, k=k, axis=axis)
        return
    attrs = {"axis": axis}
    if b.opset >= 11 and b.flag():
        attrs["largest"] = b.choice([0, 1])
    b.node("TopK", [x.name, b.ints([k])], outputs=2, **attrs)


def build_cumsum(b: Builder) -> None:
    if b.opset < 11:
        raise Unusable
    x = b.pick(FLOATS + INTS, min_rank=1)
    axis = b.const(np.array(b.axis(x.rank)), b.choice([I32, I64]))
    b.node("CumSum", [x.name, axis], exclusive=int(b.flag()), reverse=int(b.flag()))


Build = Callable[[Builder], None]
FAMILIES: dict[str, list[Build]] = {
    "elementwise": [
        build_unary,
        build_activation,
        build_binary,
        build_prelu,
        build_compare,
        build_logic,
        build_where,
        build_cast,
    ],
    "linear": [
        build_matmul,
        build_gemm,
        build_conv,
        build_conv_transpose,
        build_pool,
        build_norm,
        build_depth_space,
    ],
    "shape": [
        build_reshape,
        build_flatten_batch,
        build_transpose,
        build_concat,
        build_slice,
        build_squeeze,
        build_unsqueeze,
        build_flatten,
        build_expand,
        build_tile,
        build_split,
        build_gather,
        build_pad,
        build_shape_arith,
        build_trilu,
    ],
    "reduce": [build_softmax, build_reduce, build_arg, build_topk, build_cumsum],
}
FAMILIES["mixed"] = [build for builds in FAMILIES.values() for build in builds]

# Input ranks each family favours (convolutions need N, C and spatial dims).
INPUT_RANKS = {"linear": [2, 3, 4, 4], "reduce": [1, 2, 3, 4], "shape": [1, 2, 3, 4]}


def _input_shape(draw, family: str) -> tuple[int, ...]:
    rank = draw(st.sampled_from(INPUT_RANKS.get(family, [0, 1, 2, 3, 4])))
    return tuple(draw(st.integers(1, 4 if rank < 4 else 3)) for _ in range(rank))


@st.composite
def graph_cases(draw, family: str = "mixed", dynamic: bool | None = None) -> GraphCase:
    """A valid small model of ``family`` operators and random inputs to run it on."""
    opset = draw(st.sampled_from(OPSETS))
    if dynamic is None:
        dynamic = draw(st.integers(0, 3)) == 0
    b = Builder(draw, opset, dynamic)
    first = _input_shape(draw, family)
    dtype = draw(st.sampled_from([F32] * 6 + [F64, I64, I32]))
    if family == "linear":
        dtype = F32
    b.add_input(dtype, first)
    for _ in range(draw(st.integers(0, 1))):
        shape = first if draw(st.booleans()) else _input_shape(draw, family)
        b.add_input(draw(st.sampled_from([F32, F32, dtype])), shape)
    if draw(st.integers(0, 4)) == 0:  # a weight as an operand: the converter folds around it
        b.pool.append(b.operand_weight(F32, _input_shape(draw, family)))
    builds = FAMILIES[family]
    wanted = draw(st.integers(1, 5))
    attempts = 0
    while len([op for op in b.ops]) < wanted and attempts < 3 * wanted:
        attempts += 1
        build = draw(st.sampled_from(builds))
        saved = (
            len(b.nodes),
            len(b.pool),
            len(b.made),
            len(b.ops),
            len(b.inputs),
            dict(b.consts),
            set(b.const_nodes),
        )
        try:
            build(b)
        except Unusable:
            del b.nodes[saved[0] :], b.pool[saved[1] :], b.made[saved[2] :], b.ops[saved[3] :]
            del b.inputs[saved[4] :]
            b.consts, b.const_nodes = saved[5], saved[6]
    made = [v for v in b.made if v.name not in _shape_sources(b.nodes)]
    # (KNOWN_FINDINGS["shape-as-output"])
    assume(made)
    outputs = [made[-1]]
    if len(made) > 1 and draw(st.booleans()):
        outputs.append(draw(st.sampled_from(made[:-1])))
    dynamic_inputs = []
    if dynamic and b.inputs[0].shape[:1] != (1,):  # KNOWN_FINDINGS["pinned-dim-at-example-one"]
        batch = b.inputs[0].shape[:1]
        dynamic_inputs = [v.name for v in b.inputs if v.rank >= 1 and v.shape[:1] == batch]
    model = b.model(outputs, dynamic=dynamic_inputs)
    feeds = {v.name: input_values(b.rng, v.dtype, v.shape) for v in b.inputs}
    shapes = {v.name: v.shape for v in b.inputs if v.name in dynamic_inputs}
    return GraphCase(model, feeds, shapes, dynamic_inputs, list(b.ops))


def _shape_sources(nodes: list[onnx.NodeProto]) -> set[str]:
    """Every value a Reshape target is computed from (up to the Shape or Size it reads)."""
    producer = {out: node for node in nodes for out in node.output}
    found: set[str] = set()
    todo = [node.input[1] for node in nodes if node.op_type == "Reshape"]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        if name in producer and producer[name].op_type not in ("Shape", "Size"):
            todo.extend(producer[name].input)
    return found


def input_values(rng: np.random.Generator, dtype: np.dtype, shape) -> np.ndarray:
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(-4, 5, shape).astype(dtype)


def grown_feeds(case: GraphCase, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Inputs where the dynamic leading dimension is one larger than the example's."""
    feeds = dict(case.feeds)
    for name in case.dynamic_inputs:
        array = feeds[name]
        feeds[name] = input_values(rng, array.dtype, (array.shape[0] + 1, *array.shape[1:]))
    return feeds


def run_reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, feeds)


def check_valid(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray] | None:
    """onnxruntime's outputs when ``model`` passes onnx.checker (full) and runs; else None."""
    try:
        onnx.checker.check_model(model, full_check=True)
        return run_reference(model, feeds)
    except Exception:
        return None
