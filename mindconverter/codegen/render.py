"""Stage 6: turn mapped nodes into the MindSpore script text and the checkpoint entries.

The renderer owns every naming and formatting decision: attribute names for cells and
parameters, variable names in ``construct``, literals, imports. Mappers only describe.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

import jinja2
import numpy as np

from ..codegen.naming import CELL_MEMBERS, Namer, comment_text, identifier
from ..graph import Graph
from ..mappers.base import (
    BinOp,
    Call,
    Cell,
    Const,
    DType,
    Input,
    Item,
    Lit,
    MappedNode,
    Neg,
    Outputs,
    Param,
    Temp,
    Unpack,
    Weight,
    ms_dtype_name,
)
from ..passes.recover_hierarchy import ACTIVATION_CELLS, Block, module_path
from ..version import __version__

# Constants with at most this many elements are written into the script as literals.
INLINE_CONST_LIMIT = 16
LINE_LENGTH = 100

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


@dataclass
class CheckpointEntry:
    """One parameter of the checkpoint and where its value came from."""

    name: str
    array: np.ndarray
    source: str
    transform: str = ""
    source_shape: tuple[int, ...] | None = None
    source_dtype: str = ""


@dataclass
class UnconvertedSite:
    """An operator left as a placeholder, and where it sits in the script."""

    node_name: str
    op_type: str
    domain: str
    reason: str
    attribute: str
    line: int = 0
    column: int = 0


@dataclass
class RenderedModel:
    """The generated script and everything the checkpoint, report and weight map need."""

    code: str
    entries: list[CheckpointEntry]
    unconverted: list[UnconvertedSite]
    input_names: list[str]
    output_names: list[str]


@dataclass(frozen=True)
class SlotRef:
    """A literal in an ``__init__`` line that may become a constructor argument of the class."""

    index: int


@dataclass(frozen=True)
class ClassRef:
    """Instantiation of a recovered block class; ``slots`` are the parent's slots for its values."""

    key: Any
    slots: tuple[int, ...]


@dataclass
class _ClassBuilder:
    init_lines: list[list] = field(default_factory=list)  # parts: str | SlotRef | ClassRef
    body: list[str] = field(default_factory=list)
    attributes: Namer = field(default_factory=lambda: Namer(CELL_MEMBERS, reserve=False))
    variables: Namer = field(default_factory=Namer)
    slots: list[tuple[str, str, str]] = field(
        default_factory=list
    )  # (label, attribute, literal text)

    def slot(self, label: str, attribute: str, text: str) -> SlotRef:
        self.slots.append((label, attribute, text))
        return SlotRef(len(self.slots) - 1)


@dataclass
class _Instance:
    """One rendered block instance, before instances are merged into classes."""

    block: Block
    builder: _ClassBuilder
    args: list[str]
    returns: list[str]

    @property
    def key(self):
        lines = tuple(tuple(line) for line in self.builder.init_lines)
        return (
            self.block.class_hint,
            lines,
            tuple(self.builder.body),
            tuple(self.args),
            tuple(self.returns),
        )


def float_literal(value: float) -> str:
    """The shortest literal within float32 precision of ``value`` (``1e-05``, not float noise)."""
    value = float(value)
    if math.isnan(value):
        return "math.nan"
    if math.isinf(value):
        return "math.inf" if value > 0 else "-math.inf"
    if value == 0.0:
        return "0.0"
    for digits in range(1, 18):
        text = f"{value:.{digits}g}"
        if abs(float(text) - value) <= abs(value) * 2e-7:
            break
    number = float(text)
    text = repr(number)
    return text


