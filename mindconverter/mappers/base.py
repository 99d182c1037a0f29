"""What a mapper receives (:class:`NodeContext`) and what it returns (expression objects).

A mapper describes the MindSpore computation of one ONNX node as a small expression tree.
It never writes code text: names, imports and layout are the renderer's job.

Expressions:
- :class:`Input` ``(i)``: the node's i-th input value.
- :class:`Lit`: a Python literal (int, float, bool, None, tuple/list of those).
- :class:`DType`: a MindSpore dtype such as ``ms.float32``.
- :class:`Call`: ``func(*args, **kwargs)`` where ``func`` is a dotted name of the allowed API
  (``ops.relu``, ``ops.concat``, ``ms.Tensor``...).
- :class:`BinOp` / :class:`Neg`: Python operators (``+ - * / @ ** //``) on expressions.
- :class:`Item`: ``value[index]``.
- :class:`Method`: ``value.name(*args)``, a tensor method (``k.swapaxes(-1, -2)``).
- :class:`Cell`: a layer created in ``__init__`` (``nn.Conv2d(...)`` with its weights) and called
  in ``construct``.
- :class:`Param`: a tensor stored in the checkpoint, held as a ``Parameter`` attribute.
- :class:`Const`: a constant tensor; small ones become literals, large ones non-trainable
  parameters.
- :class:`Temp`: a sub-expression evaluated once into a local variable and shared.
- :class:`Noted`: an expression with a comment line the renderer writes above its statement.
A mapper returns one expression (single output), :class:`Unpack` (an expression producing a
tuple, unpacked over the node's outputs) or :class:`Outputs` (one expression per output).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..graph import Graph, Node
from ..graph.container_types import held_dtype, is_floating
from ..graph.weight_roles import learned_source
from ..graph.weight_steps import parse_steps


class Unsupported(Exception):
    """Raised by a mapper when it cannot express this node; the message says why."""


class Expr:
    """Base of all expression objects. Python's arithmetic and subscripts build more of them,
    as the script will write them: ``x * 0.5`` is ``BinOp("*", x, 0.5)``, ``x[:, -1]`` is
    ``Item(x, (slice(None), -1))``; comparisons stay ``BinOp`` (``==`` compares objects)."""

    __array_ufunc__ = None  # a numpy number on the left defers to the operators below
    __iter__ = None  # a subscript is defined, iteration is not

    def __add__(self, other: Any) -> BinOp:
        return BinOp("+", self, other)

    def __radd__(self, other: Any) -> BinOp:
        return BinOp("+", other, self)

    def __sub__(self, other: Any) -> BinOp:
        return BinOp("-", self, other)

    def __rsub__(self, other: Any) -> BinOp:
        return BinOp("-", other, self)

    def __mul__(self, other: Any) -> BinOp:
        return BinOp("*", self, other)

    def __rmul__(self, other: Any) -> BinOp:
        return BinOp("*", other, self)

    def __truediv__(self, other: Any) -> BinOp:
        return BinOp("/", self, other)

    def __rtruediv__(self, other: Any) -> BinOp:
        return BinOp("/", other, self)

    def __floordiv__(self, other: Any) -> BinOp:
        return BinOp("//", self, other)

    def __rfloordiv__(self, other: Any) -> BinOp:
        return BinOp("//", other, self)

    def __mod__(self, other: Any) -> BinOp:
        return BinOp("%", self, other)

    def __pow__(self, other: Any) -> BinOp:
        return BinOp("**", self, other)

    def __rpow__(self, other: Any) -> BinOp:
        return BinOp("**", other, self)

    def __matmul__(self, other: Any) -> BinOp:
        return BinOp("@", self, other)

    def __and__(self, other: Any) -> BinOp:
        return BinOp("&", self, other)

    def __or__(self, other: Any) -> BinOp:
        return BinOp("|", self, other)

    def __xor__(self, other: Any) -> BinOp:
        return BinOp("^", self, other)

    def __neg__(self) -> Neg:
        return Neg(self)

    def __getitem__(self, index: Any) -> Item:
        return Item(self, index)

    def method(self, name: str, *args: Any) -> Method:
        """``self.<name>(*args)``, a tensor method: ``k.method("swapaxes", -1, -2)``."""
        return Method(self, name, args)


@dataclass(frozen=True)
class Input(Expr):
    index: int


@dataclass(frozen=True)
class Lit(Expr):
    value: Any


@dataclass(frozen=True)
class DType(Expr):
    name: str  # numpy-style name: float32, int64, bool...


@dataclass
class Call(Expr):
    func: str
    args: Sequence[Any] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class BinOp(Expr):
    op: str
    left: Any
    right: Any


@dataclass
class Neg(Expr):
    operand: Any


@dataclass
class Item(Expr):
    value: Any
    index: Any  # int, slice, or tuple of ints/slices/None/Ellipsis


@dataclass
class Method(Expr):
    """``value.name(*args)``: a tensor method, as people write ``k.swapaxes(-1, -2)``."""

    value: Any
    name: str
    args: Sequence[Any] = ()


@dataclass(eq=False)
class Temp(Expr):
    """``expr`` computed once into a local variable of ``construct``; every reference to this same
    object reads that variable (e.g. a cell returning a tuple whose parts need further ops).
    ``comment`` (fixed text of the converter, never from the model) is written on the line
    before, to say why the code differs from the obvious call."""

    expr: Any
    hint: str = ""
    comment: str = ""


@dataclass
class Noted(Expr):
    """``expr`` with a one-line comment (``note``) written above the statement computing it:
    why the script deliberately differs from the obvious call (a MindSpore workaround)."""

    expr: Any
    note: str


@dataclass
class Weight:
    """A tensor destined for the checkpoint, with where it came from."""

    array: np.ndarray
    source: str  # source initializer name ("" when synthesised)
    transform: str = ""  # e.g. "transpose(1, 0)"; empty when stored as in the source
    steps: tuple = ()  # the transform as typed steps (graph/weight_steps.py); () when only prose


@dataclass
class Cell(Expr):
    """``self.<name> = <cls>(**kwargs)`` in ``__init__``; ``self.<name>(*args)`` in ``construct``."""

    cls: str
    kwargs: dict[str, Any]
    args: Sequence[Any]
    weights: dict[str, Weight] = field(default_factory=dict)
    role: str = ""  # naming hint, e.g. "conv", "bn", "fc"
    call_kwargs: dict[str, Any] = field(default_factory=dict)
    # a class the script defines from this text (a converted control-flow body), named ``cls``;
    # every class in the text has a name starting with ``cls``
    definition: str = ""
    uses: frozenset[str] = frozenset()  # names the definition needs imported


@dataclass
class Param(Expr):
    """A ``Parameter`` attribute holding a weight (trainable unless said otherwise)."""

    weight: Weight
    role: str = "weight"
    trainable: bool = True


@dataclass
class Const(Expr):
    """A constant tensor value."""

    array: np.ndarray
    source: str = ""


@dataclass
class Unpack:
    """An expression returning a tuple, unpacked over the node's outputs."""

    expr: Any
    count: int


