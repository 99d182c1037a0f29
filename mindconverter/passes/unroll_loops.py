"""Unroll ONNX ``Loop`` and ``Scan`` nodes whose iteration count is known at conversion time.

Once ``--shape`` fixes the input shapes, the loops of most exported recurrent models (Keras RNNs
through tf2onnx, scripted PyTorch loops) run a number of times that constant folding can work
out: a constant trip count, a loop condition computed from a counter and a constant bound, or
the static length of a scanned axis. Such a loop is replaced by one copy of its body per
iteration, straight-line nodes the ordinary mappers handle (MatMul, Sigmoid, Tanh, ...):

* the body's iteration number and incoming condition become constants of the copy;
* loop-carried values flow from one copy into the next, and the last copy's values become the
  loop's outputs;
* scan outputs (``Loop``: stacked along a new axis 0; ``Scan``: along ``scan_output_axes``,
  reversed where ``scan_output_directions`` says so) become one ``Unsqueeze`` per iteration and a
  ``Concat``.

A ``Loop`` whose condition input is given is only unrolled when its condition, after each copy,
can be evaluated from constants (a data-dependent ``while`` stays a Loop, which the mapper then
reports as unsupported). Loops above ``MAX_ITERATIONS`` iterations or ``MAX_UNROLLED_NODES``
copied nodes stay too. Only loops in the main graph are unrolled; loops nested in a body become
main-graph nodes once their parent is unrolled and are handled on the next simplify round. Node
counts include the nodes of nested subgraphs. Before copying anything, each loop's size once
unrolled is projected through its nested loops with constant trip counts (they multiply: three
levels of 200 would make millions of nodes); a loop that would grow the graph past
``MAX_GRAPH_NODES`` stays as it is, which the pass reports in a note.
"""

from __future__ import annotations

import itertools

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..graph import Graph
from ..graph.evaluator import NOT_FOLDABLE, evaluate_node
from ..graph.graph import claim_name
from ..graph.node import node_attribute
from ..graph.subgraphs import has_subgraph
from .context import PassContext

MAX_ITERATIONS = 4096
MAX_UNROLLED_NODES = 200_000
MAX_GRAPH_NODES = 100_000


class _OverBudget(Exception):
    """Unrolling this round would make the graph larger than MAX_GRAPH_NODES."""


def nested_size(nodes) -> int:
    """Nodes, counting those of every subgraph they hold."""
    total = 0
    for node in nodes:
        total += 1
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                total += nested_size(attr.g.node)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                total += sum(nested_size(sub.node) for sub in attr.graphs)
    return total


