"""Mapper expressions (``Call``, ``Cell``, ``Param``...) as Python source, with the cells,
parameters and checkpoint entries they create."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any

import numpy as np

from ..graph.container_types import is_floating
from ..graph.module_tree import module_path, packed_projection, parameter_owner
from ..graph.weight_roles import is_generated_name, learned_source
from ..graph.weight_steps import BatchNormFold, folded_batchnorm, parse_steps
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
    Method,
    Neg,
    Noted,
    Param,
    Temp,
    Ternary,
    Weight,
    ms_dtype_name,
)
from .applied_layers import TIEABLE_CELLS, layer_content, same_layer
from .constant_roles import constant_role
from .container_dtypes import widened, widened_weight
from .literals import literal
from .naming import comment_text, identifier
from .rendered import CheckpointEntry
from .scope import BlockScope, RenderState
from .sizes import hoist_long_sizes, named_size, named_sizes_tuple, picked_size, shape_read

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
    "is not": 2,
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
    """The node's module path, when it reads as one (attribute names and list indices)."""
    path = module_path(mapped.node)
    return path if re.fullmatch(r"[A-Za-z0-9_.]*", path) else ""


def _runs_elsewhere(state: RenderState, module: str, scope: str) -> bool:
    """Whether nodes filed under ``module`` exist besides those under ``scope``."""
    if not state.scopes:
        state.scopes.update(_module_path_hint(m) for m in state.mapped)
    return module != scope and state.scopes.get(module, 0) > 0


def _relative_to(block: str, source: str) -> str:
    """``source`` relative to the block path when it lies inside it, or inside another item
    of the same list (``m.layers.0.lambda_1`` in ``m.layers.1``: the exporter kept one of
    several identical tensors), else ``source`` itself."""
    outer, inner = block.split(".") if block else [], source.split(".")
    if not outer or len(inner) <= len(outer):
        return source
    if all(a == b or (a.isdigit() and b.isdigit()) for a, b in zip(outer, inner)):
        return ".".join(inner[len(outer) :])
    return source


def _crosses_list_item(path: str) -> bool:
    return any(part.isdigit() for part in path.split(".")[:-1])


def _weight_hint(weights: dict[str, Weight]) -> str:
    """The module path in the main weight's source name (``layer1.0.conv1.weight`` -> ``layer1.0.conv1``).

    Only the first (main) weight counts: exporters share identical tensors between layers (all-zero
    biases become one initializer), so a bias's name may belong to another layer.
    """
    for weight in list(weights.values())[:1]:
        source = weight.source
        if "." in source and not _exporter_value_name(source):
            return parameter_owner(source)
    return ""


def _packed_hint(weights: dict[str, Weight], mapped: MappedNode) -> str:
    """A packed attention projection whose weight the exporter renamed (TorchScript's
    ``onnx::MatMul_371``), named from its bias (``in_proj_bias``) inside the node's scope."""
    scope = _module_path_hint(mapped)
    for weight in weights.values():
        projection = packed_projection(weight.source)
        if projection and scope:
            return f"{scope}.{projection}"
    return ""


def _placeholder_hint(weights: dict[str, Weight], mapped: MappedNode) -> str:
    """A layer made of a parameter its module passes to a functional call, which the dynamo
    exporter renamed (``val_8``): named after it (``attn.q_proj_weight`` -> ``attn.q_proj``)."""
    scope = _module_path_hint(mapped)
    for name, weight in list(weights.items())[:1]:
        kind = _TORCH_PARAMETER_NAMES.get(name, "")
        if scope and kind and is_generated_name(weight.source):
            found = _placeholder_parameter(mapped.node, scope, name)
            return found.removesuffix(f"_{kind}") if found.endswith(f"_{kind}") else ""
    return ""


