"""Pass: collapse shape arithmetic on dynamic dimensions into one ``Dims`` node per result.

Exporters spell ``x.view(b, t, heads, -1)`` as ``Shape → Gather → Unsqueeze → Concat →
Reshape``. With dynamic dimensions kept symbolic, symbolic shape inference knows the value of
such a chain (``(batch, seq, 4, -1)``); this pass replaces the chain feeding each consumer that
is not itself shape arithmetic by one node of the internal domain (``ai.mindconverter::Dims``)
whose inputs are the tensors the named dimensions are read from, so the generated code reads
``(x.shape[0], x.shape[1], 4, -1)`` instead of a dozen tensor operations. The expressions stay
in ``graph.symbolic_values`` under the node's output name.

Chains whose values use operations that cannot be written as Python integer arithmetic are left
as they are (they are computed at run time by the ordinary mappers).
"""

from __future__ import annotations

import onnx
from onnx import helper

from ..graph import Graph
from ..graph.internal_domain import DOMAIN, declare_internal_domain
from ..graph.pruning import remove_dead_nodes
from ..graph.symbolic import is_numeric, python_expressible, whole_dimensions
from .context import PassContext

# Inputs that take a shape or a size: a ``Dims`` value reaches them as Python integers. Any other
# reader gets it as a tensor.
SHAPE_INPUTS = {
    "Reshape": {1},
    "Expand": {1},
    "ConstantOfShape": {0},
    "Range": {0, 1, 2},
    "Slice": {1, 2},
    "Tile": {1},
}


def run(graph: Graph, context: PassContext) -> bool:
    """Replace each boundary value of symbolic shape arithmetic by a ``Dims`` node."""
    if not graph.symbolic_values:
        return False
    boundaries = _boundary_values(graph)
    if not boundaries:
        return False
    producers = graph.producers
    replaced: dict[int, onnx.NodeProto] = {}
    for name in boundaries:
        node = _dims_node(graph, name)
        if node is not None:
            replaced[id(producers[name])] = node
    if not replaced:
        return False
    nodes = [replaced.get(id(node), node) for node in graph.model.graph.node]
    del graph.model.graph.node[:]
    graph.model.graph.node.extend(nodes)
    declare_internal_domain(graph.model)
    remove_dead_nodes(graph.model)
    graph.edited()
    # whether a size is read as a tensor is decided on the final graph: arithmetic that read it
    # became Dims nodes of its own, leaving its shape readers
    lifted = {node.output[0] for node in replaced.values()}
    for node in graph.model.graph.node:  # the graph holds copies of the new nodes
        if node.domain == DOMAIN and node.output[0] in lifted:
            node.attribute.append(
                helper.make_attribute("as_tensor", int(not _read_as_shape(graph, node.output[0])))
            )
    return True


def _is_arithmetic(graph: Graph, name: str) -> bool:
    """A value computed at run time whose symbolic value involves a named dimension."""
    value = graph.symbolic_values.get(name)
    return (
        value is not None
        and name in graph.producers
        and name not in graph.initializers
        and not is_numeric(value)
    )


def _boundary_values(graph: Graph) -> list[str]:
    """Symbolic values read by a node that is not itself shape arithmetic."""
    found = []
    for name, readers in graph.consumer_nodes.items():
        if not _is_arithmetic(graph, name) or len(graph.producers[name].output) != 1:
            continue
        if any(not all(_is_arithmetic(graph, out) for out in r.output if out) for r in readers):
            found.append(name)
    return found


def _dims_node(graph: Graph, name: str) -> onnx.NodeProto | None:
    """The ``Dims`` node computing ``name``, or None when it cannot be written in Python."""
    value = graph.symbolic_values[name]
    scalar = graph.symbolic_shapes.get(name) == () or not isinstance(value, tuple)
    items = value if isinstance(value, tuple) else (value,)
    if scalar and len(items) != 1:
        return None
    if not all(python_expressible(item) for item in items):
        return None
    candidates = _shape_sources(graph, name) + graph.inputs
    # whole dimensions only: a formula built of several would be read from tensors anywhere
    # in the network (dynamo computes a size once for all its readers); once blocks are
    # known, recover_hierarchy reads such formulas from the tensors each block holds
    items, whole = whole_dimensions(graph, items, candidates, parts=False)
    if whole:  # the value now reads those sizes directly
        graph.symbolic_values[name] = (
            items[0]
            if scalar and len(items) == 1 and not isinstance(value, tuple)
            else tuple(items)
        )
    symbols = sorted(
        {str(s) for item in items if not isinstance(item, int) for s in item.free_symbols}
    )
    sources: list[str] = []
    axes: list[int] = []
    indices: list[int] = []
    for symbol in symbols:
        found = whole.get(symbol) or next(
            (
                (tensor, graph.symbolic_shapes[tensor].index(symbol))
                for tensor in candidates
                if symbol in graph.symbolic_shapes.get(tensor, ())
            ),
            None,
        )
        if found is None:
            return None
        if found[0] not in sources:
            sources.append(found[0])
        indices.append(sources.index(found[0]))
        axes.append(found[1])
    producer = graph.producers[name]
    node = helper.make_node(
        "Dims",
        sources,
        [name],
        name=producer.name or name,
        domain=DOMAIN,
        symbols=symbols,
        sources=indices,
        axes=axes,
        scalar=int(scalar),
    )
    for entry in producer.metadata_props:
        node.metadata_props.add().CopyFrom(entry)
    return node


def _read_as_shape(graph: Graph, name: str) -> bool:
    """Whether every reader of ``name`` takes it as a shape or size (not as a tensor)."""
    return (
        all(
            reader.domain in ("", "ai.onnx") and index in SHAPE_INPUTS.get(reader.op_type, ())
            for reader in graph.consumer_nodes.get(name, [])
            for index, value in enumerate(reader.input)
            if value == name
        )
        and name not in graph.outputs
    )


def _shape_sources(graph: Graph, name: str) -> list[str]:
    """Tensors read by the ``Shape`` nodes the value of ``name`` is computed from."""
    sources, seen, stack = [], set(), [name]
    while stack:
        value = stack.pop()
        node = graph.producers.get(value)
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if node.op_type == "Shape":
            if node.input[0] not in sources:
                sources.append(node.input[0])
            continue
        stack.extend(n for n in node.input if n and _is_arithmetic(graph, n))
    return sources
