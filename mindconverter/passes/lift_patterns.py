"""Pass: lift decomposed layers back to what a person writes.

Exporters spell some layers out as chains of primitive operators: ``nn.LayerNorm`` below
opset 17 becomes ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add, ``nn.GroupNorm`` with fewer
groups than channels an InstanceNormalization of the groups between two reshapes, GELU an Erf or
Tanh formula, ``nn.Linear`` on a 3-D input MatMul + Add, and ``x.unbind(0)`` a Split (or a
Slice per position) with a Squeeze of each part. This stage runs on the
simplified (constant-folded, shape-inferred) model and replaces each such chain by one node of
the internal domain :data:`DOMAIN` (``LayerNorm``, ``GroupNorm``, ``RMSNorm``, ``Gelu``, ``Silu``,
``Linear``, ``Unbind``), which the mappers in ``mindconverter/mappers/lifted.py`` turn into
``nn.LayerNorm``, ``nn.GroupNorm``, the script's own ``RMSNorm`` cell, ``nn.GELU``,
``ops.silu``, ``nn.Dense`` and ``ops.unbind``.

A chain is lifted only when its structure matches *and* evaluating the chain with onnx's
reference evaluator on test values gives the lifted layer's numbers, so unusual variants
(``x * x`` for ``Pow``, ``Mul(0.7071)`` for ``Div(1.4142)``) are found and near-misses are left
alone. The fused node keeps the name and metadata of the chain's first node, which carry the
source module path the renderer names cells after.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..graph import Graph
from ..graph.evaluator import evaluate_chain
from ..graph.internal_domain import DOMAIN, declare_internal_domain
from ..graph.node import node_attribute, node_axes
from ..graph.size_readers import size_readers
from ..graph.subgraphs import subgraph_references
from ..graph.symbolic import DynamicDimensionError
from ..graph.weight_roles import learned_source
from ..mappers.common import exact_as_scalar
from .context import PassContext

# Elementwise operators that may appear inside a GELU formula.
_GELU_OPS = {"Mul", "Div", "Add", "Sub", "Pow", "Erf", "Tanh", "Sqrt"}
_MAX_GELU_NODES = 14


class _Index:
    """The graph being fused: its constants, shapes and dtypes, plus which chains were replaced."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.model = graph.model
        self.producer: dict[str, onnx.NodeProto] = dict(graph.producers)
        self.consumers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
        for name, readers in graph.consumer_nodes.items():
            self.consumers[name] = list(readers)
        self.pinned = set(graph.outputs) | subgraph_references(graph.model.graph)
        self.shapes = graph.shapes
        self.dtypes = graph.dtypes
        self.dead: set[int] = set()  # id() of nodes removed by a fusion
        self.placed: dict[int, onnx.NodeProto] = {}  # id() of a chain's last node -> fused node

    def const(self, name: str) -> np.ndarray | None:
        return self.graph.constant(name)

    def scalar(self, name: str) -> float | None:
        value = self.const(name)
        if value is None or value.size != 1 or value.dtype.kind not in "fiu":
            return None
        return float(value.reshape(-1)[0])

    def sole_consumer(self, name: str, op_types: tuple[str, ...]) -> onnx.NodeProto | None:
        """The one live node reading ``name`` (of one of ``op_types``), if the value feeds nothing else."""
        if name in self.pinned:
            return None
        readers = self.live_readers(name)
        if (
            len(readers) != 1
            or readers[0].op_type not in op_types
            or readers[0].domain not in ("", "ai.onnx")
        ):
            return None
        return readers[0]

    def live_readers(self, name: str) -> list[onnx.NodeProto]:
        """Each live node reading ``name`` once (``Mul(d, d)`` reads it twice)."""
        unique = {
            id(node): node for node in self.consumers.get(name, []) if id(node) not in self.dead
        }
        return list(unique.values())

    def other_input(self, node: onnx.NodeProto, name: str) -> str | None:
        """For a binary node reading ``name``, the other operand's name."""
        if len(node.input) != 2:
            return None
        if node.input[0] == name:
            return node.input[1]
        if node.input[1] == name:
            return node.input[0]
        return None

    def fuse(self, chain: list[onnx.NodeProto], fused: onnx.NodeProto) -> None:
        """Replace ``chain`` (first node first, output node last) by ``fused``."""
        first = chain[0]
        fused.name = first.name
        for entry in first.metadata_props:
            fused.metadata_props.add().CopyFrom(entry)
        for node in chain:
            self.dead.add(id(node))
        self.placed[id(chain[-1])] = fused
        for name in fused.input:
            if name:
                self.consumers[name].append(fused)
        for out in fused.output:
            self.producer[out] = fused

    def evaluate(
        self, nodes: list[onnx.NodeProto], x_name: str, x_value: np.ndarray, out: str
    ) -> np.ndarray | None:
        """Run ``nodes`` on ``x_value`` for input ``x_name`` with the graph's constants."""
        feeds_needed = {name for node in nodes for name in node.input if name and name != x_name}
        inits = self.graph.initializers
        produced = {o for node in nodes for o in node.output}
        if any(name not in produced and name not in inits for name in feeds_needed):
            return None
        needed = [inits[name] for name in sorted(feeds_needed) if name in inits]
        return evaluate_chain(nodes, x_name, x_value, out, needed, self.graph.opsets.get("", 17))


def _close(actual: np.ndarray | None, expected: np.ndarray, dtype: np.dtype) -> bool:
    if actual is None or actual.size != expected.size:
        return False
    tol = 1e-2 if np.dtype(dtype).itemsize < 4 else 1e-4
    actual = actual.astype(np.float64).reshape(-1)
    expected = expected.astype(np.float64).reshape(-1)
    scale = max(1.0, float(np.max(np.abs(expected))))
    return (
        bool(np.all(np.isfinite(actual)))
        and float(np.max(np.abs(actual - expected))) <= tol * scale
    )


def _float_dtype(index: _Index, name: str) -> np.dtype | None:
    dtype = index.dtypes.get(name)
    if dtype is None or dtype.kind != "f":
        return None
    return dtype


# --- GELU ---------------------------------------------------------------------------------


def _gelu_reference(x: np.ndarray, approximate: str) -> np.ndarray:
    x = x.astype(np.float64)
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def _gelu_candidates(index: _Index, core: onnx.NodeProto):
    """(x, output node) pairs the outer ``0.5 * x * (1 + core)`` structure allows."""
    add = index.sole_consumer(core.output[0], ("Add",))
    if add is None:
        return
    one = index.other_input(add, core.output[0])
    if one is None or index.scalar(one) != 1.0:
        return
    t = add.output[0]
    m1 = index.sole_consumer(t, ("Mul",))
    if m1 is None:
        return
    other = index.other_input(m1, t)
    if other is None:
        return
    half = index.scalar(other)
    if half is not None:  # (t * 0.5) * x
        m2 = index.sole_consumer(m1.output[0], ("Mul",))
        if m2 is not None:
            x = index.other_input(m2, m1.output[0])
            if x is not None and index.const(x) is None:
                yield x, m2
        return
    producer = index.producer.get(other)
    if (
        producer is not None
        and producer.op_type == "Mul"
        and index.sole_consumer(other, ("Mul",)) is m1
    ):
        for a, b in (producer.input[0], producer.input[1]), (producer.input[1], producer.input[0]):
            if index.scalar(b) is not None and index.const(a) is None:
                yield a, m1  # (x * 0.5) * t
    m2 = index.sole_consumer(m1.output[0], ("Mul", "Div"))
    if m2 is not None:  # (x * t) * 0.5
        yield other, m2
    yield other, m1  # x * t with the 0.5 folded elsewhere is not GELU; the numeric check says so