# Layers whose constructor takes the dtype of their parameters (MindSpore 2.x).
_CELLS_WITH_DTYPE = {
    "nn.Dense",
    "nn.LayerNorm",
    "nn.Embedding",
    "nn.GroupNorm",
    "nn.BatchNorm1d",
    "nn.BatchNorm2d",
    "nn.BatchNorm3d",
    "nn.InstanceNorm1d",
    "nn.InstanceNorm2d",
    "nn.InstanceNorm3d",
    "nn.Conv1d",
    "nn.Conv2d",
    "nn.Conv3d",
    "nn.Conv1dTranspose",
    "nn.Conv2dTranspose",
    "nn.Conv3dTranspose",
}


# Cells the generated script defines itself when a mapper uses them (helpers/<name>.py),
# with the names their definitions need imported.
HELPER_CELLS = {
    "DeformConv": {"ms", "ops"},
    "GRUResetFirst": {"ms", "ops", "Parameter"},
    "GridSampleNearest": {"ms", "ops"},
    "ImageDecoder": {"ms"},
    "NarrowFloat": {"ms", "ops"},
    "NonMaxSuppressionInBlocks": {"ms", "ops"},
    "PowerOfTwo": {"ms", "ops"},
    "QuantizedDense": {"ms", "ops", "Parameter"},
    "RMSNorm": {"ms", "ops", "Parameter"},
    "TfIdfVectorizer": {"ms", "ops"},
    "UniqueSlices": {"ms", "ops"},
}


# Operators the dynamo exporter names the constants it folds after (``unsqueeze_14``, ``ge``).
_FOLDED_AFTER = frozenset(
    "add sub mul div neg pow sqrt rsqrt exp log cos sin ge gt le lt eq ne and or not where "
    "expand unsqueeze squeeze view reshape slice select index cat concat stack transpose "
    "permute clone to type_as arange full ones zeros zeros_like ones_like masked_fill tril "
    "triu cumsum bitwise_and bitwise_or logical_and logical_or logical_not scalar_tensor "
    "lift_fresh_copy convert_element_type to_copy copy detach alias matmul bmm mm".split()
)


def _exporter_value_name(name: str) -> bool:
    """Whether ``name`` is a value the exporter computed and named (a path with ``/``, a
    ``onnx::`` name, or an operator's name with a counter), not a parameter or buffer."""
    if "/" in name or ":" in name:
        return True
    stem = re.sub(r"_\d+$", "", name).lstrip("_")
    return stem in _FOLDED_AFTER or (stem == "val" and stem != name)  # dynamo's ``val_376``


# Functions the generated script defines itself (helpers/<name>.py), with the names they use.
# characters a ``construct`` line holds after its indent before the formatter wraps it
CONSTRUCT_WIDTH = 80

HELPER_FUNCTIONS = {
    "rotate_half": {"ops"},
    "apply_rotary_pos_emb": {"ops", "rotate_half"},
    "apply_partial_rotary_pos_emb": {"ops", "rotate_half"},
    "rotate_every_two": {"ops"},
    "apply_interleaved_rotary_pos_emb": {"ops", "rotate_every_two"},
    "apply_partial_interleaved_rotary_pos_emb": {"ops", "rotate_every_two"},
    "masked_softmax": {"ops", "math", "ms"},
    "roll": {"ops"},
}


def with_weight_dtype(cell: Cell) -> Cell:
    """The layer built in its weights' dtype when that is not float32 (a float16 or bfloat16
    model), so the script's parameters and the checkpoint agree."""
    dtypes = {
        w.array.dtype
        for w in cell.weights.values()
        if w.array.dtype.kind == "f" or w.array.dtype.name == "bfloat16"
    }
    if len(dtypes) != 1 or cell.cls not in _CELLS_WITH_DTYPE or "dtype" in cell.kwargs:
        return cell
    dtype = dtypes.pop()
    if dtype == np.float32:
        return cell
    return replace(cell, kwargs={**cell.kwargs, "dtype": DType(ms_dtype_name(dtype))})


