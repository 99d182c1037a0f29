"""The whole script: the module tree rendered block by block, classes merged, the template
filled and formatted. :func:`render_script` is what code generation offers the pipeline."""

from __future__ import annotations

import re

import numpy as np

from ..graph import Graph
from ..graph.container_types import container_dtype
from ..graph.module_tree import Block
from ..mappers.base import MappedNode, ms_dtype_name
from ..ruff_format import ruff_format
from ..templating import render_template
from ..version import __version__
from .blocks import BlockWriter
from .chains import fold_head_reshapes
from .classes import join, merge_classes, signature, unique
from .expressions import ExpressionWriter
from .helpers import HelperSources
from .naming import comment_text
from .rendered import RenderedModel, UnconvertedSite
from .returns import inline_returned_call
from .scope import RenderState
from .single_sizes import unpack_single_sizes
from .statements import StatementWriter
from .tidy import tidy_expressions

# ruff's default, so ``ruff format --check`` passes on the script wherever it is saved
LINE_LENGTH = 88


def render_script(
    graph: Graph, mapped: list[MappedNode], tree: Block, model_name: str
) -> RenderedModel:
    """Render the MindSpore script for the mapped graph and its recovered module tree."""
    # the tree holds nodes passes rewired (new objects) besides the mapped ones
    tidy_expressions(graph, list({id(m): m for m in [*mapped, *tree.nodes()]}.values()))
    unpack_single_sizes(graph, tree.nodes())
    inlined = fold_head_reshapes(graph, tree)
    state = RenderState(graph, mapped, inlined=inlined)
    exprs = ExpressionWriter(state)
    blocks = BlockWriter(state, exprs, StatementWriter(state, exprs))
    top = blocks.render_block(tree, prefix="", is_root=True)
    classes = merge_classes(state.instances, taken=set(state.body_classes))
    root_init = [join(line, top.builder, {}, classes) for line in top.builder.init_lines]
    root_init += [f"self.{_path_expr(dst)} = self.{_path_expr(src)}" for dst, src in state.ties]
    code = fill_template(
        state, model_name, top.args, top.returns, classes, root_init, top.builder.body
    )
    code = format_code(code)
    locate_unconverted(code, state.unconverted)
    return RenderedModel(code, state.entries, state.unconverted, top.args, top.returns)


# The header line that tells how to load the weights (see templates/model.py.j2).
_CKPT_LOAD_LINE = 'ms.load_checkpoint("<this script\'s stem>.ckpt")'


def load_from_safetensors(code: str) -> str:
    """The script with its header telling to load ``<stem>.safetensors`` (checkpoints over 2 GB)."""
    return code.replace(
        _CKPT_LOAD_LINE,
        'ms.load_checkpoint("<this script\'s stem>.safetensors", format="safetensors")',
        1,
    )


def _path_expr(path: str) -> str:
    """An attribute path (``h.0.attn.weight``) as Python (``h[0].attn.weight``)."""
    parts: list[str] = []
    for part in path.split("."):
        if part.isdigit() and parts:
            parts[-1] += f"[{part}]"
        else:
            parts.append(part)
    return ".".join(parts)


def fill_template(
    state: RenderState,
    model_name: str,
    input_vars: list[str],
    returns: list[str],
    classes: dict,
    init_lines: list[str],
    body: list[str],
) -> str:
    """The script text from the template (before formatting)."""
    graph = state.graph
    inputs_doc = [_value_doc(graph, name, var) for name, var in zip(graph.inputs, input_vars)]
    outputs_doc = [_value_doc(graph, name, var) for name, var in zip(graph.outputs, returns)]
    dynamic_inputs = _dynamic_input_declarations(graph)
    if dynamic_inputs:
        state.uses.add("ms")
    return render_template(
        "mindconverter.codegen",
        "model.py.j2",
        version=__version__,
        model_name=comment_text(model_name),
        producer=comment_text(state.graph.producer or "unknown"),
        opset=state.graph.opset,
        inputs_doc=inputs_doc,
        outputs_doc=outputs_doc,
        uses=state.uses,
        has_weights=bool(state.entries),
        init_lines=init_lines,
        body=body,
        classes=[
            dict(
                name=c["name"],
                doc=c["doc"],
                params=signature(c),
                init=c["init"],
                args=", ".join(["self"] + c["args"]),
                body=c["body"],
                returns=", ".join(c["returns"]),
            )
            for c in map(_ending_in_its_return, unique(classes))
        ],
        args=", ".join(["self"] + input_vars),
        returns=", ".join(returns),
        unconverted=bool(state.unconverted),
        dynamic_inputs=dynamic_inputs,
        body_classes=[text for text in state.body_classes.values() if text],
        helpers=HelperSources(),
    )


