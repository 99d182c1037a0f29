"""Dynamic sizes read once at the top of ``construct``, as people write them.

``ops.shape(hidden_states)[0]`` written at every use reads as noise. When a block reads a
dynamic dimension that one of its inputs has, the input's dimensions are unpacked once, first
thing: ``batch, sequence, _ = hidden_states.shape``, and every read of that dimension (from any
tensor symbolic shape inference gave the same symbol) is the name. The line reads the inputs
before any statement can overwrite their variables, so the names are right wherever they are
used.

Names come from the axis: ``batch_size`` for the first, ``seq_len`` for a
``(batch, sequence[, features])`` input, ``height, width`` for an image's two spatial axes,
``<input>_len`` for a cache's one length, ``<input>_dim<axis>`` otherwise; the network's own
``construct`` uses the export's dimension names when they are plain words (``batch``,
``sequence_length``; never code: only letters and underscores survive).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..graph import Graph
from ..mappers.base import Call, Input, Item, MappedNode
from .scope import BlockScope

# exporter-made dimension names: onnx's unk__3, onnxruntime's LayerNormalizationout_dim_1,
# dynamo's s0 (digits), single letters
_PLAIN_WORD = re.compile(r"[A-Za-z][A-Za-z_]{2,40}")
_MADE_UP = re.compile(r"unk|out_?dim|dynamic_ax", re.IGNORECASE)
ASSIGNMENT = re.compile(r"([A-Za-z_]\w*) = (.*)")  # ``name = expression``


def shape_read(value: Any, mapped: MappedNode) -> tuple[str, int] | None:
    """``(tensor, axis)`` when ``value`` is ``ops.shape(tensor)[axis]``, else None."""
    if not isinstance(value, Item) or isinstance(value.index, (tuple, slice)):
        return None
    call = value.value
    if not (
        isinstance(call, Call)
        and call.func == "ops.shape"
        and len(call.args) == 1
        and not call.kwargs
        and isinstance(call.args[0], Input)
    ):
        return None
    try:
        axis = int(value.index)
    except TypeError:
        return None
    return mapped.node.inputs[call.args[0].index], axis


def named_size(graph: Graph, scope: BlockScope, tensor: str, axis: int) -> str | None:
    """The variable holding dimension ``axis`` of ``tensor``, unpacking an input of the block
    at the top of ``construct`` the first time one of its dimensions is needed; None when no
    input of the block has that dimension."""
    symbol = _symbol(graph, tensor, axis)
    if symbol is None:
        return None
    if symbol in scope.size_names:
        return scope.size_names[symbol]
    source = _input_with(graph, scope, tensor, symbol)
    if source is None:
        return None
    shape = graph.symbolic_shapes[source]
    var = scope.var_of[source]
    targets = []
    for index, dim in enumerate(shape):
        if isinstance(dim, str) and dim not in scope.size_names:
            hint = _size_hint(dim, index, shape, var, scope.is_root)
            scope.size_names[dim] = scope.cls.variables.claim(hint, "size")
            targets.append(scope.size_names[dim])
        else:
            targets.append("_")
    line = (
        f"{targets[0]} = {var}.shape[0]"
        if len(targets) == 1
        else f"{', '.join(targets)} = {var}.shape"
    )
    scope.cls.body.insert(scope.size_lines, line)
    scope.size_lines += 1
    return scope.size_names[symbol]


def named_sizes_tuple(scope: BlockScope, text: str) -> str | None:
    """The variable already holding the sizes tuple ``text`` in this block, if any."""
    value = scope.size_texts.get(text)
    name = scope.var_of.get(value, "") if value is not None else ""
    return name if name.isidentifier() else None


def picked_size(scope: BlockScope, item: Item, mapped: MappedNode) -> str | None:
    """``batch`` for item 0 of a sizes tuple, not ``(batch, 1)[0]`` or ``shape[0]``."""
    if not isinstance(item.value, Input) or not isinstance(item.index, (int, np.integer)):
        return None
    parts = scope.size_parts.get(mapped.node.inputs[item.value.index])
    if not parts or not -len(parts) <= int(item.index) < len(parts):
        return None
    part = parts[int(item.index)]
    if not part:
        return None  # not a name: read from the tuple
    return part if part.isidentifier() or part.isdigit() else f"({part})"


def hoist_long_sizes(scope: BlockScope, line: str, width: int) -> str:
    """A sizes tuple written inline goes back to its own ``shape = (...)`` line when the line
    reading it is longer than ``width`` (the formatter would wrap it)."""
    for value in scope.size_parts:
        if len(line) <= width:
            break
        text = scope.var_of.get(value, "")
        if text.startswith("(") and text in line:
            name = scope.cls.variables.claim("shape", "x")
            scope.cls.body.append(f"{name} = {text}")
            scope.var_of[value] = name
            line = line.replace(text, name)
    return line


def drop_size_only_values(scope: BlockScope, returns: list[str]) -> None:
    """Remove assignments nothing reads any more: a value computed only so that its sizes could
    be read (``out = x[:, :, 31]`` for ``ops.shape(out)[0]``) is dead once the sizes are names.
    Only top-level lines of operator calls go (never a layer call, never a returned name)."""
    body = scope.cls.body
    changed = True
    while changed:
        changed = False
        for index in range(len(body) - 1, scope.size_lines - 1, -1):
            match = ASSIGNMENT.fullmatch(body[index])
            if match is None or "self." in match.group(2):
                continue
            name = match.group(1)
            if any(re.search(rf"\b{name}\b", line) for line in [*body[index + 1 :], *returns]):
                continue  # read later, or returned (``return x, hidden_states[0]``)
            del body[index]
            while index > scope.size_lines and body[index - 1].startswith("#"):
                del body[index - 1]  # its comment goes with it
                index -= 1
            changed = True


def drop_unused_sizes(scope: BlockScope) -> None:
    """Unpacked sizes nothing reads become ``_``; a line left with none goes."""
    body = scope.cls.body
    rest = "\n".join(body[scope.size_lines :])
    kept = []
    for line in body[: scope.size_lines]:
        targets, source = line.split(" = ", 1)
        names = [
            name if name != "_" and re.search(rf"\b{name}\b", rest) else "_"
            for name in targets.split(", ")
        ]
        used = [i for i, name in enumerate(names) if name != "_"]
        if len(used) == 1 and source.endswith(".shape"):
            kept.append(f"{names[used[0]]} = {source}[{used[0]}]")  # one size: no unpacking
        elif used:
            kept.append(f"{', '.join(names)} = {source}")
    body[: scope.size_lines] = kept
    scope.size_lines = len(kept)


def _symbol(graph: Graph, tensor: str, axis: int) -> str | None:
    shape = graph.symbolic_shapes.get(tensor)
    if shape is None or not -len(shape) <= axis < len(shape):
        return None
    dim = shape[axis]
    return dim if isinstance(dim, str) and dim else None


def _input_with(graph: Graph, scope: BlockScope, tensor: str, symbol: str) -> str | None:
    """The block input to unpack for ``symbol``: ``tensor`` itself when it is one, else the
    first input having that dimension."""
    candidates = [tensor] + [name for name in scope.params if name != tensor]
    for name in candidates:
        if name in scope.params and name in scope.var_of:
            shape = graph.symbolic_shapes.get(name)
            if shape and symbol in shape:
                return name
    return None


def _size_hint(dim: str, axis: int, shape: tuple, var: str, is_root: bool) -> str:
    """The network's own ``construct`` uses the export's dimension names; a block's names come
    from the axis alone, so that every instance of a module (whose inputs shape inference may
    give other symbols) reads the same and shares one class."""
    if is_root and _PLAIN_WORD.fullmatch(dim) and not _MADE_UP.search(dim):
        return dim
    dynamic = [i for i, d in enumerate(shape) if isinstance(d, str)]
    if axis == 0:
        return "batch_size"
    if len(shape) in (2, 3) and axis == 1:
        return "seq_len"
    if len(shape) == 4 and axis in (2, 3) and dynamic[-2:] == [2, 3]:
        return ("height", "width")[axis - 2]
    if dynamic == [0, axis]:
        return f"{var}_len"  # the one length of a cache (batch, heads, past, head_dim)
    return f"{var}_dim{axis}"