class _Unrolling:
    """What unrolling needs from the main graph: constants (and values it computed), static
    shapes, fresh names, and the initializers it adds."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.opsets = graph.opsets
        self.opset = self.opsets.get("", 1)
        self.values: dict[str, np.ndarray] = {}  # body values computed at conversion time
        self.shapes = graph.shapes
        self.names = graph.value_names()
        self.node_names = graph.node_names()
        self.new_initializers: list[onnx.TensorProto] = []
        self.left_over_budget = False  # a loop stayed because unrolling it would be too large

    def const(self, name: str) -> np.ndarray | None:
        if name in self.values:
            return self.values[name]
        return self.graph.constant(name)

    def fresh(self, wanted: str) -> str:
        """A value name not used yet in the model."""
        return claim_name(self.names, wanted)

    def fresh_node(self, wanted: str) -> str:
        """A node name not used yet in the model."""
        return claim_name(self.node_names, wanted)

    def add_const(self, wanted: str, array: np.ndarray) -> str:
        name = self.fresh(wanted)
        self.values[name] = array
        self.new_initializers.append(numpy_helper.from_array(array, name))
        return name


def run(graph: Graph, context: PassContext) -> bool:
    """Replace every main-graph Loop/Scan with a known iteration count by its unrolled body."""
    try:
        changed = unroll_loops(graph)
    except _OverBudget:
        note = (
            f"Loops were left as they are: unrolling them would make more than "
            f"{MAX_GRAPH_NODES} nodes."
        )
        if note not in context.notes:
            context.notes.append(note)
            context.say(f"NOTE: {note}")
        return False
    if changed:
        graph.edited()
    return changed


def unroll_loops(graph: Graph) -> bool:
    """Unroll in place; returns whether anything changed (the caller marks the graph edited)."""
    model = graph.model
    if not any(
        node.op_type in ("Loop", "Scan") and node.domain in ("", "ai.onnx")
        for node in model.graph.node
    ):
        return False
    state = _Unrolling(graph)
    nodes, changed = [], False
    budget = MAX_GRAPH_NODES - nested_size(model.graph.node)
    for node in model.graph.node:
        unrolled = None
        if node.domain not in ("", "ai.onnx") or node.op_type not in ("Loop", "Scan"):
            pass
        elif _projected_size([node], state.const) - nested_size([node]) > budget:
            state.left_over_budget = True  # found before copying anything
        else:
            if node.op_type == "Loop":
                unrolled = _unroll_loop(node, state)
            elif node.op_type == "Scan" and state.opset >= 9:
                unrolled = _unroll_scan(node, state)
        if unrolled is None:
            nodes.append(node)
        else:
            budget -= nested_size(unrolled) - nested_size([node])
            if budget < 0:
                raise _OverBudget
            nodes.extend(unrolled)
            changed = True
    if state.left_over_budget and not changed:
        raise _OverBudget
    if changed:
        del model.graph.node[:]
        model.graph.node.extend(nodes)
        model.graph.initializer.extend(state.new_initializers)
    return changed


def _projected_size(nodes, const) -> int:
    """Nodes once every loop with a count known up front is unrolled, nested ones included
    (three nested Loops of 200 make 200**3 copies of the innermost body). ``const`` gives the
    constant value of a name in this scope, or None."""
    total = 0
    for node in nodes:
        total += 1
        bodies = [attr.g for attr in node.attribute if attr.type == onnx.AttributeProto.GRAPH]
        bodies += [g for attr in node.attribute for g in attr.graphs]
        count = _known_count(node, const)
        for body in bodies:
            inner = _projected_size(body.node, _body_constants(body, const))
            total += inner * count if count is not None else inner
        if total > MAX_GRAPH_NODES:
            return total  # enough to know it is too many
    return total


def _body_constants(body: onnx.GraphProto, outer):
    """Constant lookup inside ``body``: its Constant nodes and initializers, then ``outer``."""
    local = {init.name: init for init in body.initializer}
    for node in body.node:
        if node.op_type == "Constant" and len(node.output) == 1 and node.attribute:
            if node.attribute[0].name == "value":
                local[node.output[0]] = node.attribute[0].t
    shadowed = {inp.name for inp in body.input} | {o for n in body.node for o in n.output}

    def const(name: str):
        if name in local:
            try:
                return numpy_helper.to_array(local[name])
            except Exception:  # an odd tensor: treat the count as unknown
                return None
        return None if name in shadowed else outer(name)

    return const


def _known_count(node: onnx.NodeProto, const) -> int | None:
    """Iterations of a Loop with a constant trip count and no condition, else None."""
    if node.op_type != "Loop" or node.domain not in ("", "ai.onnx") or not node.input:
        return None
    if not node.input[0] or (len(node.input) > 1 and node.input[1]):
        return None
    count = _scalar(const(node.input[0]))
    if count is None or not 0 <= count <= MAX_ITERATIONS:
        return None  # a loop that long is not unrolled at all
    return int(count)


def _scan_length(node: onnx.NodeProto, state: _Unrolling) -> int | None:
    """The common length of a Scan's scanned axes, when the shapes are static."""
    num_scan = node_attribute(node, "num_scan_inputs")
    if num_scan is None or num_scan > len(node.input):
        return None
    carried = len(node.input) - num_scan
    in_axes = list(node_attribute(node, "scan_input_axes", [0] * num_scan))
    lengths = set()
    for name, axis in zip(node.input[carried:], in_axes):
        shape = state.shapes.get(name)
        if not shape or not -len(shape) <= axis < len(shape):
            return None
        lengths.add(shape[axis % len(shape)])
    return lengths.pop() if len(lengths) == 1 and isinstance(next(iter(lengths)), int) else None


def _scalar(array: np.ndarray | None):
    if array is None or array.size != 1:
        return None
    return array.reshape(-1)[0]


