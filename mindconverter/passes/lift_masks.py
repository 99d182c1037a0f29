"""Pass: index a padding mask the way people do, ``mask[:, None, None, :]``.

transformers widens a 2-D padding mask ``m`` (batch, key) to the 4-D mask attention adds to its
scores by indexing ``m`` with broadcast index grids. The dynamo exporter writes this as
``gather_nd(m, concat(b, kv))`` over ``arange`` grids, the TorchScript exporter as a flat
``gather(m.reshape(-1, 1), b * key_length + kv)``: a dozen lines of index arithmetic in the
script for what is one unsqueeze.

This pass looks at every Gather and GatherND whose data is a 2-D value (directly or through
reshapes) and whose indices are computed from sizes alone. It runs that computation with onnx's
reference evaluator on random masks at two probe sizes; where the result is the mask with
unit axes inserted between its two dimensions, the computation becomes one Unsqueeze of the
mask. The indices' sizes come from other values (``input_ids``, the key cache), which equal
the mask's for every input the source model accepts; the probe sizes follow the index grids.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..graph import Graph
from ..graph.evaluator import NOT_FOLDABLE, evaluate_nodes
from ..graph.graph import claim_name
from ..graph.pruning import remove_dead_nodes
from ..graph.subgraphs import subgraph_references
from .context import PassContext

_MAX_CONE_NODES = 64  # index arithmetic of a mask builder is a few dozen nodes at most
_MAX_CONE_VISITS = 4 * _MAX_CONE_NODES  # values one search may visit, its inner cones included
_VIEW_OPS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze")
_PROBE_SIZES = (3, 5)


def run(graph: Graph, context: PassContext) -> bool:
    """Replace each padding-mask index computation by an Unsqueeze of the mask."""
    pinned = subgraph_references(graph.model.graph)
    changed = False
    for node in list(graph.model.graph.node):
        if node.op_type not in ("Gather", "GatherND") or node.domain not in ("", "ai.onnx"):
            continue
        found = _unsqueezed_mask(graph, node, pinned)
        if found is None:
            continue
        mask, result, rank = found
        _replace(graph, node, mask, result, rank)
        changed = True
        graph.edited()
    if changed:
        remove_dead_nodes(graph.model)
        graph.edited()
    return changed


def _unsqueezed_mask(
    graph: Graph, gather: onnx.NodeProto, pinned: set[str]
) -> tuple[str, str, int] | None:
    """``(mask, result, rank)`` when ``result`` (the gather's output, or a view of it) equals the
    2-D ``mask`` with ``rank - 2`` unit axes inserted in the middle."""
    views = _views(graph, gather.input[0])
    mask = next((name for name in reversed(views) if _rank(graph, name) == 2), None)
    if mask is None:
        return None
    result = _viewed_result(graph, gather.output[0], pinned)
    rank = _rank(graph, result) or 0
    if rank < 3:
        return None
    cone = _index_cone(graph, result, mask, set(views))
    if cone is None:
        return None
    nodes, shaped = cone
    for size in _PROBE_SIZES:
        if not _probe_matches(graph, nodes, shaped, mask, result, size):
            return None
    return mask, result, rank


def _views(graph: Graph, data: str) -> list[str]:
    """``data`` and the values it is a view of, latest first (``m.reshape(-1, 1)``, ``m``)."""
    chain = [data]
    for _ in range(4):
        producer = graph.producers.get(chain[-1])
        if producer is None or producer.op_type not in _VIEW_OPS or not producer.input:
            break
        chain.append(producer.input[0])
    return chain


def _rank(graph: Graph, name: str) -> int | None:
    shape = graph.symbolic_shapes.get(name)
    return None if shape is None else len(shape)


def _viewed_result(graph: Graph, value: str, pinned: set[str]) -> str:
    """``value``, or the reshape its only reader makes of it (TorchScript's flat gather)."""
    for _ in range(2):
        readers = graph.consumer_nodes.get(value, [])
        if (
            len(readers) != 1
            or readers[0].op_type not in _VIEW_OPS
            or value in graph.outputs
            or value in pinned
        ):
            break
        value = readers[0].output[0]
    return value


def _index_cone(
    graph: Graph, result: str, mask: str, views: set[str]
) -> tuple[list[onnx.NodeProto], dict[str, tuple]] | None:
    """The nodes computing ``result`` from ``mask``, constants and sizes of other values (in
    graph order), with the symbolic shape of each value whose size they read; None if
    anything else feeds them."""
    found = _cone(graph, result, mask, views, [_MAX_CONE_VISITS])
    if found is None:
        return None
    nodes, shaped = found
    order = {id(node): index for index, node in enumerate(graph.model.graph.node)}
    return sorted(nodes.values(), key=lambda node: order[id(node)]), shaped


def _cone(
    graph: Graph, result: str, mask: str, views: set[str], budget: list[int]
) -> tuple[dict[int, onnx.NodeProto], dict[str, tuple]] | None:
    """:func:`_index_cone`'s search. ``budget`` counts the values the whole search (inner
    cones included) may still visit: a deep network whose sizes feed each other (EnCodec's
    padding) must not be searched for ever."""
    nodes: dict[int, onnx.NodeProto] = {}
    shaped: dict[str, tuple] = {}
    pending = [result]
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen or name == mask or name in graph.initializers or not name:
            continue
        seen.add(name)
        budget[0] -= 1
        if budget[0] < 0:
            return None
        producer = graph.producers.get(name)
        if (
            producer is None
            or producer.domain not in ("", "ai.onnx")
            or producer.op_type in NOT_FOLDABLE
            or any(
                attr.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                for attr in producer.attribute
            )
        ):
            return None
        nodes[id(producer)] = producer
        if len(nodes) > _MAX_CONE_NODES:
            return None
        if producer.op_type == "Shape":
            source = producer.input[0]
            inner = None if source in views else _cone(graph, source, mask, views, budget)
            if budget[0] < 0:
                return None
            if source in views:  # the size of the mask or of a view the cone computes
                pending.append(source)
            elif inner is not None:  # the size of a value computed from sizes (an index grid)
                nodes.update(inner[0])
                shaped.update(inner[1])
            else:  # the size of another value: fed at probe sizes
                shape = graph.symbolic_shapes.get(source)
                if shape is None:
                    return None
                shaped[source] = shape
            continue
        pending.extend(producer.input)
    return nodes, shaped


def _probe_matches(
    graph: Graph,
    nodes: list[onnx.NodeProto],
    shaped: dict[str, tuple],
    mask: str,
    result: str,
    size: int,
) -> bool:
    """Whether the cone, with every named dimension ``size`` and a random mask shaped as the
    index grids ask, gives the mask with unit axes inserted in its middle."""
    mask_shape = graph.symbolic_shapes.get(mask)
    mask_dtype = graph.dtypes.get(mask)
    if mask_shape is None or mask_dtype is None:
        return False

    def probe_shape(shape: tuple) -> tuple[int, ...]:
        return tuple(dim if isinstance(dim, int) else size for dim in shape)

    feeds = {
        name: np.zeros(probe_shape(shape), dtype=graph.dtypes.get(name, np.float32))
        for name, shape in shaped.items()
    }
    initializers = _cone_initializers(graph, nodes)
    opset = graph.opsets.get("", 17)
    generator = np.random.default_rng(size)
    # Start with a mask larger than the grids reach (an index out of range fails the run),
    # then settle on the size the grids ask for; they may read the mask's own size.
    dims = tuple(dim if isinstance(dim, int) else 4 * size for dim in mask_shape)
    for _ in range(3):
        values = generator.integers(0, 2, size=dims).astype(mask_dtype)
        out = evaluate_nodes(nodes, {**feeds, mask: values}, result, initializers, opset)
        if out is None or out.ndim < 3:
            return False
        asked = (out.shape[0], out.shape[-1])
        if asked == dims:
            expected = values.reshape((dims[0],) + (1,) * (out.ndim - 2) + (dims[1],))
            return out.shape == expected.shape and bool(np.array_equal(out, expected))
        dims = asked
    return False


def _cone_initializers(graph: Graph, nodes: list[onnx.NodeProto]) -> list[onnx.TensorProto]:
    names = {name for node in nodes for name in node.input if name in graph.initializers}
    return [graph.initializers[name] for name in sorted(names)]


def _replace(graph: Graph, gather: onnx.NodeProto, mask: str, result: str, rank: int) -> None:
    """Write ``result`` as ``Unsqueeze(mask, axes=1..rank-2)`` in place of its producer."""
    producer = graph.producers[result]
    axes = claim_name(graph.value_names(), f"{result}_axes")
    graph.model.graph.initializer.append(
        numpy_helper.from_array(np.arange(1, rank - 1, dtype=np.int64), axes)
    )
    unsqueeze = helper.make_node("Unsqueeze", [mask, axes], [result], name=gather.name)
    for entry in gather.metadata_props:
        unsqueeze.metadata_props.add().CopyFrom(entry)
    nodes = graph.model.graph.node
    index = next(i for i, node in enumerate(nodes) if node is producer)
    nodes.insert(index, unsqueeze)
    del nodes[index + 1]  # the old producer; what only it read is pruned after the pass