# PyTorch's names for the parameters of the MindSpore layers we write.
_TORCH_PARAMETER_NAMES = {
    "weight": "weight",
    "bias": "bias",
    "gamma": "weight",
    "beta": "bias",
    "embedding_table": "weight",
    "moving_mean": "running_mean",
    "moving_variance": "running_var",
}


def recovered_source_name(source: str, mapped: MappedNode | None, parameter: str) -> str:
    """The source's parameter name for a weight the exporter renamed (``onnx::Conv_57``), when
    the layer reading it sits in a named module scope (``layer1.0.conv1`` -> its ``weight``)."""
    if mapped is None or not is_generated_name(source) or parameter not in _TORCH_PARAMETER_NAMES:
        return ""
    path = module_path(mapped.node)
    if not path:
        return ""
    return _placeholder_parameter(mapped.node, path, parameter) or (
        f"{path}.{_TORCH_PARAMETER_NAMES[parameter]}"
    )


# a parameter the dynamo exporter's FX graph reads (``%p_attn_q_proj_weight``)
_FX_PARAMETER = re.compile(r"%p_(\w+)")


def _fx_parameters(node, path: str) -> set[str]:
    """The parameters of the module at ``path`` (``""``: the model itself) the dynamo
    export's FX node of ``node`` names, relative to that module (``%p_attn_q_proj_weight``
    -> ``q_proj_weight`` for ``attn``)."""
    fx_node = node.metadata.get("pkg.torch.onnx.fx_node", "")
    prefix = path.replace(".", "_") + "_" if path else ""
    return {p[len(prefix) :] for p in _FX_PARAMETER.findall(fx_node) if p.startswith(prefix)}


def _placeholder_parameter(node, path: str, parameter: str) -> str:
    """A parameter the module at ``path`` holds itself and passes to a functional call
    (nn.MultiheadAttention's ``q_proj_weight`` in ``F.linear``), as the dynamo export's FX node
    names it; "" when it names none or several."""
    kind = _TORCH_PARAMETER_NAMES[parameter]
    found = {name for name in _fx_parameters(node, path) if name.endswith(f"_{kind}")}
    return f"{path}.{found.pop()}" if len(found) == 1 else ""


# ONNX operators the dynamo exporter gives a parameter as it is when the aten call they write
# takes it (``repeat`` -> Tile, ``mul`` -> Mul, ``cat`` -> Concat, ``embedding`` -> Gather)
_READS_PARAMETER_AS_IS = {"Tile", "Expand", "Concat", "Add", "Sub", "Mul", "Div", "Gather"}


def _renamed_parameter(graph, mapped: MappedNode, name: str) -> str:
    """The source name of constant ``name`` when it is a parameter the dynamo exporter renamed
    (``val_167``) and the one float table its node reads: the one parameter of the node's
    module its FX node names (``%p_model_head_probe`` -> ``model.head.probe``); else ""."""

    def is_table(value: str) -> bool:
        array = graph.constants.get(value)
        return array is not None and array.dtype.kind == "f" and array.size > 1

    if not is_generated_name(name) or mapped.node.op_type not in _READS_PARAMETER_AS_IS:
        return ""  # aten.linear's MatMul reads the parameter transposed (folded into val_N)
    if [value for value in mapped.node.inputs if is_table(value)] != [name]:
        return ""
    path = module_path(mapped.node)  # "": a parameter of the model itself
    found = _fx_parameters(mapped.node, path)
    if len(found) != 1:
        return ""
    source = ".".join(filter(None, (path, found.pop())))
    known = {init.replace(".", "_") for init in graph.source_parameters}
    return "" if source.replace(".", "_") in known else source