def literal(value: Any) -> str:
    """Python source for a literal value (numbers, bools, None, strings, tuples, lists)."""
    if isinstance(value, (bool, np.bool_)):
        return "True" if value else "False"
    if value is None:
        return "None"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return float_literal(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, tuple):
        inner = ", ".join(literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, slice):
        parts = [
            literal(value.start) if value.start is not None else "",
            literal(value.stop) if value.stop is not None else "",
        ]
        if value.step is not None:
            parts.append(literal(value.step))
        return ":".join(parts)
    if value is Ellipsis:
        return "..."
    if isinstance(value, np.ndarray):
        return literal(value.tolist())
    raise TypeError(f"cannot write {type(value).__name__} as a literal")


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


def _is_cell_list(block: Block) -> bool:
    """A container of numbered layers that is not a simple chain (a ModuleList of layers taking
    several inputs, like BERT's ``encoder.layer``)."""
    if block.sequential or not block.path:
        return False
    numbered = [item for item in block.items if isinstance(item, Block) and item.name.isdigit()]
    leaves = [item for item in block.items if not isinstance(item, Block)]
    # layers of the list itself (leaf modules named by index) would lose their names
    layer_leaves = [m for m in leaves if module_path(m.node).rsplit(".", 1)[0] == block.path]
    return (
        len(numbered) >= 2
        and not layer_leaves
        and all(item.name.isdigit() for item in block.items if isinstance(item, Block))
    )


def _with_exporter_note(weight: Weight, mapped: MappedNode) -> Weight:
    """Record rewrites the exporter applied to a layer (dynamo's BatchNorm folding) in the weight map."""
    rules = mapped.node.metadata.get("pkg.onnxscript.rewriter.rule_name", "")
    if "FuseBatchNormIntoConv" not in rules:
        return weight
    note = "BatchNorm folded into the convolution by the exporter"
    return Weight(weight.array, weight.source, "; ".join(filter(None, [weight.transform, note])))