def _ending_in_its_return(info: dict) -> dict:
    """A class whose last layer call is written in its ``return`` (see returns.py)."""
    body = list(info["body"])
    returns = inline_returned_call(body, info["returns"])
    return {**info, "body": body, "returns": returns}


def locate_unconverted(code: str, sites: list[UnconvertedSite]) -> None:
    """Record the line and column of each placeholder call in ``construct``."""
    lines = code.splitlines()
    start = next((i for i, line in enumerate(lines) if "def construct(" in line), 0)
    for site in sites:
        needle = f"self.{site.attribute}("
        for number in range(start, len(lines)):
            column = lines[number].find(needle)
            if column >= 0:
                site.line, site.column = number + 1, column
                break


def format_code(code: str) -> str:
    """Format with ruff (a dependency); unchanged when ruff cannot run."""
    return ruff_format(code, LINE_LENGTH) or code


def _dynamic_input_declarations(graph) -> list[str]:
    """``ms.Tensor(shape=[None, 3, 224, 224], dtype=ms.float32)`` per input, when any dimension
    of the network stays dynamic."""
    if not graph.dynamic_dims:
        return []
    declarations = []
    for name in graph.inputs:
        dims = graph.symbolic_shapes.get(name, ())
        shape = ", ".join("None" if isinstance(d, str) else str(d) for d in dims)
        dtype = ms_dtype_name(graph.dtypes.get(name, np.dtype(np.float32)))
        declarations.append(f"ms.Tensor(shape=[{shape}], dtype=ms.{dtype})")
    return declarations


def _value_doc(graph, name: str, var: str) -> str:
    """``x: float32[batch, 3, 224, 224]`` for the docstring and header (``?`` where unknown)."""
    dtype = graph.dtypes.get(name)
    shape = graph.shapes.get(name) or graph.symbolic_shapes.get(name)
    dims = _dims_text(shape) if shape is not None else "?"
    text = f"{var}: {ms_dtype_name(dtype) if dtype is not None else '?'}[{dims}]"
    if dtype is not None and container_dtype(dtype) is not None:
        text += f" ({np.dtype(dtype).name} values, held exactly)"
    return text


def _dims_text(shape: tuple) -> str:
    """``1, 3, 224, 224`` or ``batch, seq, 32``; dimension names keep only characters that are
    safe in a comment or docstring (they come from the model file)."""
    return ", ".join(str(dim) if isinstance(dim, int) else _dim_text(str(dim)) for dim in shape)


# floor(a/b), where a holds at most one level of parentheses and no division of its own and
# b is a number or a name
# (inner floors come first); floor(a/n - m/n), a convolution's length, is (a - m) // n
_FLOOR_DIVISION = re.compile(r"floor\(((?:[^()/]|\([^()]*\))*)/(\w+)\)")
_FLOOR_OFFSET = re.compile(r"floor\(((?:[^()/]|\([^()]*\))*)/(\d+) ([-+]) (\d+)/\2\)")


# names shape inference or an exporter made up for a size nothing names (``unk__3``,
# ``LayerNormalizationlast_hidden_state_dim_1``): shown as ``?``, a size known at run time
_MADE_UP_DIM = re.compile(r"unk__\d+|\w*_dim_\d+|\w*out_?dim\w*", re.IGNORECASE)


def _dim_text(dim: str) -> str:
    """A named or derived size as Python reads it: symbolic inference writes ``floor(h/7)``,
    shown as ``(h // 7)``; rewritten as text, never evaluated."""
    if _MADE_UP_DIM.fullmatch(dim):
        return "?"
    text = dim[:200]
    for _ in range(8):  # innermost floor first
        changed = re.sub(_FLOOR_OFFSET, r"((\1 \3 \4) // \2)", text)
        changed = re.sub(_FLOOR_DIVISION, r"(\1 // \2)", changed)
        if changed == text:
            break
        text = changed
    return re.sub(r"[^A-Za-z0-9_+*/() -]", "_", text)[:60]