def with_exporter_note(weight: Weight, mapped: MappedNode) -> Weight:
    """Record rewrites the exporter applied to a layer (dynamo's BatchNorm folding) in the weight map."""
    rules = mapped.node.metadata.get("pkg.onnxscript.rewriter.rule_name", "")
    if "FuseBatchNormIntoConv" in rules:
        note = "BatchNorm folded into the convolution by the exporter"
    elif is_generated_name(weight.source) and mapped.node.op_type in ("Conv", "ConvTranspose"):
        note = "computed by the exporter (an eval-mode TorchScript export folds BatchNorm into the convolution before it)"
    else:
        return weight
    transform = "; ".join(filter(None, [weight.transform, note]))
    steps = (*weight.steps, BatchNormFold("", note=note)) if weight.steps else ()
    return Weight(weight.array, weight.source, transform, steps)


_MERGEABLE = ("bias", "gamma", "beta")  # never truly tied in practice, unlike weight matrices


def with_own_scope_weights(cell: Cell, mapped: MappedNode) -> Cell:
    """A dynamo export's optimizer reads equal initializers (the zero biases and unit LayerNorm
    weights of a fresh model) from one of them: a layer's bias, gamma or beta whose source
    belongs to another module than the layer's own scope becomes its own module's parameter."""
    metadata = mapped.node.metadata
    # a node the optimizer fused (BatchNorm into a convolution) carries the other layer's scope
    fused = "Fuse" in metadata.get("pkg.onnxscript.rewriter.rule_name", "")
    path = module_path(mapped.node) if "pkg.torch.onnx.name_scopes" in metadata else ""
    path = "" if fused else path
    renamed = {}
    for name, weight in cell.weights.items() if path else ():
        owner = weight.source.rpartition(".")[0]
        if (
            name in _MERGEABLE
            and owner
            and owner != path
            and not weight.source.startswith(path + ".")
            and not is_generated_name(weight.source)
        ):
            source = f"{path}.{_TORCH_PARAMETER_NAMES[name]}"
            renamed[name] = replace(weight, source=source)
    return replace(cell, weights={**cell.weights, **renamed}) if renamed else cell


