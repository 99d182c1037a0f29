"""Control flow: If, Loop and Scan decided at run time become Python control flow in cells.

The preprocessing inlines an ``If`` whose condition is a constant and unrolls Loops and Scans
whose iteration count is known (within a budget), so these mappers see the rest. Each body is
converted into a cell class of its own (mindconverter/conversion/bodies.py) that takes the body's formal
inputs and then the outer values it reads. An If becomes ``then(...) if cond else other(...)``;
a Loop or Scan becomes a small cell whose ``construct`` runs the body in a ``while``/``for``.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import TensorProto, helper

from ..graph.body_models import body_model, declared_dims
from ..graph.example_run import fails_to_run
from .base import Cell, Input, NodeContext, Ternary, Unpack, Unsupported
from .registry import mapper


def body_cell(
    ctx: NodeContext, attr: str, name: str, formal_types, formal_args, doc: str = ""
) -> Cell:
    """The body graph ``attr`` as a cell ``name`` called with ``formal_args`` then its outer
    values; ``doc`` starts its docstring (a standard one for If/Loop/Scan bodies)."""
    body = ctx.attr(attr)
    try:
        model = body_model(body, ctx.graph, formal_types, name)
    except ValueError as exc:
        raise Unsupported(f"{ctx.node.op_type} body: {exc}") from None
    if ctx.convert_body is None:
        raise Unsupported("control-flow bodies cannot be converted here")
    converted = ctx.convert_body(model, name, doc or _BODY_DOCS[name])
    return Cell(
        name,
        {},
        list(formal_args) + [_read_outer(ctx, value) for value in model.captured],
        weights=dict(converted.weights),
        role=_snake(name),
        definition=converted.definition,
        uses=converted.uses | {"ms"},
    )


_BODY_DOCS = {
    "ThenBranch": "What the If computes when its condition holds.",
    "ElseBranch": "What the If computes when its condition does not hold.",
    "LoopBody": "One step of the Loop: (step, condition, carried values, outer values) -> "
    "(condition, carried values, values of this step).",
    "ScanBody": "One step of the Scan: (states, slices, outer values) -> (states, values of "
    "this slice).",
}


def _read_outer(ctx: NodeContext, name: str) -> Input:
    """The outer value ``name`` that a body reads, made an extra input of the node (for the
    renderer: it is passed to the body's cell)."""
    ctx.node.inputs.append(name)
    return Input(len(ctx.node.inputs) - 1)


def _nested(weights: dict, attribute: str) -> dict:
    return {f"{attribute}.{path}": weight for path, weight in weights.items()}


def _docstring(text: str) -> str:
    """A class docstring line (wrapped at 96 columns, indented for a class body)."""
    return textwrap.fill(f'"""{text}"""', width=96, initial_indent="    ", subsequent_indent="    ")


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _value_type(ctx: NodeContext, index: int) -> tuple[int, list | None]:
    """The ONNX element type and symbolic dims of input ``index``."""
    name = ctx.node.inputs[index]
    dtype = ctx.graph.dtypes.get(name)
    if dtype is None:
        raise Unsupported(f"{ctx.node.op_type}: the type of '{name}' is unknown")
    dims = ctx.graph.symbolic_shapes.get(name)
    return helper.np_dtype_to_tensor_dtype(dtype), list(dims) if dims is not None else None


def _results(ctx: NodeContext, expr, count: int):
    return expr if count == 1 else Unpack(expr, count)


@mapper("If")
def if_(ctx: NodeContext):
    """If decided at run time -> ``self.then_branch(...) if cond else self.else_branch(...)``."""
    if ctx.is_const(0):
        raise Unsupported(
            "If with a constant condition that the preprocessing could not inline "
            "(onnxoptimizer's eliminate_if_with_const_cond rejected the model)"
        )
    then_cell = _branch_cell(ctx, "then_branch", "ThenBranch")
    else_cell = _branch_cell(ctx, "else_branch", "ElseBranch")
    return _results(ctx, Ternary(Input(0), then_cell, else_cell), ctx.num_outputs)


def _branch_cell(ctx: NodeContext, attr: str, name: str) -> Cell:
    """The branch ``attr`` as a cell; a branch that does not convert because the source model
    itself cannot run it at the conversion sizes becomes a cell that raises, as the source does
    there (Silero VAD's 8 kHz branch converted at a 16 kHz chunk size)."""
    try:
        return body_cell(ctx, attr, name, [], [])
    except Unsupported:
        if not _source_cannot_run(ctx, attr, name):
            raise
    outputs = [_zeros_like_output(ctx, index) for index in range(ctx.num_outputs)]
    definition = _raising_branch(name, outputs)
    return Cell(name, {}, [Input(0)], role=_snake(name), definition=definition)


def _zeros_like_output(ctx: NodeContext, index: int) -> str:
    """``ops.zeros`` of the If output's dtype and rank (its sizes all 1)."""
    dtype = ctx.output_dtype(index)
    shape = ctx.output_shape(index)
    if dtype is None or shape is None:
        raise Unsupported("an If branch that cannot run, with an output of unknown type")
    name = "bool_" if np.dtype(dtype) == np.bool_ else np.dtype(dtype).name
    return f"ops.zeros({(1,) * len(shape)!r}, ms.{name})"


def _source_cannot_run(ctx: NodeContext, attr: str, name: str) -> bool:
    """Whether onnxruntime fails running the branch ``attr`` at the conversion sizes, every
    dimension of its inputs fixed (a dynamic one is only an example size there)."""
    try:
        body = body_model(ctx.attr(attr), ctx.graph, [], name)
    except ValueError:
        return False
    inputs = body.model.graph.input
    if not all(isinstance(dim, int) for inp in inputs for dim in declared_dims(inp) or []):
        return False
    return fails_to_run(body.model, body.example_shapes)


def _raising_branch(name: str, outputs: list[str]) -> str:
    """A branch cell that raises where the source model fails; it takes the If's condition
    (the raise then runs only when the branch does, in GRAPH_MODE too) and returns zeros of
    the If's output types, so that both branches have outputs of one kind."""
    doc = (
        f"{_BODY_DOCS[name]} The source model cannot run this branch at the input sizes the "
        "network was converted at (onnxruntime fails there too), so it raises; convert at "
        "sizes this branch takes (--shape) to get its layers."
    )
    taken = "condition" if name == "ThenBranch" else "not condition"
    returned = outputs[0] if len(outputs) == 1 else ", ".join(outputs)
    return "\n".join(
        [
            f"class {name}(nn.Cell):",
            _docstring(doc),
            "",
            "    def construct(self, condition):",
            f"        if {taken}:",
            "            raise ValueError(",
            '                "this branch of the source model cannot run at the input sizes the "',
            '                "network was converted at; convert it again at sizes it takes"',
            "            )",
            "        # never reached: outputs of the other branch's types, as GRAPH_MODE needs",
            f"        return {returned}",
        ]
    )


def _loop_text(name: str, has_trip: bool, has_cond: bool, carried: int, scans: int) -> str:
    """A cell running ``<name>Body`` like ONNX's Loop (the body returns the condition, the
    carried values, then one value per step to stack)."""
    states = [f"state_{i}" for i in range(carried)]
    made = [f"made_{i}" for i in range(scans)]
    stacks = [f"per_step_{i}" for i in range(scans)]
    tests = (["step < trip_count"] if has_trip else []) + (["condition"] if has_cond else [])
    test = " and ".join(tests) or "True"
    call = f"self.body({', '.join(['step', 'condition', *states, '*outer'])})"
    buffered = scans and has_trip  # graph mode needs buffers of a size known before the loop
    doc = (
        f"ONNX Loop: calls {name}Body while {test}; the values it carries go round"
        + (", the ones it makes per step are stacked" if scans else "")
        + "."
        + (" One extra call before the loop learns their shapes." if buffered else "")
        + (" (Lists of per-step values: PyNative mode.)" if scans and not buffered else "")
    )
    lines = [
        f"class {name}(nn.Cell):",
        _docstring(doc),
        "",
        "    def __init__(self):",
        "        super().__init__()",
        f"        self.body = {name}Body()",
        "",
        f"    def construct({', '.join(['self', 'trip_count', 'condition', *states, '*outer'])}):",
        "        step = ms.Tensor(0, ms.int64)",
    ]
    if not has_cond:
        lines.append("        condition = ms.Tensor(True)")
    if buffered:
        lines.append(f"        {', '.join(['_', *(['_'] * carried), *made])} = {call}")
        lines += [
            f"        {b} = ops.zeros((trip_count,) + {m}.shape, {m}.dtype)"
            for b, m in zip(stacks, made)
        ]
    else:
        lines += [f"        {b} = []" for b in stacks]
    lines.append(f"        while {test}:")
    lines.append(f"            {', '.join(['condition', *states, *made])} = {call}")
    for b, m in zip(stacks, made):
        lines.append(f"            {b}[step] = {m}" if buffered else f"            {b}.append({m})")
    lines.append("            step = step + 1")
    if buffered:  # rows past an early stop are dropped (a gather: slicing by a tensor is not)
        results = [f"ops.gather({b}, ops.arange(step), 0)" for b in stacks]
    else:
        results = [f"ops.stack({b})" for b in stacks]
    lines.append(f"        return {', '.join(states + results)}")
    return "\n".join(lines)


# Body calls a nest of Loops with trip counts fixed in the model may make at run time: past this,
# the network would run for hours in Python-level steps (4096 x 4096 is 16.7 million).
MAX_LOOP_STEPS = 1 << 20


def _constant_trip(node: onnx.NodeProto, lookup: Callable[[str], np.ndarray | None]) -> int:
    """A Loop's trip count when the model fixes it (1 when it is computed at run time)."""
    if node.op_type != "Loop" or node.domain not in ("", "ai.onnx") or not node.input:
        return 1
    value = lookup(node.input[0]) if node.input[0] else None
    if value is None or value.size != 1 or value.dtype.kind not in "iu":
        return 1
    return max(int(value.reshape(-1)[0]), 1)


def _scope(graph: onnx.GraphProto, outer: Callable) -> Callable[[str], np.ndarray | None]:
    """Constant lookup inside ``graph``: its small initializers and Constant nodes, then
    ``outer`` for names the graph does not define itself."""
    local = {init.name: init for init in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and len(node.output) == 1 and node.attribute:
            if node.attribute[0].name == "value":
                local[node.output[0]] = node.attribute[0].t
    defined = {value.name for value in graph.input} | {o for n in graph.node for o in n.output}

    def lookup(name: str) -> np.ndarray | None:
        tensor = local.get(name)
        if tensor is not None:
            if len(tensor.dims) > 1 or (tensor.dims and tensor.dims[0] != 1):
                return None
            try:
                return onnx.numpy_helper.to_array(tensor)
            except (ValueError, TypeError):
                return None
        return None if name in defined else outer(name)

    return lookup


def nest_steps(body: onnx.GraphProto, outer: Callable[[str], np.ndarray | None]) -> int:
    """Body calls of the deepest chain of Loops with fixed trip counts inside ``body``, per call
    of ``body`` (a worklist: a nest of any depth is measured without recursion)."""
    worst = 1
    pending = [(body, outer, 1)]
    while pending:
        graph, enclosing, factor = pending.pop()
        lookup = _scope(graph, enclosing)
        for node in graph.node:
            steps = factor * _constant_trip(node, lookup)
            worst = max(worst, steps)
            if worst > MAX_LOOP_STEPS:
                return worst
            for attr in node.attribute:
                inner = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
                pending += [(subgraph, lookup, steps) for subgraph in inner]
    return worst


def _check_loop_work(ctx: NodeContext, body: onnx.GraphProto) -> None:
    """Unsupported (an unconverted placeholder and a report note) for a Loop nest whose fixed
    trip counts multiply past MAX_LOOP_STEPS body calls."""

    def outer(name: str) -> np.ndarray | None:
        tensor = ctx.graph.initializers.get(name)
        if tensor is None or len(tensor.dims) > 1 or (tensor.dims and tensor.dims[0] != 1):
            return None  # only scalars are trip counts (a weight is never decoded here)
        return ctx.graph.constant(name)

    trip = ctx.const(0)
    fixed = trip is not None and trip.size == 1 and trip.dtype.kind in "iu"
    steps = (max(int(trip.reshape(-1)[0]), 1) if fixed else 1) * nest_steps(body, outer)
    if steps > MAX_LOOP_STEPS:
        raise Unsupported(
            f"its trip counts (with the Loops nested in it) make {steps} body calls, more than "
            f"the {MAX_LOOP_STEPS} a converted network runs in Python-level steps"
        )


@mapper("Loop")
def loop(ctx: NodeContext):
    """Loop run a data-dependent number of times -> a cell with a ``while`` over its body."""
    body: onnx.GraphProto = ctx.attr("body")
    _check_loop_work(ctx, body)
    carried = ctx.num_inputs - 2
    scans = len(body.output) - 1 - carried
    has_trip, has_cond = ctx.has_input(0), ctx.has_input(1)
    formal = [(TensorProto.INT64, []), (TensorProto.BOOL, [])]
    formal += [_value_type(ctx, 2 + i) for i in range(carried)]
    cell = body_cell(ctx, "body", "LoopBody", formal, [])
    glue = _loop_text("Loop", has_trip, has_cond, carried, scans)
    trip = Input(0) if has_trip else None
    cond = Input(1) if has_cond else None
    args = [trip, cond] + [Input(2 + i) for i in range(carried)] + list(cell.args)
    definition = glue + "\n\n\n" + cell.definition
    runner = Cell(
        "Loop",
        {},
        args,
        weights=_nested(cell.weights, "body"),
        role="loop",
        definition=definition,
        uses=cell.uses | {"ops"},
    )
    return _results(ctx, runner, ctx.num_outputs)


def _scan_text(name: str, states: int, scans: list, outputs: list) -> str:
    """A cell running ``<name>Body`` over slices like ONNX's Scan: ``scans`` holds (axis,
    reversed) per scanned input, ``outputs`` the same per stacked output."""
    state_names = [f"state_{i}" for i in range(states)]
    inputs = [f"sequence_{i}" for i in range(len(scans))]
    made = [f"made_{i}" for i in range(len(outputs))]
    stacks = [f"per_step_{i}" for i in range(len(outputs))]
    slices = [
        f"ops.gather({var}, {'length - 1 - step' if backwards else 'step'}, {axis})"
        for var, (axis, backwards) in zip(inputs, scans)
    ]
    call = f"self.body({', '.join(state_names + slices + ['*outer'])})"
    lines = [
        f"class {name}(nn.Cell):",
        f'    """ONNX Scan: calls {name}Body on each slice of the scanned inputs; the states go\n'
        "    round, the values it makes per slice are stacked (one extra call before the loop\n"
        '    learns their shapes)."""',
        "",
        "    def __init__(self):",
        "        super().__init__()",
        f"        self.body = {name}Body()",
        "",
        f"    def construct({', '.join(['self', *state_names, *inputs, '*outer'])}):",
        f"        length = ops.dyn_shape({inputs[0]})[{scans[0][0]}]",
        "        step = ms.Tensor(0, ms.int64)",
    ]
    if outputs:
        lines.append(f"        {', '.join(['_'] * states + made)} = {call}")
        lines += [
            f"        {b} = ops.zeros((length,) + {m}.shape, {m}.dtype)"
            for b, m in zip(stacks, made)
        ]
    lines.append("        while step < length:")
    lines.append(f"            {', '.join(state_names + made)} = {call}")
    lines += [f"            {b}[step] = {m}" for b, m in zip(stacks, made)]
    lines.append("            step = step + 1")
    results = list(state_names)
    for b, (axis, backwards) in zip(stacks, outputs):
        value = f"ops.flip({b}, (0,))" if backwards else b
        results.append(f"ops.moveaxis({value}, 0, {axis})" if axis else value)
    lines.append(f"        return {', '.join(results)}")
    return "\n".join(lines)


@mapper("Scan", since=9)
def scan(ctx: NodeContext):
    """Scan over a length known only at run time -> a cell with a ``for`` over its body."""
    body: onnx.GraphProto = ctx.attr("body")
    count = int(ctx.attr("num_scan_inputs"))
    states = ctx.num_inputs - count
    made = len(body.output) - states
    in_axes = list(ctx.attr("scan_input_axes", [0] * count))
    in_dirs = list(ctx.attr("scan_input_directions", [0] * count))
    out_axes = list(ctx.attr("scan_output_axes", [0] * made))
    out_dirs = list(ctx.attr("scan_output_directions", [0] * made))
    formal = [_value_type(ctx, i) for i in range(states)]
    scans = []
    for k in range(count):
        elem, dims = _value_type(ctx, states + k)
        if dims is None:
            raise Unsupported("Scan over an input of unknown rank")
        axis = in_axes[k] % len(dims)
        scans.append((axis, bool(in_dirs[k])))
        formal.append((elem, dims[:axis] + dims[axis + 1 :]))
    outputs = []
    for k in range(made):
        rank = ctx.output_shape(states + k)
        if rank is None and out_axes[k] < 0:
            raise Unsupported("Scan output of unknown rank with a negative axis")
        axis = out_axes[k] % len(rank) if rank is not None else out_axes[k]
        outputs.append((axis, bool(out_dirs[k])))
    cell = body_cell(ctx, "body", "ScanBody", formal, [])
    glue = _scan_text("Scan", states, scans, outputs)
    args = [Input(i) for i in range(states + count)] + list(cell.args)
    runner = Cell(
        "Scan",
        {},
        args,
        weights=_nested(cell.weights, "body"),
        role="scan",
        definition=glue + "\n\n\n" + cell.definition,
        uses=cell.uses | {"ops"},
    )
    return _results(ctx, runner, ctx.num_outputs)


def _scan8_text(name: str, states: int, scans: list, outputs: int) -> str:
    """A cell running ``<name>Body`` like opset 8's Scan: every batch row (axis 0) scanned
    along axis 1 (``scans``: reversed or not per input), per-step values stacked on axis 1."""
    state_names = [f"state_{i}" for i in range(states)]
    inputs = [f"sequence_{i}" for i in range(len(scans))]
    made = [f"made_{i}" for i in range(outputs)]
    slices = [
        f"{var}[row, {'length - 1 - step' if backwards else 'step'}]"
        for var, backwards in zip(inputs, scans)
    ]
    carried = [f"carried_{i}" for i in range(states)]
    lines = [
        f"class {name}(nn.Cell):",
        _docstring(
            f"ONNX Scan (opset 8): for every batch row, calls {name}Body on each step of the "
            "scanned inputs (axis 1); the states go round per row, the values it makes per "
            "step are stacked."
        ),
        "",
        "    def __init__(self):",
        "        super().__init__()",
        f"        self.body = {name}Body()",
        "",
        f"    def construct({', '.join(['self', *state_names, *inputs, '*outer'])}):",
        f"        batch, length = {inputs[0]}.shape[0], {inputs[0]}.shape[1]",
        f"        finals, stacks = [[] for _ in range({states})], [[] for _ in range({outputs})]",
        "        for row in range(batch):",
        f"            {', '.join(carried + [''])} = {', '.join(f'{s}[row]' for s in state_names)},"
        if states
        else "            pass",
        f"            steps = [[] for _ in range({outputs})]",
        "            for step in range(length):",
        f"                {', '.join(carried + made)} = self.body({', '.join(carried + slices + ['*outer'])})",
    ]
    lines += [f"                steps[{i}].append({m})" for i, m in enumerate(made)]
    lines += [f"            finals[{i}].append({c})" for i, c in enumerate(carried)]
    lines += [f"            stacks[{i}].append(ops.stack(steps[{i}]))" for i in range(outputs)]
    results = [f"ops.stack(finals[{i}])" for i in range(states)]
    results += [f"ops.stack(stacks[{i}])" for i in range(outputs)]
    lines.append(f"        return {', '.join(results)}")
    return "\n".join(lines)


@mapper("Scan", since=8, until=8)
def scan_opset_8(ctx: NodeContext):
    """Scan of opset 8 (batch axis 0, scanned along axis 1) -> a cell looping over rows and
    steps (PyNative; static batch and length in GRAPH mode)."""
    if ctx.has_input(0):
        raise Unsupported("Scan (opset 8) with sequence_lens")
    body: onnx.GraphProto = ctx.attr("body")
    count = int(ctx.attr("num_scan_inputs"))
    states = ctx.num_inputs - 1 - count
    made = len(body.output) - states
    directions = list(ctx.attr("directions", [0] * count))
    formal = []
    for k in range(states + count):
        elem, dims = _value_type(ctx, 1 + k)
        if dims is None:
            raise Unsupported("Scan over an input of unknown rank")
        formal.append((elem, dims[1:] if k < states else dims[2:]))
    cell = body_cell(ctx, "body", "ScanBody", formal, [])
    glue = _scan8_text("Scan", states, [bool(d) for d in directions], made)
    args = [Input(1 + k) for k in range(states + count)] + list(cell.args)
    runner = Cell(
        "Scan",
        {},
        args,
        weights=_nested(cell.weights, "body"),
        role="scan",
        definition=glue + "\n\n\n" + cell.definition,
        uses=cell.uses | {"ops"},
    )
    return _results(ctx, runner, ctx.num_outputs)