class _Copier:
    """Emits copies of a body graph with renamed values, one per iteration."""

    def __init__(self, node: onnx.NodeProto, body: onnx.GraphProto, state: _Unrolling):
        self.node, self.body, self.state = node, body, state
        self.prefix = node.name or node.op_type.lower()
        self.nodes: list[onnx.NodeProto] = []
        # body initializers never change: one main-graph copy serves every iteration
        self.body_inits = {
            init.name: state.add_const(f"{self.prefix}/{init.name}", numpy_helper.to_array(init))
            for init in body.initializer
        }

    def copy(
        self, iteration: int, bindings: dict[str, str], wanted: set[str] = frozenset()
    ) -> dict[str, str]:
        """Copy the body once; ``bindings`` maps body inputs to main-graph names. Returns the
        full renaming (body value -> main-graph name). Values in ``wanted`` are evaluated when
        their inputs are constants (for the loop condition)."""
        rename = dict(self.body_inits)
        rename.update(bindings)
        for body_node in self.body.node:
            new = onnx.NodeProto()
            new.CopyFrom(body_node)
            new.name = self.state.fresh_node(
                f"{self.prefix}/iter{iteration}/{body_node.name or body_node.op_type}"
            )
            del new.input[:]
            new.input.extend(rename.get(name, name) if name else "" for name in body_node.input)
            del new.output[:]
            for out in body_node.output:
                if out:
                    rename[out] = self.state.fresh(f"{self.prefix}/iter{iteration}/{out}")
                new.output.append(rename[out] if out else "")
            for attr in new.attribute:
                for sub in (
                    [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
                ):
                    _rename_references(sub, rename)
            self.nodes.append(new)
            if wanted & set(body_node.output):
                self._evaluate(new)
        return rename

    def _evaluate(self, node: onnx.NodeProto) -> None:

        if node.op_type in NOT_FOLDABLE or has_subgraph(node) or node.domain not in ("", "ai.onnx"):
            return
        inputs = [self.state.const(name) if name else None for name in node.input]
        if any(value is None for name, value in zip(node.input, inputs) if name):
            return
        results = evaluate_node(node, self.state.opsets, inputs)
        if results is not None:
            for name, value in zip(node.output, results):
                if name:
                    self.state.values[name] = value

    def emit(self, op_type: str, inputs: list[str], output: str, **attrs) -> str:
        self.nodes.append(
            helper.make_node(
                op_type,
                inputs,
                [output],
                name=self.state.fresh_node(f"{self.prefix}/{op_type}"),
                **attrs,
            )
        )
        return output

    def unsqueeze(self, name: str, axis: int) -> str:
        out = self.state.fresh(f"{name}/unsqueezed")
        if self.state.opset >= 13:
            axes = self.state.add_const(f"{self.prefix}/axes{axis}", np.array([axis], np.int64))
            return self.emit("Unsqueeze", [name, axes], out)
        return self.emit("Unsqueeze", [name], out, axes=[axis])

    def stack(self, names: list[str], axis: int, output: str) -> None:
        """Stack same-shaped values along a new ``axis`` into ``output``."""
        self.emit("Concat", [self.unsqueeze(name, axis) for name in names], output, axis=axis)


def _rename_references(graph: onnx.GraphProto, rename: dict[str, str]) -> None:
    """Point a nested subgraph's reads of outer values at their renamed copies."""
    local = {inp.name for inp in graph.input} | {init.name for init in graph.initializer}
    local |= {out for node in graph.node for out in node.output}
    for node in graph.node:
        for index, name in enumerate(node.input):
            if name and name not in local and name in rename:
                node.input[index] = rename[name]
        for attr in node.attribute:
            for sub in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs):
                _rename_references(sub, {k: v for k, v in rename.items() if k not in local})
    for out in graph.output:
        if out.name not in local and out.name in rename:
            out.name = rename[out.name]


def _condition_cone(body: onnx.GraphProto, carried: int) -> set[str]:
    """Body values the condition output depends on, through loop-carried values too."""
    producer = {out: node for node in body.node for out in node.output if out}
    state_in = {inp.name: index for index, inp in enumerate(body.input[2 : 2 + carried])}
    wanted, stack = set(), [body.output[0].name]
    while stack:
        name = stack.pop()
        if name in wanted:
            continue
        wanted.add(name)
        if name in producer:
            stack.extend(n for n in producer[name].input if n)
        elif name in state_in:  # next iteration's value comes from the matching body output
            stack.append(body.output[1 + state_in[name]].name)
    return wanted