def typed_steps(weight: Weight, name: str, mapped: MappedNode | None) -> tuple:
    """The typed steps of a weight's transform (as the mapper recorded them, else read from
    its prose); a BatchNorm fold says which part of the convolution it is and, when a dynamo
    export records them, the BatchNorm and its epsilon."""
    steps = list(weight.steps) or parse_steps(weight.transform)
    for index, step in enumerate(steps):
        if isinstance(step, BatchNormFold):
            prefix, eps = folded_batchnorm(mapped.node) if mapped is not None else ("", None)
            part = name.rsplit(".", 1)[-1]
            steps[index] = replace(step, part=part, batchnorm=prefix, eps=eps)
    return tuple(steps)


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
                return self.constant_input(name, mapped)
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
            read = shape_read(value, mapped)
            named = read and named_size(self.state.graph, self.scope, *read)
            if named:
                return named
            picked = picked_size(self.scope, value, mapped)
            if picked is not None:
                return picked
            index = value.index
            index_text = (
                ", ".join(self.index_part(i, mapped) for i in index)
                if isinstance(index, tuple) and index
                else self.index_part(index, mapped)
            )
            return f"{self.expr(value.value, mapped, 9)}[{index_text}]"
        if isinstance(value, Method):
            args = ", ".join(self.expr(a, mapped) for a in value.args)
            return f"{self.expr(value.value, mapped, 9)}.{value.name}({args})"
        if isinstance(value, Cell):
            return self.cell(value, mapped)
        if isinstance(value, Ternary):
            body = self.expr(value.body, mapped, 1)
            test = self.expr(value.test, mapped, 1)
            text = f"{body} if {test} else {self.expr(value.orelse, mapped, 0)}"
            return f"({text})" if parent_prec > 0 else text
        if isinstance(value, Param):
            return self.param(value, mapped)
        if isinstance(value, Const):
            return self.const(value.array, value.source, mapped)
        if isinstance(value, Temp):
            return self.temp(value, mapped)
        if isinstance(value, Noted):
            note = comment_text(value.note)
            if note not in self.scope.notes:
                self.scope.notes.append(note)
            return self.expr(value.expr, mapped, parent_prec)
        if isinstance(value, (list, tuple)):
            inner = ", ".join(self.expr(v, mapped) for v in value)
            if isinstance(value, list):
                return f"[{inner}]"
            text = f"({inner},)" if len(value) == 1 else f"({inner})"
            return named_sizes_tuple(self.scope, text) or text
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
            if temp.comment:
                self.scope.cls.body.append(f"# {temp.comment}")
            self.statement_line(f"{name} = {text}")
            self.scope.temps[key] = (temp, name)  # holding the object keeps its id unique
        return self.scope.temps[key][1]

    def statement_line(self, line: str) -> None:
        """Append a ``construct`` line, below the comments its expressions carry."""
        line = hoist_long_sizes(self.scope, line, CONSTRUCT_WIDTH)
        body = self.scope.cls.body
        body.extend(f"# {note}" for note in self.scope.notes if f"# {note}" not in body)
        self.scope.notes.clear()
        self.scope.cls.body.append(line)

    def note_literal(self, value: Any) -> None:
        if isinstance(value, (float, np.floating)) and not math.isfinite(float(value)):
            self.state.uses.add("math")
        elif isinstance(value, (list, tuple)):
            for item in value:
                self.note_literal(item)

    def call(self, call: Call, mapped: MappedNode) -> str:
        self.state.uses.add(call.func.split(".", 1)[0])
        self.state.uses.update(HELPER_FUNCTIONS.get(call.func, ()))
        if call.func == "apply_rotary_pos_emb" and "unsqueeze_dim" in call.kwargs:
            self.state.uses.add("apply_rotary_pos_emb_unsqueezed")  # the helper's other form
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
        # a body cell's weights are named inside the body: only the node's scope names it
        hint = "" if cell.definition else _weight_hint(cell.weights)
        path = (
            hint
            or _packed_hint(cell.weights, mapped)
            or _placeholder_hint(cell.weights, mapped)
            or _module_path_hint(mapped)
        )
        scope = _module_path_hint(mapped)
        if scope and not path.startswith(scope + ".") and _runs_elsewhere(self.state, path, scope):
            # the weight's module runs nodes of its own, so this layer only reads its weight
            # (a tied embedding and lm_head; one of several identical tensors the exporter
            # kept, Qwen3's q_norm and k_norm at their initial ones): the node's own module
            # names it. A module without nodes was folded into this one (a dynamo Conv filed
            # under the BatchNorm it absorbed), and a node of a parent ran it (F.linear).
            path = scope
        block = self.scope.prefix_path
        if block and path == block:
            # the block's own scope (a dropout HF's attention applies itself, in a TorchScript
            # export): the block's name would read ``self.self``; the layer's role names it
            return ""
        if block and path.startswith(block + "."):
            relative = path[len(block) + 1 :]
            # a layer of a list's item computed before the list (T5's relative position table,
            # recover_hierarchy hoists it) is named by its own name
            if _crosses_list_item(relative) and relative.split(".", 1)[0] in self.scope.lists:
                return relative.rsplit(".", 1)[-1]
            return relative
        return path.rsplit(".", 1)[-1] if block else path

    def cell(self, cell: Cell, mapped: MappedNode) -> str:
        cell = with_own_scope_weights(cell, mapped)
        cell = with_weight_dtype(cell)
        content = layer_content(cell, self.state.content_keys)
        attr = same_layer(content, self.scope.cells_by_content) if content else None
        if attr is None:  # else the same layer applied again: called again
            attr = self.define_layer(cell, mapped)
            if content is not None:
                self.scope.cells_by_content.append((content, attr))
        args = [self.expr(a, mapped) for a in cell.args]
        args += [f"{k}={self.expr(v, mapped)}" for k, v in cell.call_kwargs.items()]
        return f"self.{attr}({', '.join(args)})"

    def define_layer(self, cell: Cell, mapped: MappedNode) -> str:
        """``self.<attr> = <cell>`` in ``__init__`` with its checkpoint entries; the attribute."""
        fallback = cell.role or _ROLE_BY_OP.get(
            mapped.node.op_type, identifier(mapped.node.op_type)
        )
        attr = self.attribute_name(self.leaf_name(mapped, cell), fallback)
        if cell.definition:
            cell = define_body_class(self.state, cell)
        if cell.cls in HELPER_CELLS:  # a cell the script defines itself (see helpers/)
            self.state.uses.update({cell.cls, *HELPER_CELLS[cell.cls]})
        self.scope.cls.init_lines.append([f"self.{attr} = "] + self.cell_ctor(cell, attr))
        for param_name, weight in cell.weights.items():
            key = self.state.content_keys.key(weight.array) if cell.cls in TIEABLE_CELLS else None
            holder = f"self.{attr}.{param_name}"
            held = self.held_weight(key, weight.source, holder) if key else None
            if held is not None:  # tied: the layer shares the Parameter of an earlier one
                if held != holder:
                    self.scope.cls.init_lines.append([f"{holder} = {held}"])
                continue
            self.add_entry(f"{attr}.{param_name}", with_exporter_note(weight, mapped), mapped)
        return attr

    def param(self, param: Param, mapped: MappedNode | None) -> str:
        source = param.weight.source
        hint = ""
        # a module's parameter or buffer (``embeddings.position_ids``) names the attribute; a
        # value the exporter computed and named (``unsqueeze_14``, ``/layer/Add_output_0``) does not
        if source and not source.startswith("onnx::") and not _exporter_value_name(source):
            hint = _relative_to(self.scope.prefix_path, source).replace(".", "_")
        param = replace(param, weight=widened_weight(param.weight))
        array = param.weight.array
        trainable = param.trainable and is_floating(array.dtype)
        key = self.state.content_keys.key(array) if trainable else None
        held = self.held_weight(key, param.weight.source, None) if key else None
        if held is not None:
            return held
        attr = self.attribute_name(hint, param.role or "weight")
        # tied to a Parameter of another block: __init__ shares it, the checkpoint holds it once
        tied_elsewhere = key is not None and self.held_weight(
            key, param.weight.source, f"self.{attr}"
        )
        self.state.uses.update({"ms", "ops", "Parameter"})
        grad = "" if trainable else ", requires_grad=False"
        dtype = ms_dtype_name(array.dtype)
        # each size is a literal the class may take as an argument (a layer scale per stage)
        parts: list = [f"self.{attr} = Parameter(ops.zeros(("]
        for index, size in enumerate(array.shape):
            parts += [", " if index else "", self.scope.cls.slot("size", attr, str(int(size)))]
        parts.append(f"{',' if array.ndim == 1 else ''}), ms.{dtype}){grad})")
        self.scope.cls.init_lines.append(parts)
        if not tied_elsewhere:
            self.add_entry(attr, param.weight)
        return f"self.{attr}"

    def held_weight(self, key: tuple, source: str, holder: str | None) -> str | None:
        """The attribute already holding the tensor ``key`` identifies (a tied weight: the same
        source tensor, or a copy the exporter made under a generated name), else None. With a
        ``holder``, it is recorded as holding it from now on; a holder in another block than
        the first is tied to it by the network's ``__init__`` (the holder itself comes back)."""

        def same(other: str) -> bool:
            return other == source or is_generated_name(source)

        held = self.scope.held_weights.get(key)
        if held is not None and same(held[0]):
            return held[1]
        if holder is None:
            return None
        path = self.scope.prefix + holder[len("self.") :]
        elsewhere = self.state.held_paths.get(key)
        if elsewhere is not None and same(elsewhere[0]):
            self.state.ties.append((path, elsewhere[1]))
            self.scope.held_weights.setdefault(key, (source, holder))  # held here from now on
            return holder
        self.scope.held_weights.setdefault(key, (source, holder))
        self.state.held_paths.setdefault(key, (source, path))
        return None

    def constant_input(self, name: str, mapped: MappedNode) -> str:
        """A constant the mapper reads as it is: the source's parameter when it is one (kept
        whole and trainable, e.g. a position table sliced in the network), else a constant."""
        array = self.state.graph.constants[name]
        node = mapped.node
        tables = {"ApplyRotary": 1, "ApplyRotaryPair": 2}.get(node.op_type)
        if tables and name in node.inputs[tables : tables + 2] and array.size > 1:
            # rotary tables of a static export, folded to constants
            if name not in self.scope.held_constants:
                role = "cos" if node.inputs.index(name) == tables else "sin"
                frozen = Param(Weight(array, ""), role=role, trainable=False)
                self.scope.held_constants[name] = self.param(frozen, mapped)
            return self.scope.held_constants[name]
        source = learned_source(self.state.graph, name)
        if source is not None and array.size > 1:
            record = self.state.graph.fold_records.get(name)
            steps = "; ".join(record.steps) if record is not None else ""
            return self.param(Param(Weight(array, source, steps), role="weight"), mapped)
        return self.const(array, name, mapped)

    def const(self, array: np.ndarray, source: str, mapped: MappedNode | None) -> str:
        """A constant: an inline ``ms.Tensor`` literal when small, else a frozen parameter
        (a mask table always: a nested literal of a static export's mask reads as noise)."""
        array = np.asarray(array)
        renamed = _renamed_parameter(self.state.graph, mapped, source) if mapped else ""
        if renamed:  # a parameter the dynamo exporter renamed (SigLIP's probe: val_167)
            return self.param(Param(Weight(array, renamed), role="weight"), mapped)
        role = constant_role(array, source, mapped.node if mapped is not None else None)
        is_table = role in ("causal_mask", "mask") and array.ndim >= 2
        small = array.size <= INLINE_CONST_LIMIT and widened(array).dtype.kind in "biuf"
        if small and not is_table:
            self.state.uses.add("ms")
            array = widened(array)
            values = array.tolist()
            self.note_literal(values)
            return f"ms.Tensor({literal(values)}, ms.{ms_dtype_name(array.dtype)})"
        return self.param(Param(Weight(array, source), role=role, trainable=False), mapped)

    def add_entry(self, name: str, weight: Weight, mapped: MappedNode | None = None) -> None:
        source_init = self.state.graph.constants.get(weight.source)
        recovered = recovered_source_name(weight.source, mapped, name.rsplit(".", 1)[-1])
        self.state.entries.append(
            CheckpointEntry(
                name=self.scope.prefix + name,
                array=weight.array,
                source=recovered or weight.source,
                exported_as=weight.source if recovered else "",
                transform=weight.transform,
                steps=typed_steps(weight, name, mapped),
                source_shape=tuple(source_init.shape)
                if source_init is not None
                else tuple(weight.array.shape),
                source_dtype=str(
                    source_init.dtype if source_init is not None else weight.array.dtype
                ),
            )
        )


def define_body_class(state: RenderState, cell: Cell) -> Cell:
    """Give a converted body's classes names no other class has (every class of the text
    starts with ``cell.cls``); the script defines them once."""
    taken = set(state.body_classes)
    stem, count = cell.cls, 1
    while any(name == stem or name.startswith(stem) for name in taken):
        count += 1
        stem = f"{cell.cls}{count}"
    text = re.sub(rf"\b{re.escape(cell.cls)}(\w*)", lambda m: stem + m.group(1), cell.definition)
    for name in re.findall(r"^class (\w+)\(", text, re.M):
        state.body_classes[name] = ""
    state.body_classes[stem] = text
    state.uses.update(cell.uses)
    return replace(cell, cls=stem, definition="")