@dataclass
class Ternary(Expr):
    """``body if test else orelse`` (an If whose branches are cells)."""

    test: Any
    body: Any
    orelse: Any


@dataclass
class Outputs:
    """One expression per node output (None where the output is not produced)."""

    exprs: list[Any | None]


class NodeContext:
    """Read-only view of one node for a mapper: attributes, input/output shapes, constants."""

    def __init__(
        self,
        graph: Graph,
        node: Node,
        domain_opset: int | None = None,
        convert_body=None,
        keep_quantized: bool = False,
    ):
        self.graph = graph
        self.node = node
        self.opset = domain_opset if domain_opset is not None else graph.opset
        # (BodyModel, class name, doc) -> BodyCell: an If/Loop/Scan body as a cell class
        self.convert_body = convert_body
        # --keep_quantized: integer weights stay integers, dequantized as the network runs
        self.keep_quantized = keep_quantized

    # --- node facts -----------------------------------------------------------------
    def attr(self, name: str, default: Any = None) -> Any:
        """The attribute value, or ``default`` (the ONNX default) when absent."""
        return self.node.attrs.get(name, default)

    def has_attr(self, name: str) -> bool:
        return name in self.node.attrs

    @property
    def num_inputs(self) -> int:
        return len(self.node.inputs)

    @property
    def num_outputs(self) -> int:
        return len(self.node.outputs)

    def has_input(self, index: int) -> bool:
        """True when input ``index`` is given (not omitted and not the empty name)."""
        return index < len(self.node.inputs) and bool(self.node.inputs[index])

    def has_output(self, index: int) -> bool:
        return index < len(self.node.outputs) and bool(self.node.outputs[index])

    def output_used(self, index: int) -> bool:
        """True when output ``index`` exists and something reads it (or the graph returns it)."""
        return self.has_output(index) and self.node.outputs[index] in self.graph.used_values

    def input_shape(self, index: int) -> tuple[int, ...] | None:
        """The input's shape (with ``DynamicDim`` for dimensions that stay dynamic), or None."""
        return self.graph.dims(self.node.inputs[index]) if self.has_input(index) else None

    def input_rank(self, index: int) -> int:
        shape = self.input_shape(index)
        if shape is None:
            raise Unsupported(f"the rank of input {index} ('{self.node.inputs[index]}') is unknown")
        return len(shape)

    def input_dtype(self, index: int) -> np.dtype | None:
        return self.graph.dtypes.get(self.node.inputs[index]) if self.has_input(index) else None

    def output_shape(self, index: int = 0) -> tuple[int, ...] | None:
        return self.graph.dims(self.node.outputs[index]) if self.has_output(index) else None

    def output_dtype(self, index: int = 0) -> np.dtype | None:
        return self.graph.dtypes.get(self.node.outputs[index]) if self.has_output(index) else None

    def const(self, index: int) -> np.ndarray | None:
        """The input's value when it is a constant, else None."""
        if not self.has_input(index):
            return None
        return self.graph.constants.get(self.node.inputs[index])

    def is_const(self, index: int) -> bool:
        return self.const(index) is not None

    def require_const(self, index: int, what: str) -> np.ndarray:
        """The constant value of input ``index``; Unsupported when it is computed at run time."""
        value = self.const(index)
        if value is None:
            raise Unsupported(
                f"{what} (input {index}) must be a constant, but is computed at run time"
            )
        return value

    def const_ints(self, index: int, what: str) -> list[int]:
        return [int(v) for v in np.asarray(self.require_const(index, what)).reshape(-1)]

    def require_shape(self, index: int) -> tuple[int, ...]:
        shape = self.input_shape(index)
        if shape is None:
            raise Unsupported(
                f"the shape of input {index} ('{self.node.inputs[index]}') is unknown"
            )
        return shape

    # --- building blocks for mappers ---------------------------------------------------
    def weight(
        self, index: int, array: np.ndarray | None = None, transform: str | Sequence = ""
    ) -> Weight:
        """A checkpoint weight from constant input ``index`` (optionally already transformed,
        by typed ``transform`` steps from graph/weight_steps.py, or described in prose).

        The array may be a view (a transpose of a memory-mapped weight): the checkpoint writer
        lays each tensor out when it writes it, one at a time."""
        name = self.node.inputs[index]
        value = self.require_const(index, "the weight") if array is None else array
        typed = () if isinstance(transform, str) else tuple(transform)
        if not isinstance(transform, str):
            transform = "; ".join(step.describe() for step in typed)
        record = self.graph.fold_records.get(name)
        source = name
        if record is not None and record.sources:
            source = record.sources[0]
            steps = "; ".join(record.steps)
            transform = "; ".join(filter(None, [steps, transform]))
            typed = (*parse_steps(steps), *typed) if typed else ()
        return Weight(np.asarray(value), source, transform, typed)

    def operand(self, index: int) -> Expr:
        """Input ``index`` as an expression: the value itself, or its constant in the right form.

        Scalar constants become literals; the source's trainable weights become trainable
        parameters (learned values, e.g. a bias or position table); other constants (masks,
        buffers, zero states) become :class:`Const`.
        """
        value = self.const(index)
        if value is None:
            return Input(index)
        weight = self.weight(index) if value.size > 1 else None
        learned = learned_source(self.graph, self.node.inputs[index]) is not None
        return constant_operand(value, weight, learned)