def _gelu_region(index: _Index, out_node: onnx.NodeProto, x: str) -> list[onnx.NodeProto] | None:
    """The nodes computing ``out_node`` from ``x`` and scalar constants, in graph order."""
    region: dict[int, onnx.NodeProto] = {}
    stack = [out_node]
    while stack:
        node = stack.pop()
        if id(node) in region:
            continue
        if (
            node.op_type not in _GELU_OPS
            or node.domain not in ("", "ai.onnx")
            or id(node) in index.dead
        ):
            return None
        region[id(node)] = node
        if len(region) > _MAX_GELU_NODES:
            return None
        for name in node.input:
            if name == x:
                continue
            value = index.const(name)
            if value is not None:
                if value.size != 1:
                    return None
                continue
            producer = index.producer.get(name)
            if producer is None:
                return None
            stack.append(producer)
    members = set(region)
    for node in region.values():
        if node is out_node:
            continue
        for out in node.output:
            if out in index.pinned or any(id(r) not in members for r in index.live_readers(out)):
                return None
    order = {id(node): pos for pos, node in enumerate(index.model.graph.node)}
    return sorted(region.values(), key=lambda node: order.get(id(node), 0))


def _lift_gelus(index: _Index) -> int:
    count = 0
    for core in list(index.model.graph.node):
        if core.op_type not in ("Erf", "Tanh") or id(core) in index.dead:
            continue
        approximate = "none" if core.op_type == "Erf" else "tanh"
        for x, out_node in list(_gelu_candidates(index, core)):
            dtype = _float_dtype(index, x)
            if dtype is None:
                continue
            region = _gelu_region(index, out_node, x)
            if (
                region is None
                or core not in region
                or sum(n.op_type in ("Erf", "Tanh") for n in region) != 1
            ):
                continue
            if not any(x in node.input for node in region if node.op_type == "Mul"):
                continue
            probe = np.linspace(-6.0, 6.0, 97).astype(dtype)
            if not _close(
                index.evaluate(region, x, probe, out_node.output[0]),
                _gelu_reference(probe, approximate),
                dtype,
            ):
                continue
            fused = helper.make_node(
                "Gelu", [x], [out_node.output[0]], domain=DOMAIN, approximate=approximate
            )
            index.fuse(region, fused)
            count += 1
            break
    return count


# --- LayerNorm ----------------------------------------------------------------------------


def _reduce_axes(index: _Index, node: onnx.NodeProto, rank: int) -> tuple[int, ...] | None:
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if int(attrs.get("keepdims", 1)) != 1:
        return None
    if "axes" in attrs:
        axes = list(attrs["axes"])
    elif len(node.input) > 1 and node.input[1]:
        value = index.const(node.input[1])
        if value is None:
            return None
        axes = [int(v) for v in value.reshape(-1)]
    else:
        return None  # all axes (or noop_with_empty_axes): not a layer norm
    if not axes:
        return None
    return tuple(sorted(a + rank if a < 0 else a for a in axes))


def _lift_layer_norms(index: _Index) -> int:
    return _lift_norms(index, ("ReduceMean",), _match_layer_norm)


def _lift_norms(index: _Index, first_ops: tuple[str, ...], match: Callable) -> int:
    """Lift every chain ``match(index, first, x, shape, dtype)`` finds from a node of
    ``first_ops`` reading ``x``, a float value of known rank."""
    count = 0
    for first in list(index.model.graph.node):
        if first.op_type not in first_ops or id(first) in index.dead or not first.input:
            continue
        x = first.input[0]
        shape, dtype = index.graph.dims(x), _float_dtype(index, x)
        if shape is None or dtype is None:
            continue
        try:
            lifted = match(index, first, x, shape, dtype)
        except DynamicDimensionError:  # normalizes over a dynamic axis: no layer for it
            continue
        if lifted is not None:
            index.fuse(*lifted)
            count += 1
    return count


def _match_layer_norm(
    index: _Index, first: onnx.NodeProto, x: str, shape: tuple[int, ...], dtype: np.dtype
):
    rank = len(shape)
    axes = _reduce_axes(index, first, rank)
    if axes is None or axes != tuple(range(rank - len(axes), rank)):
        return None
    begin = axes[0]
    sub = index.sole_consumer(first.output[0], ("Sub",))
    if sub is None or list(sub.input) != [x, first.output[0]]:
        return None
    d = sub.output[0]
    readers = index.live_readers(d)
    if d in index.pinned or len(readers) != 2:
        return None
    square = next(
        (
            n
            for n in readers
            if n.op_type == "Pow" or (n.op_type == "Mul" and list(n.input) == [d, d])
        ),
        None,
    )
    if square is None or (
        square.op_type == "Pow" and (square.input[0] != d or index.scalar(square.input[1]) != 2.0)
    ):
        return None
    divide = next((n for n in readers if n is not square), None)
    second = index.sole_consumer(square.output[0], ("ReduceMean",))
    if second is None or _reduce_axes(index, second, rank) != axes:
        return None
    add_eps = index.sole_consumer(second.output[0], ("Add",))
    eps_name = index.other_input(add_eps, second.output[0]) if add_eps is not None else None
    eps = index.scalar(eps_name) if eps_name else None
    if eps is None or eps < 0:
        return None
    sqrt = index.sole_consumer(add_eps.output[0], ("Sqrt",))
    if sqrt is None:
        return None
    chain = [first, sub, square, second, add_eps, sqrt]
    if divide.op_type == "Div" and list(divide.input) == [d, sqrt.output[0]]:
        if index.sole_consumer(sqrt.output[0], ("Div",)) is not divide:
            return None
        chain.append(divide)
    elif divide.op_type == "Mul":
        recip = index.sole_consumer(sqrt.output[0], ("Reciprocal",))
        if recip is None or index.sole_consumer(recip.output[0], ("Mul",)) is not divide:
            return None
        if index.other_input(divide, d) != recip.output[0]:
            return None
        chain += [recip, divide]
    else:
        return None
    normalized_shape = tuple(int(v) for v in shape[begin:])
    out = chain[-1].output[0]
    gamma = beta = ""
    mul = index.sole_consumer(out, ("Mul",))
    if mul is not None:
        name = index.other_input(mul, out)
        if name and _is_param(index, name, normalized_shape, rank):
            gamma, out = name, mul.output[0]
            chain.append(mul)
    add = index.sole_consumer(out, ("Add",))
    if add is not None:
        name = index.other_input(add, out)
        if name and _is_param(index, name, normalized_shape, rank):
            beta, out = name, add.output[0]
            chain.append(add)
    probe_shape = (1,) * begin + normalized_shape
    rng = np.random.default_rng(0)
    probe = (rng.standard_normal(probe_shape) * 3 + 1).astype(dtype)
    expected = _layer_norm_reference(
        probe,
        begin,
        eps,
        index.const(gamma) if gamma else None,
        index.const(beta) if beta else None,
    )
    if not _close(index.evaluate(chain, x, probe, out), expected, dtype):
        return None
    fused = helper.make_node(
        "LayerNorm", [x, gamma, beta], [out], domain=DOMAIN, axis=begin, epsilon=eps
    )
    while fused.input and not fused.input[-1]:
        fused.input.pop()
    return chain, fused