class ScriptRenderer:
    """Renders one model; create one per conversion."""

    def __init__(self, graph: Graph, mapped: list[MappedNode], model_name: str, input_shapes: dict):
        self.graph = graph
        self.mapped = mapped
        self.model_name = model_name
        self.input_shapes = input_shapes
        self.entries: list[CheckpointEntry] = []
        self.unconverted: list[UnconvertedSite] = []
        self.uses: set[str] = set()
        self.cls = _ClassBuilder()
        self.var_of: dict[str, str] = {}
        self.remaining_uses: dict[str, int] = {}
        self.temps: dict[int, tuple[Temp, str]] = {}
        self.prefix = ""  # attribute path of the block being rendered, with a trailing dot
        self.prefix_path = ""  # source module path of that block
        self.protected: set[str] = set()
        self.no_reuse: set[str] = set()
        self.remaining_uses_all: set[str] = set()
        self.instances: list[_Instance] = []

    # --- naming ------------------------------------------------------------------------
    def _attribute_name(self, hint: str, fallback: str) -> str:
        return self.cls.attributes.claim(hint or fallback, fallback, attribute=True)

    def _new_variable(self, hint: str) -> str:
        return self.cls.variables.claim(hint, "x")

    # --- expressions -------------------------------------------------------------------
    def expr(self, value: Any, mapped: MappedNode, parent_prec: int = 0) -> str:
        """Python source for an expression object of ``mapped``'s node."""
        if isinstance(value, Input):
            name = mapped.node.inputs[value.index]
            if name in self.var_of:
                return self.var_of[name]
            if name in self.graph.constants:
                return self.const(self.graph.constants[name], name, mapped)
            raise KeyError(f"value '{name}' has not been computed yet")
        if isinstance(value, Lit):
            self._note_literal(value.value)
            return literal(value.value)
        if isinstance(value, DType):
            self.uses.add("ms")
            return f"ms.{ms_dtype_name(np.dtype(value.name))}"
        if isinstance(value, Call):
            return self._call(value, mapped)
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
                ", ".join(literal(i) for i in index)
                if isinstance(index, tuple) and index
                else literal(index)
            )
            return f"{self.expr(value.value, mapped, 9)}[{index_text}]"
        if isinstance(value, Cell):
            return self._cell(value, mapped)
        if isinstance(value, Param):
            return self._param(value, mapped)
        if isinstance(value, Const):
            return self.const(value.array, value.source, mapped)
        if isinstance(value, Temp):
            return self._temp(value, mapped)
        if isinstance(value, (list, tuple)):
            inner = ", ".join(self.expr(v, mapped) for v in value)
            if isinstance(value, list):
                return f"[{inner}]"
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        if isinstance(value, (int, float, bool, str, np.integer, np.floating)) or value is None:
            self._note_literal(value)
            return literal(value)
        raise TypeError(f"unknown expression object {type(value).__name__}")

    def _temp(self, temp: Temp, mapped: MappedNode) -> str:
        """A shared sub-expression: assigned to a fresh variable on first use, then reused."""
        key = id(temp)
        if key not in self.temps:
            text = self.expr(temp.expr, mapped)
            name = self._new_variable(temp.hint or "t")
            self.cls.body.append(f"{name} = {text}")
            self.temps[key] = (temp, name)  # holding the object keeps its id unique
        return self.temps[key][1]

    def _note_literal(self, value: Any) -> None:
        if isinstance(value, (float, np.floating)) and not math.isfinite(float(value)):
            self.uses.add("math")
        elif isinstance(value, (list, tuple)):
            for item in value:
                self._note_literal(item)

    def _call(self, call: Call, mapped: MappedNode) -> str:
        self.uses.add(call.func.split(".", 1)[0])
        args = [self.expr(a, mapped) for a in call.args]
        args += [f"{key}={self.expr(v, mapped)}" for key, v in call.kwargs.items()]
        return f"{call.func}({', '.join(args)})"

    def _init_value(self, value: Any) -> str:
        """Source for a constructor argument (literals and dtypes only)."""
        if isinstance(value, DType):
            self.uses.add("ms")
            return f"ms.{ms_dtype_name(np.dtype(value.name))}"
        if isinstance(value, Lit):
            value = value.value
        self._note_literal(value)
        return literal(value)

    def _cell_ctor(self, cell: Cell, attr: str) -> list:
        """Parts of ``nn.Xxx(k=v, ...)``: each literal is a slot that may become a class argument."""
        self.uses.add(cell.cls.split(".", 1)[0])
        parts: list = [f"{cell.cls}("]
        for index, (key, value) in enumerate(cell.kwargs.items()):
            parts.append(f"{', ' if index else ''}{key}=")
            text = self._init_value(value)
            parts.append(text if isinstance(value, DType) else self.cls.slot(key, attr, text))
        parts.append(")")
        return parts

    def _leaf_name(self, mapped: MappedNode, cell: Cell) -> str:
        """Attribute hint for a layer: its source module name relative to the current block."""
        path = _weight_hint(cell.weights) or _module_path_hint(mapped)
        block = self.prefix_path
        if block and path.startswith(block + "."):
            return path[len(block) + 1 :]
        return path.rsplit(".", 1)[-1] if block else path

    def _cell(self, cell: Cell, mapped: MappedNode) -> str:
        fallback = cell.role or _ROLE_BY_OP.get(
            mapped.node.op_type, identifier(mapped.node.op_type)
        )
        attr = self._attribute_name(self._leaf_name(mapped, cell), fallback)
        self.cls.init_lines.append([f"self.{attr} = "] + self._cell_ctor(cell, attr))
        for param_name, weight in cell.weights.items():
            self._add_entry(f"{attr}.{param_name}", _with_exporter_note(weight, mapped))
        args = [self.expr(a, mapped) for a in cell.args]
        args += [f"{k}={self.expr(v, mapped)}" for k, v in cell.call_kwargs.items()]
        return f"self.{attr}({', '.join(args)})"

    def _param(self, param: Param, mapped: MappedNode) -> str:
        source = param.weight.source
        hint = ""
        if source and not source.startswith("onnx::"):
            block = self.prefix_path
            relative = (
                source[len(block) + 1 :] if block and source.startswith(block + ".") else source
            )
            hint = relative.replace(".", "_")
        attr = self._attribute_name(hint, param.role or "weight")
        array = param.weight.array
        trainable = param.trainable and np.issubdtype(array.dtype, np.floating)
        self.uses.update({"ms", "ops", "Parameter"})
        shape = literal(tuple(int(d) for d in array.shape))
        grad = "" if trainable else ", requires_grad=False"
        dtype = ms_dtype_name(array.dtype)
        self.cls.init_lines.append(
            [f"self.{attr} = Parameter(ops.zeros({shape}, ms.{dtype}){grad})"]
        )
        self._add_entry(attr, param.weight)
        return f"self.{attr}"

    def const(self, array: np.ndarray, source: str, mapped: MappedNode) -> str:
        """A constant: an inline ``ms.Tensor`` literal when small, else a frozen parameter."""
        array = np.asarray(array)
        if array.size <= INLINE_CONST_LIMIT and array.dtype.kind in "biuf":
            self.uses.add("ms")
            values = array.tolist()
            self._note_literal(values)
            return f"ms.Tensor({literal(values)}, ms.{ms_dtype_name(array.dtype)})"
        return self._param(Param(Weight(array, source), role="const", trainable=False), mapped)

    def _add_entry(self, name: str, weight: Weight) -> None:
        source_init = self.graph.constants.get(weight.source)
        self.entries.append(
            CheckpointEntry(
                name=self.prefix + name,
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

    # --- statements --------------------------------------------------------------------
    def _output_variable(self, mapped: MappedNode, index: int, reuse: str | None) -> str:
        out = mapped.node.outputs[index]
        if reuse is not None:
            name = reuse
        else:
            path = _module_path_hint(mapped)
            # a node of the block itself is named by what it computes, not by the block's name
            hint = path.rsplit(".", 1)[-1] if path and path != self.prefix_path else ""
            for preferred in ("x", "out"):
                if preferred not in self.cls.variables.taken:
                    hint = preferred
                    break
            name = self._new_variable(hint or identifier(mapped.node.op_type, "x"))
        self.var_of[out] = name
        return name

    def _reusable_input(self, mapped: MappedNode) -> str | None:
        """The first input's variable when this node is its last reader (chains read ``x = f(x)``).

        The network's input arguments are never overwritten.
        """
        for name in mapped.node.inputs:
            if name and name in self.var_of:
                if name in self.no_reuse:
                    return None
                if self.remaining_uses.get(name, 0) == 0 and name not in self.protected:
                    return self.var_of[name]
                return None
        return None

    def _consume_inputs(self, mapped: MappedNode) -> None:
        for name in mapped.node.inputs:
            if name in self.remaining_uses:
                self.remaining_uses[name] -= 1

    def _targets(self, mapped: MappedNode, count: int) -> str:
        used = [
            i < len(mapped.node.outputs) and mapped.node.outputs[i] in self.remaining_uses_all
            for i in range(count)
        ]
        reuse = self._reusable_input(mapped) if sum(used) == 1 else None
        names = []
        for i in range(count):
            if used[i]:
                names.append(self._output_variable(mapped, i, reuse))
                reuse = None
            else:
                names.append("_")
        return ", ".join(names)

    def statement(self, mapped: MappedNode) -> None:
        """Append the construct() line(s) for one node."""
        result = mapped.result
        if isinstance(result, Outputs):
            texts = [None if e is None else self.expr(e, mapped) for e in result.exprs]
            self._consume_inputs(mapped)
            for index, text in enumerate(texts):
                if text is None or index >= len(mapped.node.outputs):
                    continue
                out = mapped.node.outputs[index]
                if out and out in self.remaining_uses_all:
                    var = self._output_variable(mapped, index, None)
                    self.cls.body.append(f"{var} = {text}")
            return
        if isinstance(result, Unpack):
            text = self.expr(result.expr, mapped)
            self._consume_inputs(mapped)
            targets = self._targets(mapped, result.count)
            if targets.replace("_", "").replace(",", "").strip():
                self.cls.body.append(f"{targets} = {text}")
            return
        if isinstance(result, Input) and mapped.node.inputs[result.index] in self.var_of:
            # a pure alias (Identity, no-op): later readers use the input's variable directly
            self.var_of[mapped.node.outputs[0]] = self.var_of[mapped.node.inputs[result.index]]
            self._consume_inputs(mapped)
            source = mapped.node.inputs[result.index]
            self.remaining_uses[source] = self.remaining_uses.get(
                source, 0
            ) + self.remaining_uses.get(mapped.node.outputs[0], 0)
            return
        text = self.expr(result, mapped)
        self._consume_inputs(mapped)
        if mapped.node.outputs and mapped.node.outputs[0] in self.remaining_uses_all:
            targets = self._targets(mapped, 1)
            self.cls.body.append(f"{targets} = {text}")

    def placeholder(self, mapped: MappedNode) -> None:
        """An unconverted node: a clearly marked placeholder cell that keeps the file importable."""
        node = mapped.node
        attr = self._attribute_name(f"unconverted_{node.op_type}", "unconverted")
        in_shapes = tuple(self.graph.shapes.get(n) for n in node.inputs if n)
        out_shapes = tuple(self.graph.shapes.get(n) for n in node.outputs if n)
        self.uses.add("UnconvertedOperator")
        self.cls.init_lines.append(
            [
                f"self.{attr} = UnconvertedOperator({node.op_type!r}, input_shapes={literal(in_shapes)}, "
                f"output_shapes={literal(out_shapes)})"
            ]
        )
        args = []
        for name in node.inputs:
            if not name:
                args.append("None")
            elif name in self.var_of:
                args.append(self.var_of[name])
            else:
                args.append(self.const(self.graph.constants[name], name, mapped))
        self._consume_inputs(mapped)
        count = len(node.outputs)
        targets = self._targets(mapped, count) if count else "_"
        targets = targets if targets.replace("_", "").replace(",", "").strip() else "_"
        call = f"self.{attr}({', '.join(args)})"
        self.cls.body.append(f"{targets} = {call}")
        self.unconverted.append(
            UnconvertedSite(node.name, node.op_type, node.domain, mapped.reason or "", attr)
        )

    # --- whole script ------------------------------------------------------------------
    def render(self) -> RenderedModel:
        top = self._render_block(self.tree, prefix="", is_root=True)
        classes = self._merge_classes()
        root_init = [self._join(line, top.builder, {}, classes) for line in top.builder.init_lines]
        code = self._fill_template(top.args, top.returns, classes, root_init, top.builder.body)
        code = format_code(code)
        self._locate_unconverted(code)
        return RenderedModel(code, self.entries, self.unconverted, top.args, top.returns)

    # --- blocks ------------------------------------------------------------------------
    def _render_block(self, block: Block, prefix: str, is_root: bool = False) -> _Instance:
        """Render one block (the whole model for the root) with its own names and variables."""
        saved = (
            self.cls,
            self.var_of,
            self.remaining_uses,
            self.remaining_uses_all,
            self.temps,
            self.prefix,
            self.prefix_path,
            self.protected,
            self.no_reuse,
        )
        self.cls, self.var_of, self.temps = _ClassBuilder(), {}, {}
        self.prefix, self.prefix_path = prefix, block.path
        inputs = self.graph.inputs if is_root else block.inputs
        outputs = self.graph.outputs if is_root else block.outputs
        args = []
        for name in inputs:
            hint = name if (is_root or name in self.graph.inputs) else "x"
            var = self.cls.variables.claim(hint, "x")
            self.var_of[name] = var
            args.append(var)
        readers: dict[str, int] = {}
        for mapped in block.nodes():
            for name in mapped.node.inputs:
                if name:
                    readers[name] = readers.get(name, 0) + 1
        self.remaining_uses = readers
        self.remaining_uses_all = set(readers) | set(outputs)
        self.protected = set(outputs)
        self.no_reuse = set(inputs) if is_root else set()
        for item in block.items:
            if isinstance(item, Block):
                self._child_block(item)
            elif item.converted:
                self.statement(item)
            else:
                self.placeholder(item)
        returns = [
            self.var_of[name]
            if name in self.var_of
            else self.const(self.graph.constants[name], name, None)
            for name in outputs
        ]
        instance = _Instance(block, self.cls, args, returns)
        (
            self.cls,
            self.var_of,
            self.remaining_uses,
            self.remaining_uses_all,
            self.temps,
            self.prefix,
            self.prefix_path,
            self.protected,
            self.no_reuse,
        ) = saved
        return instance

    def _instantiate(self, child: Block, prefix: str, attribute: str) -> ClassRef:
        """Render a child block and refer to its class; its literals become this block's slots."""
        instance = self._render_block(child, prefix)
        self.instances.append(instance)
        slots = tuple(
            self.cls.slot(label, attribute, text).index for label, _, text in instance.builder.slots
        )
        return ClassRef(instance.key, slots)

    def _sequential(self, block: Block, prefix: str, attr: str) -> list:
        """Parts of ``nn.SequentialCell([...])``; layers the exporter dropped become ``nn.Identity()``
        so every element keeps its source index (and its parameters their source names)."""
        self.uses.add("nn")
        by_index = dict(zip(block.indices, block.items))
        elements: list = ["nn.SequentialCell(["]
        for index in range(max(block.indices) + 1):
            if index:
                elements.append(", ")
            item = by_index.get(index)
            if item is None:
                elements.append("nn.Identity()")
            elif isinstance(item, Block) and item.sequential:
                elements.extend(self._sequential(item, f"{prefix}{index}.", attr))
            elif isinstance(item, Block):
                elements.append(self._instantiate(item, f"{prefix}{index}.", attr))
            elif isinstance(item.result, Cell):
                elements.extend(self._cell_ctor(item.result, attr))
                saved, self.prefix = self.prefix, f"{prefix}{index}."
                for param_name, weight in item.result.weights.items():
                    self._add_entry(param_name, _with_exporter_note(weight, item))
                self.prefix = saved
            else:
                elements.append(f"{ACTIVATION_CELLS[item.result.func]}()")
        elements.append("])")
        return elements

    def _child_block(self, child: Block) -> None:
        """Create the child's cell in ``__init__`` and call it in ``construct``."""
        if _is_cell_list(child):
            self._cell_list(child)
            return
        attr = self._attribute_name(child.name if not child.name.isdigit() else child.path, "block")
        prefix = f"{self.prefix}{attr}."
        if child.sequential:
            self.cls.init_lines.append([f"self.{attr} = "] + self._sequential(child, prefix, attr))
        else:
            self.cls.init_lines.append([f"self.{attr} = ", self._instantiate(child, prefix, attr)])
        self._call_block(child, f"self.{attr}", attr)

    def _cell_list(self, container: Block) -> None:
        """A ModuleList whose layers take several inputs: ``nn.CellList`` called as ``self.layer[i](...)``,
        with the container's own statements inlined here."""
        attr = self._attribute_name(container.name, "layers")
        numbered = {
            int(item.name): item
            for item in container.items
            if isinstance(item, Block) and item.name.isdigit()
        }
        elements: list = ["nn.CellList(["]
        for index in range(max(numbered) + 1):
            if index:
                elements.append(", ")
            item = numbered.get(index)
            if item is None:
                elements.append("nn.Identity()")
            elif item.sequential:
                elements.extend(self._sequential(item, f"{self.prefix}{attr}.{index}.", attr))
            else:
                elements.append(self._instantiate(item, f"{self.prefix}{attr}.{index}.", attr))
        elements.append("])")
        self.uses.add("nn")
        self.cls.init_lines.append([f"self.{attr} = "] + elements)
        for item in container.items:
            if isinstance(item, Block) and item.name.isdigit():
                self._call_block(item, f"self.{attr}[{int(item.name)}]", attr)
            elif isinstance(item, Block):
                self._child_block(item)
            elif item.converted:
                self.statement(item)
            else:
                self.placeholder(item)

    def _call_block(self, child: Block, callee: str, attr: str) -> None:
        """``outputs = callee(inputs)`` for a child block, with the usual variable reuse."""
        call = f"{callee}({', '.join(self.var_of[name] for name in child.inputs)})"
        for mapped in child.nodes():
            for name in mapped.node.inputs:
                if name in self.remaining_uses:
                    self.remaining_uses[name] -= 1
        used = [name in self.remaining_uses_all for name in child.outputs]
        reuse = None
        if sum(used) == 1:
            # keep a name only for the same kind of value (hidden states stay hidden states)
            result = child.outputs[used.index(True)]
            for source in child.inputs:
                if (
                    source not in self.no_reuse
                    and source not in self.protected
                    and self.remaining_uses.get(source, 0) == 0
                    and self.graph.dtypes.get(source) == self.graph.dtypes.get(result)
                    and (
                        len(child.inputs) == 1
                        or self.graph.shapes.get(source) == self.graph.shapes.get(result)
                    )
                ):
                    reuse = self.var_of[source]
                    break
        targets = []
        for name, needed in zip(child.outputs, used):
            if not needed:
                targets.append("_")
                continue
            var = reuse or self._new_variable(
                "x" if "x" not in self.cls.variables.taken else identifier(attr, "out")
            )
            reuse = None
            self.var_of[name] = var
            targets.append(var)
        self.cls.body.append(f"{', '.join(targets) or '_'} = {call}")

    def _merge_classes(self) -> dict:
        """Group block instances by their text; literals that differ become constructor arguments."""
        groups: dict = {}
        for instance in self.instances:
            groups.setdefault(instance.key, []).append(instance)
        namer = Namer({"MindSporeModel"})
        classes = {}
        for key, members in groups.items():
            first = members[0]
            varying = [
                i
                for i in range(len(first.builder.slots))
                if len({m.builder.slots[i][2] for m in members}) > 1
            ]
            # slots that carry the same values in every instance share one argument
            vectors = {i: tuple(m.builder.slots[i][2] for m in members) for i in varying}
            distinct = list(dict.fromkeys(vectors.values()))
            labels = [
                next(first.builder.slots[i][0] for i in varying if vectors[i] == v)
                for v in distinct
            ]
            params = Namer(set())
            by_vector = {}
            for vector, label in zip(distinct, labels):
                owner = next(i for i in varying if vectors[i] == vector)
                attribute = first.builder.slots[owner][1]
                hint = label if labels.count(label) == 1 else f"{attribute}_{label}"
                by_vector[vector] = params.claim(hint, "value")
            names = {i: by_vector[vectors[i]] for i in varying}
            block = first.block
            hint = block.class_hint or (
                re.sub(r"\.\d+$", "", block.path).rsplit(".", 1)[-1] + "_block"
            )
            classes[key] = {"name": namer.claim_class(hint), "params": names, "members": members}
        for info in classes.values():
            first = info["members"][0]
            info["init"] = [
                self._join(line, first.builder, info["params"], classes)
                for line in first.builder.init_lines
            ]
            paths = ", ".join(
                re.sub(r"[^A-Za-z0-9_.]", "", m.block.path) for m in info["members"][:4]
            )
            more = f" and {len(info['members']) - 4} more" if len(info["members"]) > 4 else ""
            info["doc"] = f"Recovered from {paths}{more}."
        return classes

    def _join(self, parts: list, builder: _ClassBuilder, params: dict, classes: dict) -> str:
        """Source text of an ``__init__`` line: slots become argument names or their literal."""
        text = []
        for part in parts:
            if isinstance(part, SlotRef):
                text.append(params.get(part.index, builder.slots[part.index][2]))
            elif isinstance(part, ClassRef):
                info = classes[part.key]
                seen, pairs = set(), []
                for i, name in info["params"].items():
                    if name not in seen:
                        seen.add(name)
                        pairs.append(
                            f"{name}={params.get(part.slots[i], builder.slots[part.slots[i]][2])}"
                        )
                args = ", ".join(pairs)
                text.append(f"{info['name']}({args})")
            else:
                text.append(part)
        return "".join(text)

    def _fill_template(
        self,
        input_vars: list[str],
        returns: list[str],
        classes: dict,
        init_lines: list[str],
        body: list[str],
    ) -> str:
        env = jinja2.Environment(
            loader=jinja2.PackageLoader("mindconverter.codegen", "templates"),
            keep_trailing_newline=True,
            trim_blocks=True,
            lstrip_blocks=True,
            autoescape=False,
        )
        template = env.get_template("model.py.j2")
        inputs_doc = []
        for name, var in zip(self.graph.inputs, input_vars):
            dtype = self.graph.dtypes.get(name)
            shape = self.graph.shapes.get(name)
            inputs_doc.append(
                f"{var}: {ms_dtype_name(dtype) if dtype is not None else '?'}"
                f"[{', '.join(map(str, shape)) if shape else '?'}]"
            )
        outputs_doc = []
        for name, var in zip(self.graph.outputs, returns):
            dtype = self.graph.dtypes.get(name)
            shape = self.graph.shapes.get(name)
            outputs_doc.append(
                f"{var}: {ms_dtype_name(dtype) if dtype is not None else '?'}"
                f"[{', '.join(map(str, shape)) if shape is not None else '?'}]"
            )
        return template.render(
            version=__version__,
            model_name=comment_text(self.model_name),
            producer=comment_text(self.graph.producer or "unknown"),
            opset=self.graph.opset,
            inputs_doc=inputs_doc,
            outputs_doc=outputs_doc,
            uses=self.uses,
            init_lines=init_lines,
            body=body,
            classes=[
                dict(
                    name=c["name"],
                    doc=c["doc"],
                    params=list(dict.fromkeys(c["params"].values())),
                    init=c["init"],
                    args=", ".join(["self"] + c["members"][0].args),
                    body=c["members"][0].builder.body,
                    returns=", ".join(c["members"][0].returns),
                )
                for c in classes.values()
            ],
            args=", ".join(["self"] + input_vars),
            returns=", ".join(returns),
            unconverted=bool(self.unconverted),
        )

    def _locate_unconverted(self, code: str) -> None:
        lines = code.splitlines()
        start = next((i for i, line in enumerate(lines) if "def construct(" in line), 0)
        for site in self.unconverted:
            needle = f"self.{site.attribute}("
            for number in range(start, len(lines)):
                column = lines[number].find(needle)
                if column >= 0:
                    site.line, site.column = number + 1, column
                    break


def format_code(code: str) -> str:
    """Format with ruff when it is available (it is a dependency); unchanged otherwise."""
    ruff = shutil.which("ruff")
    command = [ruff] if ruff else [sys.executable, "-m", "ruff"]
    try:
        done = subprocess.run(
            command + ["format", "--isolated", "--line-length", str(LINE_LENGTH), "-"],
            input=code.encode("utf-8"),
            capture_output=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return code
    return done.stdout.decode("utf-8") if done.returncode == 0 and done.stdout else code


def render_script(
    graph: Graph, mapped: list[MappedNode], tree: Block, model_name: str, input_shapes: dict
) -> RenderedModel:
    """Render the MindSpore script for the mapped graph and its recovered module tree."""
    renderer = ScriptRenderer(graph, mapped, model_name, input_shapes)
    renderer.tree = tree
    return renderer.render()
