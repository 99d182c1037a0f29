"""Mapper expressions (``Call``, ``Cell``, ``Param``...) as Python source, with the cells,
parameters and checkpoint entries they create."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..mappers.base import (
    BinOp,
    Call,
    Cell,
    Const,
    DType,
    Expr,
    Input,
    Item,
    Lit,
    MappedNode,
    Neg,
    Param,
    Temp,
    Weight,
    ms_dtype_name,
)
from ..passes.recover_hierarchy import module_path
from .literals import literal
from .naming import identifier
from .rendered import CheckpointEntry
from .scope import BlockScope, RenderState

INLINE_CONST_LIMIT = 16

_PRECEDENCE = {
    "**": 6,
    "*": 5,
    "/": 5,
    "//": 5,
    "%": 5,
    "@": 5,
    "+": 4,
    "-": 4,
    "<": 2,
    ">": 2,
    "<=": 2,
    ">=": 2,
    "==": 2,
    "!=": 2,
    "&": 3,
    "|": 3,
    "^": 3,
}

_ROLE_BY_OP = {
    "Conv": "conv",
    "ConvTranspose": "deconv",
    "BatchNormalization": "bn",
    "Gemm": "fc",
    "MatMul": "matmul",
}


def _module_path_hint(mapped: MappedNode) -> str:
    return module_path(mapped.node)


def _weight_hint(weights: dict[str, Weight]) -> str:
    """The module path in the main weight's source name (``layer1.0.conv1.weight`` -> ``layer1.0.conv1``).

    Only the first (main) weight counts: exporters share identical tensors between layers (all-zero
    biases become one initializer), so a bias's name may belong to another layer.
    """
    for weight in list(weights.values())[:1]:
        source = weight.source
        if "." in source and not source.startswith("onnx::"):
            return source.rsplit(".", 1)[0]
    return ""


def with_exporter_note(weight: Weight, mapped: MappedNode) -> Weight:
    """Record rewrites the exporter applied to a layer (dynamo's BatchNorm folding) in the weight map."""
    rules = mapped.node.metadata.get("pkg.onnxscript.rewriter.rule_name", "")
    if "FuseBatchNormIntoConv" not in rules:
        return weight
    note = "BatchNorm folded into the convolution by the exporter"
    return Weight(weight.array, weight.source, "; ".join(filter(None, [weight.transform, note])))


class ExpressionWriter:
    """Writes expressions of the current block; creates its cells and parameters."""

    def __init__(self, state: RenderState):
        self.state = state

    @property
    def scope(self) -> BlockScope:
        return self.state.scope

    def attribute_name(self, hint: str, fallback: str) -> str:
        return self.scope.cls.attributes.claim(hint or fallback, fallback, attribute=True)

    def new_variable(self, hint: str) -> str:
        return self.scope.cls.variables.claim(hint, "x")

    def expr(self, value: Any, mapped: MappedNode, parent_prec: int = 0) -> str:
        """Python source for an expression object of ``mapped``'s node."""
        if isinstance(value, Input):
            name = mapped.node.inputs[value.index]
            if name in self.scope.var_of:
                return self.scope.var_of[name]
            if name in self.state.graph.constants:
                return self.const(self.state.graph.constants[name], name, mapped)
            raise KeyError(f"value '{name}' has not been computed yet")
        if isinstance(value, Lit):
            self.note_literal(value.value)
            return literal(value.value)
        if isinstance(value, DType):
            self.state.uses.add("ms")
            return f"ms.{ms_dtype_name(np.dtype(value.name))}"
        if isinstance(value, Call):
            return self.call(value, mapped)
        if isinstance(value, BinOp):
            prec = _PRECEDENCE[value.op]
            left = self.expr(value.left, mapped, prec)
            right = self.expr(value.right, mapped, prec + 1)
            text = f"{left} {value.op} {right}"
            return f"({text})" if prec < parent_prec else text
        if isinstance(value, Neg):
            text = f"-{self.expr(value.operand, mapped, 7)}"
            return f"({text})" if parent_prec > 5 else text
        if isinstance(value, Item):
            index = value.index
            index_text = (
                ", ".join(self.index_part(i, mapped) for i in index)
                if isinstance(index, tuple) and index
                else self.index_part(index, mapped)
            )
            return f"{self.expr(value.value, mapped, 9)}[{index_text}]"
        if isinstance(value, Cell):
            return self.cell(value, mapped)
        if isinstance(value, Param):
            return self.param(value, mapped)
        if isinstance(value, Const):
            return self.const(value.array, value.source, mapped)
        if isinstance(value, Temp):
            return self.temp(value, mapped)
        if isinstance(value, (list, tuple)):
            inner = ", ".join(self.expr(v, mapped) for v in value)
            if isinstance(value, list):
                return f"[{inner}]"
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        if isinstance(value, (int, float, bool, str, np.integer, np.floating)) or value is None:
            self.note_literal(value)
            return literal(value)
        raise TypeError(f"unknown expression object {type(value).__name__}")

    def index_part(self, part: Any, mapped: MappedNode) -> str:
        """One part of a subscript: a literal, an expression, or a slice whose bounds may be
        expressions computed at run time."""
        if isinstance(part, Expr):
            return self.expr(part, mapped)
        if isinstance(part, slice) and any(
            isinstance(b, Expr) for b in (part.start, part.stop, part.step)
        ):
            bounds = [
                "" if b is None else self.expr(b, mapped) if isinstance(b, Expr) else literal(b)
                for b in (part.start, part.stop, part.step)
            ]
            return ":".join(bounds[:2] + ([bounds[2]] if part.step is not None else []))
        return literal(part)

    def temp(self, temp: Temp, mapped: MappedNode) -> str:
        """A shared sub-expression: assigned to a fresh variable on first use, then reused."""
        key = id(temp)
        if key not in self.scope.temps:
            text = self.expr(temp.expr, mapped)
            name = self.new_variable(temp.hint or "t")
            self.scope.cls.body.append(f"{name} = {text}")
            self.scope.temps[key] = (temp, name)  # holding the object keeps its id unique
        return self.scope.temps[key][1]

    def note_literal(self, value: Any) -> None:
        if isinstance(value, (float, np.floating)) and not math.isfinite(float(value)):
            self.state.uses.add("math")
        elif isinstance(value, (list, tuple)):
            for item in value:
                self.note_literal(item)

    def call(self, call: Call, mapped: MappedNode) -> str:
        self.state.uses.add(call.func.split(".", 1)[0])
        args = [self.expr(a, mapped) for a in call.args]
        args += [f"{key}={self.expr(v, mapped)}" for key, v in call.kwargs.items()]
        return f"{call.func}({', '.join(args)})"

    def init_value(self, value: Any) -> str:
        """Source for a constructor argument (literals and dtypes only)."""
        if isinstance(value, DType):
            self.state.uses.add("ms")
            return f"ms.{ms_dtype_name(np.dtype(value.name))}"
        if isinstance(value, Lit):
            value = value.value
        self.note_literal(value)
        return literal(value)

    def cell_ctor(self, cell: Cell, attr: str) -> list:
        """Parts of ``nn.Xxx(k=v, ...)``: each literal is a slot that may become a class argument."""
        self.state.uses.add(cell.cls.split(".", 1)[0])
        parts: list = [f"{cell.cls}("]
        for index, (key, value) in enumerate(cell.kwargs.items()):
            parts.append(f"{', ' if index else ''}{key}=")
            text = self.init_value(value)
            parts.append(text if isinstance(value, DType) else self.scope.cls.slot(key, attr, text))
        parts.append(")")
        return parts

    def leaf_name(self, mapped: MappedNode, cell: Cell) -> str:
        """Attribute hint for a layer: its source module name relative to the current block."""
        path = _weight_hint(cell.weights) or _module_path_hint(mapped)
        block = self.scope.prefix_path
        if block and path.startswith(block + "."):
            return path[len(block) + 1 :]
        return path.rsplit(".", 1)[-1] if block else path

    def cell(self, cell: Cell, mapped: MappedNode) -> str:
        fallback = cell.role or _ROLE_BY_OP.get(
            mapped.node.op_type, identifier(mapped.node.op_type)
        )
        attr = self.attribute_name(self.leaf_name(mapped, cell), fallback)
        self.scope.cls.init_lines.append([f"self.{attr} = "] + self.cell_ctor(cell, attr))
        for param_name, weight in cell.weights.items():
            self.add_entry(f"{attr}.{param_name}", with_exporter_note(weight, mapped))
        args = [self.expr(a, mapped) for a in cell.args]
        args += [f"{k}={self.expr(v, mapped)}" for k, v in cell.call_kwargs.items()]
        return f"self.{attr}({', '.join(args)})"

    def param(self, param: Param, mapped: MappedNode) -> str:
        source = param.weight.source
        hint = ""
        if source and not source.startswith("onnx::"):
            block = self.scope.prefix_path
            relative = (
                source[len(block) + 1 :] if block and source.startswith(block + ".") else source
            )
            hint = relative.replace(".", "_")
        attr = self.attribute_name(hint, param.role or "weight")
        array = param.weight.array
        trainable = param.trainable and np.issubdtype(array.dtype, np.floating)
        self.state.uses.update({"ms", "ops", "Parameter"})
        shape = literal(tuple(int(d) for d in array.shape))
        grad = "" if trainable else ", requires_grad=False"
        dtype = ms_dtype_name(array.dtype)
        self.scope.cls.init_lines.append(
            [f"self.{attr} = Parameter(ops.zeros({shape}, ms.{dtype}){grad})"]
        )
        self.add_entry(attr, param.weight)
        return f"self.{attr}"

    def const(self, array: np.ndarray, source: str, mapped: MappedNode) -> str:
        """A constant: an inline ``ms.Tensor`` literal when small, else a frozen parameter."""
        array = np.asarray(array)
        if array.size <= INLINE_CONST_LIMIT and array.dtype.kind in "biuf":
            self.state.uses.add("ms")
            values = array.tolist()
            self.note_literal(values)
            return f"ms.Tensor({literal(values)}, ms.{ms_dtype_name(array.dtype)})"
        return self.param(Param(Weight(array, source), role="const", trainable=False), mapped)

    def add_entry(self, name: str, weight: Weight) -> None:
        source_init = self.state.graph.constants.get(weight.source)
        self.state.entries.append(
            CheckpointEntry(
                name=self.scope.prefix + name,
                array=weight.array,
                source=weight.source,
                transform=weight.transform,
                source_shape=tuple(source_init.shape)
                if source_init is not None
                else tuple(weight.array.shape),
                source_dtype=str(
                    source_init.dtype if source_init is not None else weight.array.dtype
                ),
            )
        )
