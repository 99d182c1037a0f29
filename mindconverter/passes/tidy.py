"""Pass: remove computations that do nothing, and compute shared ones once.

Exporters leave steps that change no number: a cast to the dtype a value already has, ``* 1``,
``+ 0``, ``logical_and`` with an all-true mask (``arange(n) >= 0`` is one), ``squeeze`` undoing
``unsqueeze``, a transpose undoing a transpose, a reshape of a reshape or to the shape a value
already has, and the same node written several times in one module. Each rewrite here keeps every value the same; readers of a
removed node read its input instead, and nodes nothing reads any more are dropped.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from ..graph import Graph
from ..graph.internal_domain import DOMAIN
from ..graph.pruning import remove_dead_nodes
from ..graph.subgraphs import subgraph_references
from .context import PassContext

# Operators whose result is not a function of their inputs and attributes alone.
_NOT_PURE = {
    "RandomNormal",
    "RandomNormalLike",
    "RandomUniform",
    "RandomUniformLike",
    "Multinomial",
    "Bernoulli",
    "Dropout",
}

# Operators whose result has the broadcast shape of their operands.
_ELEMENTWISE = {
    "Add", "Sub", "Mul", "Div", "Where", "And", "Or", "Xor", "Not", "Cast", "Equal", "Less",
    "Greater", "LessOrEqual", "GreaterOrEqual", "Neg", "Abs",
}  # fmt: skip

_IDENTITY_OPERAND = {"Mul": 1, "Div": 1, "Add": 0, "Sub": 0}  # x op c == x when c is this


def run(graph: Graph, context: PassContext) -> bool:
    """Remove no-ops and merge duplicate nodes until nothing changes."""
    changed_any = False
    for _ in range(20):  # each round removes at least one node: bounded by the graph
        changed = _remove_noops(graph) | _merge_duplicates(graph)
        if not changed:
            break
        changed_any = True
        remove_dead_nodes(graph.model)
        graph.edited()
    return changed_any


def run_empty_parts(graph: Graph, context: PassContext) -> bool:
    """Only drop concatenations with an empty part (before the lifts: Phi-3 concatenates each
    rotary result with the empty rest of a rotary over whole heads, between the query's rotary
    and the key's, which keeps the two from being paired)."""
    protected = _protected(graph)
    changed = False
    for node in list(graph.model.graph.node):
        if node.op_type != "Concat" or node.domain not in ("", "ai.onnx") or len(node.output) != 1:
            continue
        source = _same_as(graph, node, set())
        if source is not None and node.output[0] not in protected:
            _rename_readers(graph, node.output[0], source)
            graph.edited()
            changed = True
    if changed:
        remove_dead_nodes(graph.model)
        graph.edited()
    return changed


def _protected(graph: Graph) -> set[str]:
    """Values that must keep their name: the network's results and what subgraphs read."""
    names = set(graph.outputs)
    for node in graph.model.graph.node:
        for attr in node.attribute:
            bodies = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
            for body in bodies:
                names |= {name for inner in _all_nodes(body) for name in inner.input}
    return names


def _all_nodes(body: onnx.GraphProto):
    for node in body.node:
        yield node
        for attr in node.attribute:
            for inner in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs:
                yield from _all_nodes(inner)


def _rename_readers(graph: Graph, old: str, new: str) -> None:
    for node in graph.consumer_nodes.get(old, ()):
        for index, name in enumerate(node.input):
            if name == old:
                node.input[index] = new


def _remove_noops(graph: Graph) -> bool:
    """Point the readers of every no-op's result at its input (or a simpler node)."""
    protected = _protected(graph)
    all_true = _all_true_values(graph)
    changed = False
    for node in list(graph.model.graph.node):
        if len(node.output) != 1:
            continue
        if _expand_without_true_mask(graph, node, all_true):
            graph.edited()  # first: the expand is what lets the all-true operand go
            changed = True
            continue
        source = _same_as(graph, node, all_true)
        if source is not None and node.output[0] not in protected:
            _rename_readers(graph, node.output[0], source)
            graph.edited()
            changed = True
        elif source is not None and _write_result_at_source(graph, node, source, protected):
            graph.edited()  # Granite's logits / 1.0: the lm_head now writes ``logits`` itself
            changed = True
        elif (
            _fold_pair(graph, node)
            or _drop_zero_bias(graph, node)
            or _keep_mask_bias(graph, node, protected)
        ):
            graph.edited()
            changed = True
    return changed


def _write_result_at_source(
    graph: Graph, node: onnx.NodeProto, source: str, protected: set[str]
) -> bool:
    """A no-op giving a network output: the node making its input writes the output instead,
    when nothing else reads that input; the no-op goes."""
    producer = graph.producers.get(source)
    if (
        producer is None
        or source in protected
        or node.output[0] in graph.inputs
        or [id(n) for n in graph.consumer_nodes.get(source, [])] != [id(node)]
        or graph.dtypes.get(source) != graph.dtypes.get(node.output[0])
    ):
        return False
    producer.output[list(producer.output).index(source)] = node.output[0]
    graph.model.graph.node.remove(node)
    return True


def _drop_zero_bias(graph: Graph, node: onnx.NodeProto) -> bool:
    """Attention adding a bias of zeros (the mask of a model that masks nothing) adds none."""
    if node.domain != DOMAIN or node.op_type != "ScaledDotProductAttention" or len(node.input) < 4:
        return False
    for index in range(3, len(node.input)):
        bias = graph.constant(node.input[index])
        if bias is not None and bias.size and not np.any(bias != 0):
            del node.input[index]
            return True
    return False


def _keep_mask_bias(graph: Graph, node: onnx.NodeProto, protected: set[str]) -> bool:
    """Attention whose bias is ``where(keep, 0, -inf)`` reads the boolean ``keep`` itself when
    it keeps fully masked rows at zero: the script's ``masked_softmax`` takes either mask."""
    if node.domain != DOMAIN or node.op_type != "ScaledDotProductAttention" or len(node.input) != 4:
        return False
    masked_rows = next((a.i for a in node.attribute if a.name == "masked_rows"), 0)
    where = graph.producers.get(node.input[3])
    if not masked_rows or where is None or where.op_type != "Where" or node.input[3] in protected:
        return False
    zero, minus_inf = (graph.constant(name) for name in where.input[1:])
    if graph.dtypes.get(where.input[0]) != np.dtype(bool) or graph.dtypes.get(
        where.output[0]
    ) != np.dtype(np.float32):
        return False
    if zero is None or minus_inf is None or zero.size != 1 or minus_inf.size != 1:
        return False
    if zero.reshape(-1)[0] != 0 or minus_inf.reshape(-1)[0] != -np.inf:
        return False
    node.input[3] = where.input[0]
    return True


def _expand_without_true_mask(graph: Graph, node: onnx.NodeProto, all_true: set[str]) -> bool:
    """``expand(and(all_true, mask), shape)`` reads ``mask`` directly when the ``and`` gave the
    expand's shape anyway: the all-true operand (``arange(n) >= 0``) only widened the mask, and
    the expand widens it the same way. Rewires the expand; True when it did."""
    if node.op_type != "Expand" or node.domain not in ("", "ai.onnx") or not node.input:
        return False
    inner = graph.producers.get(node.input[0])
    if inner is None or inner.op_type != "And" or inner.domain not in ("", "ai.onnx"):
        return False
    readers = graph.consumer_nodes.get(inner.output[0], [])
    if len(readers) != 1 or inner.output[0] in graph.outputs or len(inner.input) != 2:
        return False
    shape = graph.symbolic_shapes.get(node.output[0])
    if shape is None or shape != graph.symbolic_shapes.get(inner.output[0]):
        return False
    for true, mask in (inner.input, inner.input[::-1]):
        if true in all_true and mask not in all_true:
            node.input[0] = mask
            return True
    return False


def _same_as(graph: Graph, node: onnx.NodeProto, all_true: set[str]) -> str | None:
    """The input ``node``'s result equals (same values, shape and dtype), if any."""
    if node.domain not in ("", "ai.onnx"):
        return None
    out = node.output[0]
    inputs = list(node.input)
    if node.op_type == "Cast" and inputs:
        to = next((a.i for a in node.attribute if a.name == "to"), None)
        dtype = graph.dtypes.get(inputs[0])
        if to is not None and dtype is not None and _tensor_dtype(dtype) == to:
            return inputs[0]
        return None
    if node.op_type in _IDENTITY_OPERAND and len(inputs) == 2:
        neutral = _IDENTITY_OPERAND[node.op_type]
        sides = ((0, 1), (1, 0)) if node.op_type in ("Mul", "Add") else ((0, 1),)
        for keep, drop in sides:
            value = graph.constant(inputs[drop])
            if value is not None and value.size and np.all(value == neutral):
                if _broadcasts_into(graph, inputs[drop], inputs[keep]):
                    return inputs[keep]
        return None
    if node.op_type == "And" and len(inputs) == 2:
        for keep, drop in ((0, 1), (1, 0)):
            if inputs[drop] not in all_true:
                continue
            if _broadcasts_into(graph, inputs[drop], inputs[keep]):
                return inputs[keep]
            narrow = graph.symbolic_shapes.get(inputs[keep])
            if narrow is not None and _readers_broadcast(graph, out, narrow):
                return inputs[keep]  # the all-true operand only widened what readers widen
        return None
    if node.op_type == "Where" and len(inputs) == 3 and inputs[0] in all_true:
        chosen = graph.symbolic_shapes.get(inputs[1])
        if chosen is not None and (
            _broadcasts_into(graph, inputs[1], out) and _readers_broadcast(graph, out, chosen)
        ):
            return inputs[1]  # where(all true, a, b) is a, widened only where readers widen it
        return None
    if node.op_type == "Expand" and inputs:
        narrow = graph.symbolic_shapes.get(inputs[0])
        wide = graph.symbolic_shapes.get(out)
        if narrow is not None and wide is not None and len(narrow) == len(wide):
            if _readers_broadcast(graph, out, narrow):
                return inputs[0]  # every reader broadcasts the value as the expand did
        return None
    if node.op_type == "Squeeze" and inputs:
        inner = graph.producers.get(inputs[0])
        if inner is not None and inner.op_type == "Unsqueeze" and inner.domain in ("", "ai.onnx"):
            axes, inner_axes = _axes(graph, node), _axes(graph, inner)
            if axes is not None and axes == inner_axes and _same_type(graph, inner.input[0], out):
                return inner.input[0]
    if node.op_type == "Reshape" and inputs and _same_type(graph, inputs[0], out):
        shape = graph.symbolic_shapes.get(out) or ()
        if all(isinstance(dim, (int, str)) and not isinstance(dim, bool) for dim in shape):
            return inputs[0]  # a view to the shape the value already has
    if node.op_type == "Slice" and _keeps_everything(graph, inputs):
        return inputs[0]  # from the start to a size the value already has (Phi-3's rotary)
    if node.op_type == "Concat" and len(inputs) == 2:
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        for keep, empty in ((0, 1), (1, 0)):
            shape = graph.symbolic_shapes.get(inputs[empty]) or ()
            if not -len(shape) <= axis < len(shape):
                continue
            if shape[axis] == 0 and _same_type(graph, inputs[keep], out):
                return inputs[keep]  # an empty part (the rest of a rotary over a whole head)
        return None
    if node.op_type == "Transpose" and inputs:
        perm = _perm(node)
        if perm is not None and perm == list(range(len(perm))):
            return inputs[0]
        inner = graph.producers.get(inputs[0])
        if inner is not None and inner.op_type == "Transpose" and inner.domain in ("", "ai.onnx"):
            perm = _composed_perm(node, inner)
            if perm is not None and perm == list(range(len(perm))):
                return inner.input[0]
    return None


def _keeps_everything(graph: Graph, inputs: list[str]) -> bool:
    """Whether a Slice provably keeps its whole input: constant zero starts, step 1, and ends
    (constants or sizes shape inference knows as numbers) at least the input's static sizes.
    Symbolic shapes alone do not prove it (onnxruntime's inference of a Slice with computed
    bounds can be wrong)."""
    if len(inputs) < 4 or not inputs[3]:
        return False
    starts, axes = graph.constant(inputs[1]), graph.constant(inputs[3])
    steps = graph.constant(inputs[4]) if len(inputs) > 4 and inputs[4] else None
    ends = graph.constant(inputs[2])
    if ends is None:
        value = graph.symbolic_values.get(inputs[2])
        value = value if isinstance(value, tuple) else (value,)
        if not all(isinstance(v, int) for v in value):
            return False
        ends = np.array(value)
    shape = graph.symbolic_shapes.get(inputs[0])
    if starts is None or axes is None or shape is None or starts.any():
        return False
    if (steps is not None and not (steps == 1).all()) or ends.size != axes.size:
        return False
    for axis, end in zip(axes.reshape(-1), ends.reshape(-1)):
        size = shape[int(axis)] if -len(shape) <= int(axis) < len(shape) else None
        if not isinstance(size, int) or int(end) < size:
            return False
    return True


def _fold_pair(graph: Graph, node: onnx.NodeProto) -> bool:
    """Read past an inner node that the outer one makes pointless: a transpose of a transpose
    becomes one transpose, a reshape of a reshape one reshape."""
    if node.domain not in ("", "ai.onnx") or not node.input:
        return False
    inner = graph.producers.get(node.input[0])
    if inner is None or inner.op_type != node.op_type or inner.domain not in ("", "ai.onnx"):
        return False
    if node.op_type == "Transpose":
        perm = _composed_perm(node, inner)
        if perm is None:
            return False
        node.input[0] = inner.input[0]
        del node.attribute[:]
        node.attribute.append(helper.make_attribute("perm", perm))
        return True
    if node.op_type == "Reshape" and len(node.input) == 2 and _copies_no_dim(graph, node):
        node.input[0] = inner.input[0]
        return True
    return False


def _copies_no_dim(graph: Graph, node: onnx.NodeProto) -> bool:
    """Whether a Reshape's target has no 0 entry (which would copy a size from its input)."""
    shape = graph.constant(node.input[1])
    if shape is None:
        symbolic = graph.symbolic_values.get(node.input[1])
        if not isinstance(symbolic, (list, tuple)):
            return False
        return all(not (isinstance(d, (int, np.integer)) and int(d) == 0) for d in symbolic)
    return bool(np.all(shape != 0))


def _composed_perm(node: onnx.NodeProto, inner: onnx.NodeProto) -> list[int] | None:
    outer, first = _perm(node), _perm(inner)
    if outer is None or first is None or len(outer) != len(first):
        return None
    return [first[axis] for axis in outer]


def _perm(node: onnx.NodeProto) -> list[int] | None:
    for attr in node.attribute:
        if attr.name == "perm":
            return list(attr.ints)
    return None  # reversal by default: rank unknown here


def _axes(graph: Graph, node: onnx.NodeProto) -> tuple[int, ...] | None:
    """Sorted axes of Squeeze/Unsqueeze (attribute before opset 13, input after)."""
    for attr in node.attribute:
        if attr.name == "axes":
            axes = list(attr.ints)
            break
    else:
        value = graph.constant(node.input[1]) if len(node.input) > 1 else None
        if value is None:
            return None
        axes = [int(a) for a in np.ravel(value)]
    rank_value = node.output[0] if node.op_type == "Unsqueeze" else node.input[0]
    rank = len(graph.symbolic_shapes.get(rank_value, ())) or None
    if rank is None and any(a < 0 for a in axes):
        return None
    return tuple(sorted(a % rank if rank else a for a in axes))


def _same_type(graph: Graph, source: str, result: str) -> bool:
    """Whether ``source`` has the dtype and (symbolic) shape of ``result``."""
    dtype, shape = graph.dtypes.get(source), graph.symbolic_shapes.get(source)
    return (
        dtype is not None
        and shape is not None
        and dtype == graph.dtypes.get(result)
        and shape == graph.symbolic_shapes.get(result)
    )


def _broadcasts_into(graph: Graph, operand: str, kept: str) -> bool:
    """Whether broadcasting ``operand`` against ``kept`` leaves ``kept``'s shape as it is."""
    small, big = graph.symbolic_shapes.get(operand), graph.symbolic_shapes.get(kept)
    if small is None or big is None or len(small) > len(big):
        return False
    aligned = big[len(big) - len(small) :]
    return all(dim == 1 or dim == other for dim, other in zip(small, aligned))


def _readers_broadcast(graph: Graph, value: str, narrow: tuple, depth: int = 0) -> bool:
    """Whether every reader of ``value`` would give results of the same shape if ``value`` had
    the ``narrow`` shape (its own with some sizes 1): elementwise readers broadcast it against
    their other operands, and attention adds it to scores of their own full shape."""
    wide = graph.symbolic_shapes.get(value)
    if wide is not None and len(narrow) < len(wide):
        narrow = (1,) * (len(wide) - len(narrow)) + tuple(narrow)
    if (
        depth > 4
        or wide is None
        or len(narrow) != len(wide)
        or any(dim != 1 and dim != other for dim, other in zip(narrow, wide))
        or value in graph.outputs
        or value in subgraph_references(graph.model.graph)  # an If/Loop body reads it as is
    ):
        return False
    readers = graph.consumer_nodes.get(value, [])
    for reader in readers:
        if reader.domain == DOMAIN and reader.op_type == "ScaledDotProductAttention":
            if value in reader.input[3:] and value not in reader.input[:3]:
                continue  # a bias: broadcast into the (batch, heads, query, key) scores
            return False
        if reader.domain not in ("", "ai.onnx") or reader.op_type not in _ELEMENTWISE:
            return False
        result = graph.symbolic_shapes.get(reader.output[0])
        others = [graph.symbolic_shapes.get(name) for name in reader.input if name != value]
        if result is None or any(shape is None for shape in others):
            return False
        shape = _broadcast_shape([narrow, *others])  # type: ignore[list-item]
        if shape is None:
            return False
        if shape != result and not _readers_broadcast(graph, reader.output[0], shape, depth + 1):
            return False
    return bool(readers)


def _broadcast_shape(shapes: list[tuple]) -> tuple | None:
    """The numpy broadcast of symbolic shapes, or None where named sizes might differ."""
    rank = max(len(shape) for shape in shapes)
    result = []
    for axis in range(rank):
        dims = {
            shape[axis - rank + len(shape)]
            for shape in shapes
            if axis - rank + len(shape) >= 0 and shape[axis - rank + len(shape)] != 1
        }
        if len(dims) > 1:
            return None
        result.append(dims.pop() if dims else 1)
    return tuple(result)


def _tensor_dtype(dtype: np.dtype) -> int | None:
    try:
        return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    except (KeyError, TypeError, ValueError):
        return None


def _all_true_values(graph: Graph) -> set[str]:
    """Boolean values known to be all true: constants, ``ones(shape)`` cast to bool, ``v >= 0``
    for a ``v`` that counts up from a non-negative start (``arange``), and unsqueezes, reshapes
    or expands of these."""
    found = {
        name
        for name in graph.initializers
        if graph.dtypes.get(name) == np.bool_ and np.all(graph.constant(name))
    }
    non_negative: set[str] = set()
    non_zero: set[str] = set()
    for node in graph.nodes:
        if node.domain not in ("", "ai.onnx") or not node.outputs:
            continue
        ins = node.inputs
        if node.op_type == "Range" and len(ins) == 3:
            start, delta = graph.constant(ins[0]), graph.constant(ins[2])
            if start is not None and delta is not None and start >= 0 and delta > 0:
                non_negative.add(node.outputs[0])
        elif node.op_type in ("Unsqueeze", "Reshape", "Expand", "Squeeze") and ins:
            for kind in (non_negative, found):
                if ins[0] in kind:
                    kind.add(node.outputs[0])
        elif node.op_type == "GreaterOrEqual" and len(ins) == 2 and ins[0] in non_negative:
            bound = graph.constant(ins[1])
            if bound is not None and np.all(bound <= 0):
                found.add(node.outputs[0])
        elif node.op_type == "ConstantOfShape" and np.all(node.attrs.get("value", 0) != 0):
            non_zero.add(node.outputs[0])  # ones(shape): all true once cast to bool
        elif node.op_type == "Cast" and ins and (ins[0] in non_zero or ins[0] in found):
            if node.attrs.get("to") == onnx.TensorProto.BOOL:
                found.add(node.outputs[0])
    return found


def _merge_duplicates(graph: Graph) -> bool:
    """Compute once what one module computes several times: nodes of one module scope with the
    same operator, attributes and inputs share the first one's results."""
    protected = _protected(graph)
    seen: dict[tuple, onnx.NodeProto] = {}
    changed = False
    for node in graph.model.graph.node:
        if node.op_type in _NOT_PURE or any(
            attr.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
            for attr in node.attribute
        ):
            continue
        if node.domain not in ("", "ai.onnx", DOMAIN):
            continue
        key = (
            node.domain,
            node.op_type,
            tuple(node.input),
            tuple(attr.SerializeToString(deterministic=True) for attr in node.attribute),
            _scope(node),
            # internal nodes (``Dims``) keep their value in a table by output name
            tuple(repr(graph.symbolic_values.get(out)) for out in node.output)
            if node.domain == DOMAIN
            else (),
        )
        first = seen.setdefault(key, node)
        if first is node or any(out in protected for out in node.output):
            continue
        if len(first.output) != len(node.output):
            continue
        for old, new in zip(node.output, first.output):
            if old and new:
                _rename_readers(graph, old, new)
        graph.edited()
        changed = True
    return changed


def _scope(node: onnx.NodeProto) -> str:
    """The module the node belongs to (dynamo metadata or the TorchScript node name's path)."""
    for entry in node.metadata_props:
        if entry.key == "pkg.torch.onnx.name_scopes":
            return entry.value
    return node.name.rsplit("/", 1)[0] if node.name.startswith("/") else ""