def constant_operand(value: np.ndarray, weight: Weight | None = None, learned: bool = True) -> Expr:
    """Express a constant array used as an operand of an arithmetic op."""
    if learned and weight is not None and value.size > 1 and is_floating(value.dtype):
        return Param(weight, role="weight", trainable=True)
    return Const(np.asarray(value), weight.source if weight else "")


def normalize_axis(axis: int, rank: int) -> int:
    """Turn a possibly negative axis into its non-negative form (checks the range)."""
    if not -rank <= axis < max(rank, 1):
        raise Unsupported(f"axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def ms_dtype_name(dtype: np.dtype) -> str:
    """The MindSpore dtype attribute name for a numpy dtype (``float32``, ``bool_``...); types
    MindSpore cannot hold (float8, int4...) name their container (float16, int8...)."""
    name = held_dtype(dtype).name
    return "bool_" if name == "bool" else name


@dataclass
class MappedNode:
    """A node with its mapped description, or the reason it was not converted."""

    node: Node
    result: Any = None
    reason: str | None = None

    @property
    def converted(self) -> bool:
        return self.reason is None


def expression_parts(value: Any, slices: bool = False) -> Iterator[Any]:
    """``value`` and everything inside it, depth first: sub-expressions, literals, and the
    items of lists, tuples and dicts, with ``slices`` also slices' bounds (``x[:, :n]``); a
    shared sub-expression is visited at each use."""
    yield value
    if slices and isinstance(value, slice):
        children: Any = (value.start, value.stop, value.step)
    elif isinstance(value, (list, tuple)):
        children = value
    elif isinstance(value, dict):
        children = value.values()
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        children = [getattr(value, f.name) for f in dataclasses.fields(value)]
    else:
        return
    for child in children:
        yield from expression_parts(child, slices)