def _unroll_loop(node: onnx.NodeProto, state: _Unrolling) -> list[onnx.NodeProto] | None:
    body = node_attribute(node, "body")
    inputs = list(node.input) + [""] * max(0, 2 - len(node.input))
    carried_in = inputs[2:]
    carried = len(carried_in)
    if body is None or len(body.input) != 2 + carried or len(body.output) < 1 + carried:
        return None
    trip = _scalar(state.const(inputs[0])) if inputs[0] else None
    if inputs[0] and trip is None:
        return None  # trip count computed at run time
    has_cond = bool(inputs[1])
    cond = _scalar(state.const(inputs[1])) if has_cond else True
    if cond is None or (trip is None and not has_cond):
        return None  # data-dependent start, or an endless loop
    count = int(trip) if trip is not None else MAX_ITERATIONS + 1
    budget = min(count, MAX_ITERATIONS + 1)
    body_size = max(nested_size(body.node), 1)
    if not has_cond and (count > MAX_ITERATIONS or count * body_size > MAX_UNROLLED_NODES):
        return None  # (with a condition, the real count is found while unrolling)
    copier = _Copier(node, body, state)
    wanted = _condition_cone(body, carried) if has_cond else set()
    values, scans = list(carried_in), [[] for _ in range(len(body.output) - 1 - carried)]
    for iteration in itertools.count():
        if iteration >= budget or not bool(cond):
            break
        if iteration >= MAX_ITERATIONS or (iteration + 1) * body_size > MAX_UNROLLED_NODES:
            return None
        bindings = {
            body.input[0].name: state.add_const(
                f"{copier.prefix}/iter{iteration}/i", np.array(iteration, np.int64)
            ),
            body.input[1].name: state.add_const(
                f"{copier.prefix}/iter{iteration}/cond", np.array(bool(cond))
            ),
        }
        bindings.update({inp.name: value for inp, value in zip(body.input[2:], values)})
        rename = copier.copy(iteration, bindings, wanted)
        values = [rename.get(out.name, out.name) for out in body.output[1 : 1 + carried]]
        for scan, out in zip(scans, body.output[1 + carried :]):
            scan.append(rename.get(out.name, out.name))
        if has_cond:
            cond = _scalar(state.const(rename.get(body.output[0].name, body.output[0].name)))
            if cond is None:
                return None  # the loop's end depends on run-time data
    outputs = list(node.output)
    for value, out in zip(values, outputs[:carried]):
        if out:
            copier.emit("Identity", [value], out)
    for scan, out in zip(scans, outputs[carried:]):
        if not out:
            continue
        if not scan:
            return None  # zero iterations: the empty scan output's shape is unknown
        copier.stack(scan, 0, out)
    return copier.nodes


def _unroll_scan(node: onnx.NodeProto, state: _Unrolling) -> list[onnx.NodeProto] | None:
    body = node_attribute(node, "body")
    num_scan = node_attribute(node, "num_scan_inputs")
    if body is None or num_scan is None:
        return None
    carried = len(node.input) - num_scan
    scan_outputs = len(body.output) - carried
    if carried < 0 or len(body.input) != len(node.input) or scan_outputs < 0:
        return None
    in_dirs = list(node_attribute(node, "scan_input_directions", [0] * num_scan))
    out_dirs = list(node_attribute(node, "scan_output_directions", [0] * scan_outputs))
    in_axes = list(node_attribute(node, "scan_input_axes", [0] * num_scan))
    out_axes = list(node_attribute(node, "scan_output_axes", [0] * scan_outputs))
    count = _scan_length(node, state)
    if (
        count is None
        or count < 1
        or count > MAX_ITERATIONS
        or count * max(nested_size(body.node), 1) > MAX_UNROLLED_NODES
    ):
        return None
    copier = _Copier(node, body, state)
    values = list(node.input[:carried])
    scans = [[] for _ in range(scan_outputs)]
    for step in range(count):
        bindings = {inp.name: value for inp, value in zip(body.input[:carried], values)}
        for inp, name, axis, direction in zip(
            body.input[carried:], node.input[carried:], in_axes, in_dirs
        ):
            index = count - 1 - step if direction else step
            position = state.add_const(
                f"{copier.prefix}/iter{step}/index", np.array(index, np.int64)
            )
            rank = len(state.shapes[name])
            bindings[inp.name] = copier.emit(
                "Gather",
                [name, position],
                state.fresh(f"{copier.prefix}/iter{step}/{inp.name}"),
                axis=axis % rank,
            )
        rename = copier.copy(step, bindings)
        values = [rename.get(out.name, out.name) for out in body.output[:carried]]
        for scan, out in zip(scans, body.output[carried:]):
            scan.append(rename.get(out.name, out.name))
    outputs = list(node.output)
    for value, out in zip(values, outputs[:carried]):
        if out:
            copier.emit("Identity", [value], out)
    for scan, out, axis, direction, body_out in zip(
        scans, outputs[carried:], out_axes, out_dirs, body.output[carried:]
    ):
        if not out:
            continue
        rank = (
            len(body_out.type.tensor_type.shape.dim)
            if body_out.type.tensor_type.HasField("shape")
            else None
        )
        if axis < 0:
            if rank is None:
                return None
            axis += rank + 1
        copier.stack(scan[::-1] if direction else scan, axis, out)
    return copier.nodes


__all__ = ["MAX_GRAPH_NODES", "MAX_ITERATIONS", "MAX_UNROLLED_NODES", "unroll_loops"]