def _is_param(index: _Index, name: str, normalized_shape: tuple[int, ...], rank: int) -> bool:
    """A float constant that broadcasts along the normalized axes only."""
    value = index.const(name)
    if value is None or value.dtype.kind != "f" or value.ndim > rank:
        return False
    trimmed = value.shape
    while len(trimmed) > len(normalized_shape):
        if trimmed[0] != 1:
            return False
        trimmed = trimmed[1:]
    try:
        return np.broadcast_shapes(trimmed, normalized_shape) == normalized_shape
    except ValueError:
        return False


def _layer_norm_reference(x, begin, eps, gamma, beta):
    x = x.astype(np.float64)
    axes = tuple(range(begin, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y


# --- RMSNorm ------------------------------------------------------------------------------


def _lift_group_norms(index: _Index) -> int:
    return _lift_norms(index, ("Reshape",), _match_group_norm)


# elements of the input the group norm check runs on (a static export's own sizes)
_PROBE_LIMIT = 1 << 22


def _match_group_norm(index: _Index, first: onnx.NodeProto, x: str, shape: tuple, dtype: np.dtype):
    """``nn.GroupNorm(G, C)`` as exporters write it (G <= C): a reshape to (N, G, -1), an
    InstanceNormalization with unit scale and zero bias, a reshape back to the input's shape,
    then the affine ``* weight + bias`` per channel. The weight and bias are the layer's own
    (trainable, named by the source), not constants of the network."""
    norm = index.sole_consumer(first.output[0], ("InstanceNormalization",))
    if norm is None or len(shape) < 3 or not isinstance(shape[1], (int, np.integer)):
        return None
    scale = index.const(norm.input[1]) if len(norm.input) > 1 else None
    shift = index.const(norm.input[2]) if len(norm.input) > 2 else None
    channels, groups = int(shape[1]), scale.size if scale is not None else 0
    if not groups or shift is None or channels % groups:
        return None
    if not (np.all(scale == 1) and np.all(shift == 0)) or index.graph.dims(first.output[0]) is None:
        return None
    back = index.sole_consumer(norm.output[0], ("Reshape",))
    if back is None or index.graph.dims(back.output[0]) != index.graph.dims(x):
        return None
    chain, out, params = [first, norm, back], back.output[0], []
    for op in ("Mul", "Add"):
        node = index.sole_consumer(out, (op,))
        name = index.other_input(node, out) if node is not None else None
        if name is None or not _is_param(
            index, name, (channels, *[1] * (len(shape) - 2)), len(shape)
        ):
            return None
        chain.append(node)
        params.append(name)
        out = node.output[0]
    eps = float(node_attribute(norm, "epsilon", 1e-5))
    # a fixed size stays that size: a static export's reshapes read it as a constant
    sizes = [d if isinstance(d, (int, np.integer)) else 3 for d in shape]
    sizes[0] = shape[0] if isinstance(shape[0], (int, np.integer)) else 2
    if math.prod(sizes) > _PROBE_LIMIT:
        return None
    probe = np.random.default_rng(0).standard_normal(sizes)
    probe = (probe * 3 + 1).astype(dtype)
    grouped = probe.reshape(sizes[0], groups, -1)
    mean, var = grouped.mean(-1, keepdims=True), grouped.var(-1, keepdims=True)
    expected = ((grouped - mean) / np.sqrt(var + eps)).reshape(probe.shape)
    expected = expected * index.const(params[0]) + index.const(params[1])
    shape_reader = index.producer.get(back.input[1])
    evaluated = [*chain[:2], *([shape_reader] if shape_reader is not None else []), *chain[2:]]
    if not _close(index.evaluate(evaluated, x, probe, out), expected, dtype):
        return None
    fused = helper.make_node(
        "GroupNorm", [x, *params], [out], domain=DOMAIN, num_groups=groups, epsilon=eps
    )
    return chain, fused


def _lift_unbinds(index: _Index) -> int:
    """``q, k, v = qkv.unbind(0)`` as exporters write it: a Split into parts of one (TorchScript)
    or a Slice of each position (dynamo), each part read only by a Squeeze of that axis -> one
    ``Unbind`` node whose outputs are the squeezed parts (``ops.unbind``)."""
    count = 0
    parts_of: dict[tuple[str, int], dict[int, onnx.NodeProto]] = defaultdict(dict)
    for node in list(index.model.graph.node):
        if id(node) in index.dead or node.domain not in ("", "ai.onnx") or not node.input:
            continue
        if node.op_type == "Split":
            lifted = _unbind_split(index, node)
            if lifted is not None:
                index.fuse(*lifted)
                count += 1
        elif node.op_type == "Slice":
            found = _single_position(index, node)
            if found is not None:
                parts_of[(node.input[0], found[0])][found[1]] = node
    for (source, axis), slices in parts_of.items():
        size = (index.graph.dims(source) or ())[axis : axis + 1]
        if not size or not isinstance(size[0], (int, np.integer)) or size[0] < 2:
            continue
        if set(slices) != set(range(int(size[0]))):  # every position, each once
            continue
        parts = [slices[position] for position in range(int(size[0]))]
        squeezes = [_squeezed(index, part, axis) for part in parts]
        if any(squeeze is None for squeeze in squeezes):
            continue
        order = {id(node): at for at, node in enumerate(index.model.graph.node)}
        chain = sorted(parts + squeezes, key=lambda node: -order[id(node)])  # first node last
        outputs = [squeeze.output[0] for squeeze in squeezes]
        index.fuse(chain, helper.make_node("Unbind", [source], outputs, domain=DOMAIN, axis=axis))
        count += 1
    return count


def _unbind_split(index: _Index, split: onnx.NodeProto):
    """A Split of an axis into parts of one, each only squeezed: (chain, fused node)."""
    rank = len(index.graph.dims(split.input[0]) or ())
    axis = node_attribute(split, "axis", 0) % max(rank, 1)
    shapes = [index.graph.dims(out) for out in split.output]
    if rank == 0 or len(split.output) < 2 or any(not s or s[axis] != 1 for s in shapes):
        return None
    squeezes = [_squeezed(index, split, axis, out) for out in split.output]
    if any(squeeze is None for squeeze in squeezes):
        return None
    fused = helper.make_node(
        "Unbind", [split.input[0]], [q.output[0] for q in squeezes], domain=DOMAIN, axis=axis
    )
    return [*squeezes, split], fused


def _single_position(index: _Index, node: onnx.NodeProto) -> tuple[int, int] | None:
    """(axis, position) of a Slice keeping one position of one axis (``x[1:2]``)."""
    rank = len(index.graph.dims(node.input[0]) or ())
    bounds = _one_axis_slice(index, node)
    if rank == 0 or bounds is None:
        return None
    axis, start, end, step = bounds
    if step != 1 or start < 0 or end != start + 1:
        return None
    return axis % rank, start


def _one_axis_slice(index: _Index, node: onnx.NodeProto) -> tuple[int, int, int, int] | None:
    """``(axis, start, end, step)`` of a Slice of one axis whose bounds are constants (ONNX's
    defaults where axes or steps are not given: axis 0, step 1); None otherwise."""
    if node.op_type != "Slice" or len(node.input) < 3:
        return None
    bounds = []
    for position, default in ((1, None), (2, None), (3, 0), (4, 1)):
        name = node.input[position] if position < len(node.input) else ""
        value = index.const(name) if name else None
        if name and (value is None or value.size != 1):
            return None  # computed, or more than one axis
        if not name and default is None:
            return None
        bounds.append(int(value.reshape(-1)[0]) if value is not None else default)
    start, end, axis, step = bounds
    return axis, start, end, step


def _squeezed(index: _Index, node: onnx.NodeProto, axis: int, value: str = ""):
    """The one Squeeze of ``axis`` reading ``node``'s output (``value``), else None."""
    squeeze = index.sole_consumer(value or node.output[0], ("Squeeze",))
    if squeeze is None:
        return None
    rank = len(index.graph.dims(squeeze.input[0]) or ())
    axes = node_axes(squeeze, index.const)
    return squeeze if axes is not None and [a % rank for a in axes] == [axis] else None


def _lift_rms_norms(index: _Index) -> int:
    return _lift_norms(index, ("Pow", "Mul"), _match_rms_norm)


def _match_rms_norm(
    index: _Index, square: onnx.NodeProto, x: str, shape: tuple[int, ...], dtype: np.dtype
):
    """``x * 1/sqrt(mean(x², last axis) + eps) * weight`` (or ``x / sqrt(...)``), the way
    Llama-family models normalize."""
    if not shape:
        return None
    if square.op_type == "Pow" and index.scalar(square.input[1]) != 2.0:
        return None
    if square.op_type == "Mul" and list(square.input) != [x, x]:
        return None
    rank = len(shape)
    mean = index.sole_consumer(square.output[0], ("ReduceMean",))
    if mean is None or _reduce_axes(index, mean, rank) != (rank - 1,):
        return None
    add_eps = index.sole_consumer(mean.output[0], ("Add",))
    eps_name = index.other_input(add_eps, mean.output[0]) if add_eps is not None else None
    eps = index.scalar(eps_name) if eps_name else None
    if eps is None or eps < 0:
        return None
    sqrt = index.sole_consumer(add_eps.output[0], ("Sqrt",))
    if sqrt is None:
        return None
    chain = [square, mean, add_eps, sqrt]
    scale = _rms_scaling(index, x, sqrt.output[0], chain)
    if scale is None:
        return None
    hidden = int(shape[-1])
    out, gamma = scale.output[0], ""
    mul = index.sole_consumer(out, ("Mul",))
    if mul is not None:
        name = index.other_input(mul, out)
        if name and _is_param(index, name, (hidden,), rank):
            gamma, out = name, mul.output[0]
            chain.append(mul)
    probe = np.random.default_rng(0).standard_normal((1,) * (rank - 1) + (hidden,)) * 3 + 1
    probe = probe.astype(dtype)
    expected = probe.astype(np.float64) / np.sqrt((probe.astype(np.float64) ** 2).mean(-1) + eps)
    if gamma:
        expected = expected * index.const(gamma)
    if not _close(index.evaluate(chain, x, probe, out), expected, dtype):
        return None
    fused = helper.make_node("RMSNorm", [x, gamma], [out], domain=DOMAIN, epsilon=eps)
    if not gamma:
        fused.input.pop()
    return chain, fused


def _rms_scaling(
    index: _Index, x: str, root: str, chain: list[onnx.NodeProto]
) -> onnx.NodeProto | None:
    """The node dividing ``x`` by ``root`` (``Div``, or ``Mul`` by its ``Reciprocal`` or
    ``1 / root``), appended to ``chain`` with what leads to it."""
    reader = index.sole_consumer(root, ("Div", "Reciprocal"))
    if reader is None:
        return None
    if reader.op_type == "Div" and list(reader.input) == [x, root]:
        chain.append(reader)
        return reader
    if reader.op_type == "Div" and index.scalar(reader.input[0]) == 1.0:
        inverse = reader
    elif reader.op_type == "Reciprocal":
        inverse = reader
    else:
        return None
    mul = index.sole_consumer(inverse.output[0], ("Mul",))
    if mul is None or index.other_input(mul, inverse.output[0]) != x:
        return None
    chain += [inverse, mul]
    return mul


# --- rotate_half ---------------------------------------------------------------------------


def _lift_rotate_halves(index: _Index) -> int:
    count = 0
    for concat in list(index.model.graph.node):
        if concat.op_type != "Concat" or id(concat) in index.dead or len(concat.input) != 2:
            continue
        try:
            lifted = _match_rotate_half(index, concat)
        except DynamicDimensionError:  # a last axis sized at run time
            continue
        if lifted is not None:
            chain, fused = lifted
            index.fuse(chain, fused)
            count += 1
    return count


def _match_rotate_half(index: _Index, concat: onnx.NodeProto):
    """``concat((-x[..., h:], x[..., :h]), -1)`` with ``h`` half the last axis: rotary
    embeddings' ``rotate_half``."""
    negate = index.producer.get(concat.input[0])
    low = index.producer.get(concat.input[1])
    if negate is None or low is None or negate.op_type != "Neg" or low.op_type != "Slice":
        return None
    high = index.producer.get(negate.input[0])
    if high is None or high.op_type != "Slice" or high.input[0] != low.input[0]:
        return None
    x = low.input[0]
    shape, dtype = index.graph.dims(x), _float_dtype(index, x)
    if shape is None or dtype is None or not shape or int(shape[-1]) % 2:
        return None
    for node in (negate, low):
        if index.sole_consumer(node.output[0], ("Concat",)) is not concat:
            return None
    if index.sole_consumer(high.output[0], ("Neg",)) is not negate:
        return None
    chain = [low, high, negate, concat]
    half = int(shape[-1]) // 2
    probe = np.random.default_rng(0).standard_normal((1,) * (len(shape) - 1) + (2 * half,))
    probe = probe.astype(dtype)
    expected = np.concatenate((-probe[..., half:], probe[..., :half]), axis=-1)
    if not _close(index.evaluate(chain, x, probe, concat.output[0]), expected, dtype):
        return None
    return chain, helper.make_node("RotateHalf", [x], [concat.output[0]], domain=DOMAIN)


# --- rotate_every_two (GPT-J, CodeGen) ------------------------------------------------------


def _lift_rotate_every_two(index: _Index) -> int:
    count = 0
    for reshape in list(index.model.graph.node):
        if reshape.op_type != "Reshape" or id(reshape) in index.dead:
            continue
        lifted = _match_rotate_every_two(index, reshape)
        if lifted is not None:
            index.fuse(*lifted)
            count += 1
    return count


def _match_rotate_every_two(index: _Index, reshape: onnx.NodeProto):
    """``stack((-x[..., 1::2], x[..., ::2]), -1)`` flattened back to ``x``'s shape: the turn of
    interleaved pairs GPT-J's rotary embeddings make (``rotate_every_two``), exported as two
    step-2 slices, a Neg, two Unsqueezes, a Concat and a Reshape."""
    concat = index.producer.get(reshape.input[0])
    if concat is None or concat.op_type != "Concat" or len(concat.input) != 2:
        return None
    ups = [index.producer.get(name) for name in concat.input]
    if any(node is None or node.op_type != "Unsqueeze" for node in ups):
        return None
    negate, even = (index.producer.get(node.input[0]) for node in ups)
    if negate is None or negate.op_type != "Neg" or even is None or even.op_type != "Slice":
        return None
    odd = index.producer.get(negate.input[0])
    if odd is None or odd.op_type != "Slice" or odd.input[0] != even.input[0]:
        return None
    links = [(even, ups[1]), (odd, negate), (negate, ups[0]), (ups[0], concat), (ups[1], concat)]
    if any(index.sole_consumer(a.output[0], (b.op_type,)) is not b for a, b in links):
        return None
    sizing = _sizes_only_for(index, concat.output[0], reshape)  # TorchScript's flatten(-2)
    if sizing is None:
        return None
    x = even.input[0]
    shape, dtype = _shape_of(index, x), _float_dtype(index, x)
    if dtype is None or not shape or not isinstance(shape[-1], int) or shape[-1] % 2:
        return None
    if _shape_of(index, reshape.output[0]) != shape:
        return None  # the reshape must merge the pairs back into the last axis alone
    chain = [even, odd, negate, ups[0], ups[1], concat]
    probe = np.random.default_rng(0).standard_normal((1,) * (len(shape) - 1) + (shape[-1],))
    probe = probe.astype(dtype)
    expected = np.stack((-probe[..., 1::2], probe[..., ::2]), axis=-1)
    if not _close(index.evaluate(chain, x, probe, concat.output[0]), expected, dtype):
        return None
    fused = helper.make_node("RotateEveryTwo", [x], [reshape.output[0]], domain=DOMAIN)
    return [*chain, *sizing, reshape], fused


# operators that compute sizes from sizes (what a Shape node's result flows through)
_SIZE_OPS = {"Shape", "Gather", "Slice", "Concat", "Squeeze", "Unsqueeze", "Cast", "Mul", "Div"}


def _sizes_only_for(index: _Index, name: str, reader: onnx.NodeProto) -> list | None:
    """The nodes besides ``reader`` that read ``name`` only to compute ``reader``'s other
    inputs (a Shape and the arithmetic on its sizes), which go when ``reader`` does; None
    when something else reads ``name`` or those sizes."""
    return size_readers(name, reader, index.live_readers, index.pinned, (), _SIZE_OPS)


def _lift_rotary_applications(index: _Index) -> int:
    """``x * cos + rotate_half(x) * sin`` (Add of two Muls, one reading a lifted RotateHalf of
    the other's ``x``) -> one ``ApplyRotary(x, cos, sin)`` node, written as that one line."""
    count = 0
    for add in list(index.model.graph.node):
        if add.op_type != "Add" or id(add) in index.dead or len(add.input) != 2:
            continue
        products = [index.producer.get(name) for name in add.input]
        if any(p is None or p.op_type != "Mul" or id(p) in index.dead for p in products):
            continue
        for plain, turned in (products, products[::-1]):
            lifted = _match_rotary(index, add, plain, turned)
            if lifted is not None:
                index.fuse(*lifted)
                count += 1
                break
    return count


def _match_rotary(index: _Index, add, plain, turned):
    rotate = None
    for position in (0, 1):
        node = index.producer.get(turned.input[position])
        if node is not None and node.op_type in _TURNS and node.domain == DOMAIN:
            rotate, sin = node, turned.input[1 - position]
    if rotate is None:
        return None
    x = rotate.input[0]
    if x not in plain.input:
        return None
    cos = plain.input[1] if plain.input[0] == x else plain.input[0]
    for node, reader in ((plain, add), (turned, add), (rotate, turned)):
        if index.sole_consumer(node.output[0], (reader.op_type,)) is not reader:
            if not (node is rotate and index.live_readers(node.output[0]) == [turned]):
                return None
    fused = helper.make_node("ApplyRotary", [x, cos, sin], [add.output[0]], domain=DOMAIN)
    if rotate.op_type == "RotateEveryTwo":
        fused.attribute.append(helper.make_attribute("interleaved", 1))
    return [rotate, plain, turned, add], fused


# the lifted turns a rotary embedding applies: halves swapped, or interleaved pairs (GPT-J)
_TURNS = ("RotateHalf", "RotateEveryTwo")


def _interleaved(node: onnx.NodeProto) -> int:
    return next((a.i for a in node.attribute if a.name == "interleaved"), 0)


def _pair_rotary_applications(index: _Index) -> int:
    """Two ``ApplyRotary`` nodes turning the query and the key by the same ``cos`` and ``sin``
    -> one ``ApplyRotaryPair(q, k, cos, sin)``, written as mindnlp writes it:
    ``q, k = apply_rotary_pos_emb(q, k, cos, sin)``. The pair runs where the later of the two
    ran; nothing may read the earlier one's result in between."""
    position = _positions(index)
    groups: dict[tuple[str, str, str, int], list] = defaultdict(list)
    for node in index.placed.values():
        if node.op_type == "ApplyRotary" and node.domain == DOMAIN and id(node) not in index.dead:
            groups[(node.input[1], node.input[2], _scope(node), _interleaved(node))].append(node)
    count = 0
    for nodes in groups.values():
        if len(nodes) != 2 or nodes[0].output[0] in index.pinned:
            continue
        first, second = sorted(nodes, key=lambda node: position[id(node)])
        readers = index.live_readers(first.output[0])
        if any(position.get(id(reader), -1) <= position[id(second)] for reader in readers):
            continue
        query, key = first, second
        if (
            _feeds_scores_as(index, second.output[0])
            == 0
            != _feeds_scores_as(index, first.output[0])
        ):
            query, key = second, first  # q before k in the call, whichever ran first (CodeGen)
        inputs = [query.input[0], key.input[0], first.input[1], first.input[2]]
        outputs = [query.output[0], key.output[0]]
        pair = helper.make_node("ApplyRotaryPair", inputs, outputs, domain=DOMAIN)
        pair.attribute.extend(a for a in first.attribute if a.name == "interleaved")
        index.fuse([first, second], pair)
        count += 1
    return count


def _absorb_table_unsqueezes(index: _Index) -> int:
    """``apply_rotary_pos_emb(q, k, cos.unsqueeze(1), sin.unsqueeze(1))`` with the tables
    unsqueezed only for it (Gemma-3's attention, each layer kind its own tables) ->
    ``apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1)``, as transformers writes it.
    Not when other pairs share their unsqueezed tables (Gemma-3's five sliding layers): the
    one global layer then unsqueezes its tables as they do, so all layers stay one class."""
    pairs = [
        pair
        for pair in index.placed.values()
        if pair.op_type == "ApplyRotaryPair"
        and pair.domain == DOMAIN
        and id(pair) not in index.dead
    ]
    for pair in pairs:
        for name in pair.input[2:4]:
            made = index.producer.get(name)
            if _unsqueeze_axis(index, made) is not None and len(index.live_readers(name)) > 1:
                return 0
    count = 0
    for pair in pairs:
        if node_attribute(pair, "rotary_dim", 0) or node_attribute(pair, "interleaved", 0):
            continue
        unsqueezes = [index.producer.get(name) for name in pair.input[2:4]]
        axes = {_unsqueeze_axis(index, node) for node in unsqueezes}
        if len(axes) != 1 or None in axes or len({id(node) for node in unsqueezes}) != 2:
            continue
        if any(
            node.output[0] in index.pinned or index.live_readers(node.output[0]) != [pair]
            for node in unsqueezes
        ):
            continue
        inputs = [*pair.input[:2], unsqueezes[0].input[0], unsqueezes[1].input[0]]
        fused = helper.make_node("ApplyRotaryPair", inputs, list(pair.output), domain=DOMAIN)
        fused.attribute.extend(a for a in pair.attribute if a.name != "unsqueeze_dim")
        fused.attribute.append(helper.make_attribute("unsqueeze_dim", axes.pop()))
        index.fuse([*unsqueezes, pair], fused)  # runs where the pair ran
        count += 1
    return count


def _unsqueeze_axis(index: _Index, node: onnx.NodeProto | None) -> int | None:
    """The one axis a live Unsqueeze adds, counted in its result's rank; None otherwise."""
    if node is None or node.op_type != "Unsqueeze" or node.domain not in ("", "ai.onnx"):
        return None
    if id(node) in index.dead:
        return None
    axes = node_axes(node, index.const)
    rank = len(index.graph.symbolic_shapes.get(node.output[0]) or ())
    if not axes or len(axes) != 1 or not rank:
        return None
    return axes[0] % rank


def _feeds_scores_as(index: _Index, name: str) -> int | None:
    """Which input of the score product a turned value becomes, through a few reshapes,
    transposes, scales and a cache concatenation: 0 for the query, 1 for the key; None when
    no product is found."""
    frontier = [name]
    for _ in range(5):
        following = []
        for value in frontier:
            for reader in index.live_readers(value):
                if reader.op_type == "MatMul":
                    return list(reader.input).index(value)
                if reader.op_type in ("Transpose", "Reshape", "Concat", "Mul", "Div"):
                    following.extend(reader.output[:1])
        frontier = following
    return None


def _fold_partial_rotaries(index: _Index) -> int:
    """GPT-NeoX's partial rotary: a pair turning the first ``r`` features of the query and the
    key (``q[..., :r]``), each concatenated back with its untouched rest (``q[..., r:]``) ->
    one ``ApplyRotaryPair(q, k, cos, sin, rotary_dim=r)``, written
    ``q, k = apply_partial_rotary_pos_emb(q, k, cos, sin, 4)``."""
    position = _positions(index)
    count = 0
    for pair in list(index.placed.values()):
        if pair.op_type != "ApplyRotaryPair" or pair.domain != DOMAIN or id(pair) in index.dead:
            continue
        if any(a.name == "rotary_dim" for a in pair.attribute):
            continue
        q_part, k_part = (_partial_rotation(index, pair, side) for side in (0, 1))
        if q_part is None or k_part is None or q_part[3] != k_part[3]:
            continue
        (q, q_slices, q_concat, dim), (k, k_slices, k_concat, _) = q_part, k_part
        first, last = sorted((q_concat, k_concat), key=lambda node: position.get(id(node), -1))
        readers = index.live_readers(first.output[0])
        if any(position.get(id(r), -1) <= position.get(id(last), -1) for r in readers):
            continue  # the earlier result is read before the later one is made
        fused = helper.make_node(
            "ApplyRotaryPair",
            [q, k, pair.input[2], pair.input[3]],
            [q_concat.output[0], k_concat.output[0]],
            domain=DOMAIN,
            rotary_dim=dim,
        )
        fused.attribute.extend(a for a in pair.attribute if a.name == "interleaved")
        index.fuse([*q_slices, *k_slices, pair, first, last], fused)
        count += 1
    return count


def _positions(index: _Index) -> dict[int, int]:
    """Graph order of original nodes and of the fused nodes standing in their place."""
    position = {id(node): i for i, node in enumerate(index.model.graph.node)}
    for last, fused in index.placed.items():
        if last in position:
            position[id(fused)] = position[last]
    return position


def _partial_rotation(index: _Index, pair, side: int):
    """``(x, [turned slice, rest slice], concat, r)`` when side ``side`` of ``pair`` turns
    ``x[..., :r]`` and its result is concatenated with ``x[..., r:]``; else None."""
    turned = index.producer.get(pair.input[side])
    bounds = _last_axis_slice(index, turned)
    if (
        bounds is None
        or bounds[1] != 0
        or bounds[2] <= 0
        or index.live_readers(turned.output[0]) != [pair]
    ):
        return None
    source, _, dim = bounds
    if pair.output[side] in index.pinned:
        return None
    concat = index.sole_consumer(pair.output[side], ("Concat",))
    if concat is None or len(concat.input) != 2 or concat.input[0] != pair.output[side]:
        return None
    shape = _shape_of(index, source)
    rank = len(shape)
    axis = next((a.i for a in concat.attribute if a.name == "axis"), 0)
    rest = index.producer.get(concat.input[1])
    rest_bounds = _last_axis_slice(index, rest)
    if not rank or axis % rank != rank - 1 or rest_bounds is None:
        return None
    if rest_bounds[0] != source or rest_bounds[1] != dim or rest_bounds[2] < shape[-1]:
        return None
    if index.live_readers(rest.output[0]) != [concat]:
        return None
    return source, [turned, rest], concat, dim


def _shape_of(index: _Index, name: str) -> tuple:
    """A value's shape, its dynamic dimensions as names (the last one is what matters here)."""
    return tuple(index.graph.symbolic_shapes.get(name) or index.shapes.get(name) or ())


def _last_axis_slice(index: _Index, node) -> tuple[str, int, int] | None:
    """``(data, start, end)`` of a step-1 Slice over the last axis with constant bounds."""
    if node is None or node.op_type != "Slice" or node.domain not in ("", "ai.onnx"):
        return None
    shape = _shape_of(index, node.input[0])
    bounds = _one_axis_slice(index, node)
    if not shape or len(node.input) < 4 or not node.input[3] or bounds is None:
        return None  # the axis must be given
    axis, start, end, step = bounds
    if step != 1 or axis % len(shape) != len(shape) - 1:
        return None
    if not isinstance(shape[-1], int) or start < 0:
        return None
    return node.input[0], start, min(end, int(shape[-1]))


def _scope(node: onnx.NodeProto) -> str:
    """The module scope the exporter gave a node (dynamo's metadata, TorchScript's name)."""
    for entry in node.metadata_props:
        if entry.key == "pkg.torch.onnx.name_scopes":
            return entry.value.rsplit(",", 1)[0]  # the last scope is the node's own
    return node.name.rsplit("/", 1)[0] if node.name.startswith("/") else ""


# --- Linear -------------------------------------------------------------------------------


def _lift_linears(index: _Index) -> int:
    count = 0
    for matmul in list(index.model.graph.node):
        if (
            matmul.op_type != "MatMul"
            or id(matmul) in index.dead
            or matmul.domain not in ("", "ai.onnx")
        ):
            continue
        x, w = matmul.input[0], matmul.input[1]
        weight = index.const(w)
        x_shape = index.graph.dims(x)  # only its rank matters: dynamic dimensions are fine
        if (
            weight is None
            or weight.ndim != 2
            or weight.dtype.kind != "f"
            or index.const(x) is not None
        ):
            continue
        if x_shape is None or len(x_shape) < 2 or _float_dtype(index, x) is None:
            continue
        add = index.sole_consumer(matmul.output[0], ("Add",))
        if add is None:
            continue
        bias_name = index.other_input(add, matmul.output[0])
        bias = index.const(bias_name) if bias_name else None
        out_features = int(weight.shape[1])
        if (
            bias is None
            or bias.dtype.kind != "f"
            or bias.size != out_features
            or bias.ndim > len(x_shape)
        ):
            continue
        if bias.ndim and bias.shape[-1] != out_features:
            continue
        fused = helper.make_node("Linear", [x, w, bias_name], [add.output[0]], domain=DOMAIN)
        index.fuse([matmul, add], fused)
        count += 1
    return count


def _lift_sliced_linears(index: _Index) -> int:
    """``x @ w[a:b].T + bias[a:b]`` with ``w`` and ``bias`` parameters (nn.MultiheadAttention
    projecting a query and a separate key/value input with parts of its packed
    ``in_proj_weight``; a Slice or a Split of it) -> ``SlicedLinear(x, w, bias, start=a, end=b)``,
    written ``ops.dense(x, self.in_proj_weight[a:b], self.in_proj_bias[a:b])``: the parameters
    stay whole in the checkpoint."""
    count, splits = 0, []
    for matmul in list(index.model.graph.node):
        if matmul.op_type != "MatMul" or id(matmul) in index.dead or len(matmul.input) != 2:
            continue
        transpose = index.producer.get(matmul.input[1])
        if transpose is None or transpose.op_type != "Transpose" or id(transpose) in index.dead:
            continue
        if list(node_attribute(transpose, "perm", [1, 0])) != [1, 0]:
            continue
        if index.sole_consumer(transpose.output[0], ("MatMul",)) is not matmul:
            continue
        weight = _row_part(index, transpose.input[0], 2)
        add = index.sole_consumer(matmul.output[0], ("Add",))
        bias_name = index.other_input(add, matmul.output[0]) if add is not None else None
        bias = _row_part(index, bias_name, 1) if bias_name else None
        if weight is None or bias is None or weight[1:3] != bias[1:3]:
            continue
        x_shape = index.graph.dims(matmul.input[0])
        if index.const(matmul.input[0]) is not None or x_shape is None or len(x_shape) < 2:
            continue  # ops.dense projects rows: a vector stays a MatMul
        (w, start, end, w_node), (b, _, _, b_node) = weight, bias
        fused = helper.make_node(
            "SlicedLinear", [matmul.input[0], w, b], [add.output[0]], domain=DOMAIN,
            start=start, end=end,
        )  # fmt: skip
        chain = [matmul, transpose, *[n for n in (w_node, b_node) if n.op_type == "Slice"], add]
        splits += [n for n in (w_node, b_node) if n.op_type == "Split"]
        index.fuse(chain, fused)
        count += 1
    for split in splits:  # a Split all of whose parts went into sliced linears
        if all(not index.live_readers(out) and out not in index.pinned for out in split.output):
            index.dead.add(id(split))
    return count


def _row_part(index: _Index, name: str, rank: int) -> tuple[str, int, int, onnx.NodeProto] | None:
    """``(parameter, start, end, node)`` when ``name`` is rows ``start:end`` of a parameter of
    ``rank`` dimensions, cut by a Slice of the first axis or one part of a Split of it, and
    read by one node only."""
    node = index.producer.get(name)
    if node is None or id(node) in index.dead or node.domain not in ("", "ai.onnx"):
        return None
    if name in index.pinned or len(index.live_readers(name)) != 1:
        return None
    param = index.const(node.input[0]) if node.input else None
    if param is None or param.ndim != rank or param.dtype.kind != "f":
        return None
    if learned_source(index.graph, node.input[0]) is None:
        return None
    rows = int(param.shape[0])
    if node.op_type == "Split" and node_attribute(node, "axis", 0) == 0:
        sizes = index.const(node.input[1]) if len(node.input) > 1 and node.input[1] else None
        if sizes is None:
            sizes = node_attribute(node, "split", None)
        if sizes is None:
            return None
        bounds = np.cumsum([0, *[int(v) for v in np.asarray(sizes).reshape(-1)]])
        part = list(node.output).index(name)
        return node.input[0], int(bounds[part]), int(bounds[part + 1]), node
    bounds = _one_axis_slice(index, node)
    if bounds is None:
        return None
    axis, start, end, step = bounds
    if axis % rank != 0 or step != 1 or not 0 <= start < min(end, rows):
        return None
    return node.input[0], start, min(end, rows), node


def _lift_flattened_linears(index: _Index) -> int:
    """``reshape(gemm(reshape(x, (-1, c)), w, b), x.shape[:-1] + (n,))`` (GPT-2's ``Conv1D``,
    ``torch.addmm`` on a flattened input) is one Linear on ``x``: nn.Dense takes any leading
    dimensions."""
    count = 0
    for gemm in list(index.model.graph.node):
        if gemm.op_type != "Gemm" or id(gemm) in index.dead or gemm.domain not in ("", "ai.onnx"):
            continue
        attrs = {attr.name: helper.get_attribute_value(attr) for attr in gemm.attribute}
        if attrs.get("transA", 0) or attrs.get("transB", 0):
            continue
        if attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0:
            continue
        flatten = index.producer.get(gemm.input[0])
        weight = index.const(gemm.input[1])
        if flatten is None or flatten.op_type != "Reshape" or weight is None or weight.ndim != 2:
            continue
        if index.sole_consumer(flatten.output[0], ("Gemm",)) is not gemm:
            continue
        x = flatten.input[0]
        x_shape = index.graph.symbolic_shapes.get(x)
        target = index.const(flatten.input[1])
        in_features, out_features = (int(d) for d in weight.shape)
        if x_shape is None or len(x_shape) < 3 or x_shape[-1] != in_features:
            continue
        if target is None or target.tolist() != [-1, in_features]:
            continue
        unflatten = index.sole_consumer(gemm.output[0], ("Reshape",))
        if unflatten is None:
            continue
        if index.graph.symbolic_shapes.get(unflatten.output[0]) != (*x_shape[:-1], out_features):
            continue
        inputs = [x, gemm.input[1]]
        if len(gemm.input) > 2 and gemm.input[2]:
            bias = index.const(gemm.input[2])
            if bias is None or bias.size != out_features:
                continue
            inputs.append(gemm.input[2])
        fused = helper.make_node("Linear", inputs, [unflatten.output[0]], domain=DOMAIN)
        index.fuse([gemm, flatten, unflatten], fused)
        count += 1
    return count


# --- full_like ----------------------------------------------------------------------------


def _lift_full_likes(index: _Index) -> int:
    """``ConstantOfShape(Shape(x))`` or ``Expand(c, Shape(x))`` with one constant ``c``
    (PyTorch's ``full_like`` through either exporter) -> ``FullLike(x)``, written
    ``ops.full_like(x, value, dtype=...)``: MindSpore cannot fill a shape held in a tensor."""
    count = 0
    for node in list(index.model.graph.node):
        if id(node) in index.dead or node.domain not in ("", "ai.onnx"):
            continue
        if node.op_type == "ConstantOfShape" and len(node.input) == 1:
            value = next((a.t for a in node.attribute if a.name == "value"), None)
            array = numpy_helper.to_array(value) if value is not None else np.zeros(1, np.float32)
        elif node.op_type == "Expand" and len(node.input) == 2:
            array = index.const(node.input[0])
            if array is None:
                continue
        else:
            continue
        shape = index.producer.get(node.input[-1])
        if shape is None or not _whole_shape(index, shape):
            continue
        value = array.reshape(-1)[0] if array.size == 1 else None
        if value is None or value.dtype.kind not in "iufb" or not exact_as_scalar(value):
            continue
        fused = helper.make_node("FullLike", [shape.input[0]], [node.output[0]], domain=DOMAIN)
        fused.attribute.append(helper.make_attribute("value", numpy_helper.from_array(array)))
        only_reader = index.live_readers(shape.output[0]) == [node]
        index.fuse(
            [shape, node] if only_reader and shape.output[0] not in index.pinned else [node], fused
        )
        count += 1
    return count


def _lift_silus(index: _Index) -> int:
    """``x * sigmoid(x)`` (SiLU, swish: how both exporters write Llama's MLP activation and
    EfficientNet's) -> ``Silu(x)``, written ``ops.silu(x)``."""
    count = 0
    for node in list(index.model.graph.node):
        if (
            id(node) in index.dead
            or node.op_type != "Sigmoid"
            or node.domain not in ("", "ai.onnx")
        ):
            continue
        x, gate = node.input[0], node.output[0]
        mul = index.sole_consumer(gate, ("Mul",))
        if mul is None or index.other_input(mul, gate) != x or id(mul) in index.dead:
            continue
        dtype = index.dtypes.get(x)
        if dtype is None or np.dtype(dtype).kind != "f":
            continue
        index.fuse([node, mul], helper.make_node("Silu", [x], [mul.output[0]], domain=DOMAIN))
        count += 1
    return count


def _whole_shape(index: _Index, node: onnx.NodeProto) -> bool:
    """Whether ``node`` gives the whole shape of its first input: a Shape without bounds, or
    the sizes node shape arithmetic made of one (its sizes, in order, are the input's)."""
    if node.op_type == "Shape" and node.domain in ("", "ai.onnx"):
        bounds = {a.name: a.i for a in node.attribute}
        rank = len(index.graph.symbolic_shapes.get(node.input[0]) or ())
        return bounds.get("start", 0) == 0 and bounds.get("end", rank) >= rank > 0
    if node.op_type != "Dims" or node.domain != DOMAIN or len(node.input) != 1:
        return False
    sizes = index.graph.symbolic_values.get(node.output[0])
    shape = index.graph.symbolic_shapes.get(node.input[0])
    if not isinstance(sizes, tuple) or shape is None or len(sizes) != len(shape):
        return False
    return all(str(a).replace(" ", "") == str(b).replace(" ", "") for a, b in zip(sizes, shape))


# --- roll (Swin's shifted windows) ---------------------------------------------------------


def _lift_rolls(index: _Index) -> int:
    """``concat((x[s:], x[:s]), axis)`` -> ``Roll(x, -s)``, as ``torch.roll`` exports; a roll
    of a roll of another axis, read by nothing else, -> one ``Roll`` of both axes
    (``roll(x, (-2, -2), (1, 2))``)."""
    count = 0
    for concat in list(index.model.graph.node):
        if concat.op_type == "Concat" and id(concat) not in index.dead and len(concat.input) == 2:
            found = _match_roll(index, concat)
            if found is not None:
                index.fuse(*found)
                count += 1
    for second in list(index.placed.values()):
        first = index.producer.get(second.input[0]) if second.op_type == "Roll" else None
        if first is None or first.op_type != "Roll" or first.domain != DOMAIN:
            continue
        dims = [*node_attribute(first, "dims"), *node_attribute(second, "dims")]
        if len(set(dims)) != len(dims) or index.live_readers(first.output[0]) != [second]:
            continue
        shifts = [*node_attribute(first, "shifts"), *node_attribute(second, "shifts")]
        both = helper.make_node(
            "Roll", [first.input[0]], list(second.output), domain=DOMAIN, shifts=shifts, dims=dims
        )
        index.fuse([first, second], both)
    return count


def _match_roll(index: _Index, concat: onnx.NodeProto):
    """The two Slices ``x[s:]`` and ``x[:s]`` of one axis that ``concat`` joins in that order,
    read by nothing else: the chain and its ``Roll``; None otherwise."""
    head, tail = (index.producer.get(name) for name in concat.input)
    if head is None or tail is None or head.op_type != "Slice" or tail.op_type != "Slice":
        return None
    shape = index.graph.dims(head.input[0])
    cut, rest = _one_axis_slice(index, head), _one_axis_slice(index, tail)
    if shape is None or cut is None or rest is None or head.input[0] != tail.input[0]:
        return None
    axis = node_attribute(concat, "axis", 0) % len(shape)
    size = shape[axis] if isinstance(shape[axis], (int, np.integer)) else None
    (axis_a, start, end, step), (axis_b, zero, stop, step_b) = cut, rest
    whole = end >= (size if size is not None else 2**62)
    if {axis_a % len(shape), axis_b % len(shape)} != {axis} or (step, step_b) != (1, 1):
        return None
    if not whole or zero != 0 or stop != start or start == 0:
        return None
    if any(index.sole_consumer(n.output[0], ("Concat",)) is not concat for n in (head, tail)):
        return None
    shift = -start
    if size:  # the shorter turn: a turn back by 14 of 16 is a turn on by 2
        shift %= size
        shift = shift - size if shift > size // 2 else shift
    roll = helper.make_node(
        "Roll", [head.input[0]], [concat.output[0]], domain=DOMAIN, shifts=[shift], dims=[axis]
    )
    return [head, tail, concat], roll


# --- driver -------------------------------------------------------------------------------

LIFTS: list[tuple[str, Callable[[_Index], int]]] = [
    ("Gelu", _lift_gelus),
    ("LayerNorm", _lift_layer_norms),
    ("GroupNorm", _lift_group_norms),
    ("RMSNorm", _lift_rms_norms),
    ("RotateHalf", _lift_rotate_halves),
    ("RotateEveryTwo", _lift_rotate_every_two),
    ("ApplyRotary", _lift_rotary_applications),
    ("ApplyRotaryPair", _pair_rotary_applications),
    ("PartialRotary", _fold_partial_rotaries),
    ("RotaryTableUnsqueeze", _absorb_table_unsqueezes),
    ("FullLike", _lift_full_likes),
    ("Silu", _lift_silus),
    ("Unbind", _lift_unbinds),
    ("SlicedLinear", _lift_sliced_linears),
    ("Linear", _lift_linears),
    ("FlattenedLinear", _lift_flattened_linears),
    ("Roll", _lift_rolls),
]


def run(graph: Graph, context: PassContext) -> bool:
    """Fuse decomposed LayerNorm, RMSNorm, GELU and Linear chains in place; counts go to ``context.lifted``."""
    context.lifted = lift_patterns(graph)
    if context.lifted:
        context.say(
            "Lifted layers: " + ", ".join(f"{n} {name}" for name, n in context.lifted.items())
        )
    return bool(context.lifted)


def lift_patterns(graph: Graph) -> dict[str, int]:
    """Fuse decomposed LayerNorm, RMSNorm, GELU and Linear chains in place; returns how many of each."""
    model = graph.model
    index = _Index(graph)
    counts = {}
    for name, lift in LIFTS:
        found = lift(index)
        if found:
            counts[name] = found
    if not counts:
        return counts
    nodes = []
    for node in model.graph.node:
        current = node
        while id(current) in index.placed:  # a fused node may be fused again (a rotary pair)
            current = index.placed[id(current)]
        if id(current) not in index.dead:
            nodes.append(current)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    declare_internal_domain(model)
    used = {name for node in model.graph.node for name in node.input} | index.pinned
    kept = [init for init in model.graph.initializer if init.name in used]
    if len(kept) != len(model.graph.initializer):
        del model.graph.initializer[:]
        model.graph.initializer.extend(kept)
    graph.edited()
    return counts
