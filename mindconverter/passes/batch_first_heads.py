"""Pass: ``nn.MultiheadAttention``'s heads split and merged batch-first, as people write them.

PyTorch's ``F.multi_head_attention_forward`` works sequence-first: a batch-first module swaps
its input to ``(seq, batch, embed)``, projects it, unpacks the packed projection with
``unflatten(-1, (3, embed)).unsqueeze(0).transpose(0, -2).squeeze(-2)``, folds the heads into
the batch (``q.view(seq, batch * heads, head_dim).transpose(0, 1)``), and after the attention
flattens ``(seq * batch, embed)`` for the output projection and swaps the result back. Both
exporters keep every step, so a converted script read that way (22 lines of attention).

Four rewrites, each an identity on the values, make it read as mindnlp writes attention:

- the unpacking is one ``Split`` of the projection's last axis (``q, k, v = ops.split(...)``);
- ``view(seq, batch * heads, d).transpose(0, 1).view(batch, heads, seq, d)`` is
  ``view(seq, batch, heads, d)`` and one transpose;
- ``gemm(view(ctx, (seq * batch, embed))).view(seq, batch, out)`` is a Linear on
  ``view(ctx, (seq, batch, embed))`` (nn.Dense takes any leading axes);
- a transpose of leading axes moves along the ops that only touch the last axis (a Linear, a
  Split or Slice of the last axis, a Reshape splitting or merging the last axes) until it
  meets another transpose, and the two become one (or none): the swap to sequence-first and
  the heads' transpose become ``swapaxes(1, 2)``.

TorchScript writes the traced key length into the fold (``k.view(6, b * h, d)``): the source
runs at that length only, and the same splits apply there. A transpose only read for its sizes
(``k.size(1)`` for the weights' view) gives them from its input instead.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..graph import Graph
from ..graph.graph import claim_name, declare_value
from ..graph.internal_domain import DOMAIN
from ..graph.node import node_attribute, node_axes
from ..graph.pruning import remove_dead_nodes
from ..graph.subgraphs import subgraph_references
from .context import PassContext


def run(graph: Graph, context: PassContext) -> bool:
    """Apply the rewrites until none applies."""
    total = 0
    made: dict[tuple[int, ...], str] = {}  # one constant for equal targets: one shape line
    rewrites = (
        _unpack_projections,
        _split_heads_at_once,
        _sizes_before_transposes,
        _unfold_heads,
        _merge_heads_at_once,
    )
    for rewrite in rewrites:
        count = rewrite(_Edit(graph, made))
        if count:
            graph.edited()
        total += count
    if total:  # sizes read only for a view the unfold removed: no reader to move past
        before = len(graph.model.graph.node)
        remove_dead_nodes(graph.model)
        if len(graph.model.graph.node) != before:
            graph.edited()
    while True:
        count = _meet_transposes(_Edit(graph, made))
        if not count:
            break
        graph.edited()
        total += count
    if total:
        context.say(f"sequence-first attention steps written batch-first: {total}")
    return bool(total)


class _Edit:
    """Indexes of the graph for one rewrite, and the means to replace nodes."""

    def __init__(self, graph: Graph, made: dict[tuple[int, ...], str]):
        self.graph = graph
        self.made = made
        self.nodes = graph.model.graph.node
        self.producer = graph.producers
        self.readers = graph.consumer_nodes
        self.pinned = set(graph.outputs) | subgraph_references(graph.model.graph)
        self.taken = graph.node_names() | graph.value_names()
        self.removed: set[int] = set()

    def shape(self, name: str) -> tuple | None:
        return self.graph.symbolic_shapes.get(name)

    def const(self, name: str) -> np.ndarray | None:
        return self.graph.constant(name) if name else None

    def made_by(self, name: str, op_type: str) -> onnx.NodeProto | None:
        node = self.producer.get(name)
        ok = node is not None and node.op_type == op_type and node.domain in ("", "ai.onnx")
        return node if ok and id(node) not in self.removed else None

    def sole_reader(self, name: str, op_type: str) -> onnx.NodeProto | None:
        """The one node reading ``name`` (once), when it is an ``op_type``; ``name`` is no
        output of the network or of a subgraph's."""
        readers = self.readers.get(name, [])
        if len(readers) != 1 or name in self.pinned or id(readers[0]) in self.removed:
            return None
        node = readers[0]
        return node if node.op_type == op_type and node.domain in ("", "ai.onnx") else None

    def only_read_by(self, name: str, nodes: list[onnx.NodeProto]) -> bool:
        readers = self.readers.get(name, [])
        return name not in self.pinned and sorted(map(id, readers)) == sorted(map(id, nodes))

    def constant(self, wanted: str, values: list[int]) -> str:
        """An int64 constant holding ``values`` (the one made before for the same values)."""
        key = tuple(values)
        if key not in self.made:
            name = claim_name(self.taken, wanted)
            array = np.asarray(values, np.int64)
            self.graph.model.graph.initializer.append(numpy_helper.from_array(array, name))
            self.made[key] = name
        return self.made[key]

    def value(self, wanted: str, dims: tuple, like: str) -> str:
        """A new value named after ``wanted``, declared with ``dims`` and ``like``'s type."""
        name = claim_name(self.taken, wanted)
        self.declare(name, dims, like)
        return name

    def declare(self, name: str, dims: tuple, like: str) -> None:
        dtype = self.graph.dtypes.get(like)
        elem = helper.np_dtype_to_tensor_dtype(dtype) if dtype is not None else 1
        declare_value(self.graph.model.graph, name, elem, list(dims))

    def node(self, op_type: str, inputs, outputs, scope: onnx.NodeProto, domain="", **attrs):
        """A node filed under ``scope``'s module (its name's path, its metadata)."""
        name = claim_name(self.taken, f"{scope.name}_{op_type.lower()}")
        node = helper.make_node(op_type, inputs, outputs, name=name, domain=domain, **attrs)
        for entry in scope.metadata_props:
            node.metadata_props.add().CopyFrom(entry)
        return node

    def replace(self, old: list[onnx.NodeProto], new: list[onnx.NodeProto]) -> None:
        """Put ``new`` where the last of ``old`` stood (every input of ``new`` is made by then)
        and remove ``old``."""
        position = max(_index(self.nodes, node) for node in old)
        for offset, node in enumerate(new):
            self.nodes.insert(position + 1 + offset, node)
        for node in old:
            self.removed.add(id(node))
            self.nodes.remove(node)


def _index(nodes, wanted: onnx.NodeProto) -> int:
    return next(index for index, node in enumerate(nodes) if node is wanted)


def _positive(axes: list[int], rank: int) -> list[int]:
    return [axis % rank for axis in axes]


# --- the packed projection ---------------------------------------------------------------------


def _unpack_projections(edit: _Edit) -> int:
    """``y.unflatten(-1, (n, e)).unsqueeze(0).transpose(0, -2).squeeze(-2)[i]`` for each
    ``i < n`` -> ``Split(y, [e] * n, axis=-1)``."""
    count = 0
    for squeeze in [node for node in edit.nodes if node.op_type == "Squeeze"]:
        unpacked = _unpacking(edit, squeeze)
        if unpacked is None:
            continue
        chain, picks, y, parts = unpacked
        rank = len(edit.shape(y) or ())
        size = int(edit.shape(picks[0].output[0])[-1])
        split = edit.node(
            "Split",
            [y, edit.constant(f"{squeeze.name}_sizes", [size] * parts)],
            [pick.output[0] for pick in picks],
            chain[0],
            axis=rank - 1,
        )
        edit.replace([*chain, *picks], [split])
        count += 1
    return count


def _unpacking(edit: _Edit, squeeze: onnx.NodeProto):
    """(the chain Reshape..Squeeze, the Gathers by index, the packed value, the parts) when
    ``squeeze`` ends the unpacking idiom and every part is picked once."""
    if edit.graph.opset < 13 or id(squeeze) in edit.removed:
        return None
    transpose = edit.made_by(squeeze.input[0], "Transpose")
    unsqueeze = transpose and edit.made_by(transpose.input[0], "Unsqueeze")
    reshape = unsqueeze and edit.made_by(unsqueeze.input[0], "Reshape")
    if not reshape:
        return None
    y = reshape.input[0]
    y_shape, split_shape = edit.shape(y), edit.shape(reshape.output[0])
    if not y_shape or not split_shape or len(split_shape) != len(y_shape) + 1:
        return None
    rank = len(y_shape)  # the parts' axis in the unsqueezed value
    parts, size = split_shape[-2], split_shape[-1]
    if not (isinstance(parts, int) and isinstance(size, int) and y_shape[-1] == parts * size):
        return None
    if tuple(split_shape[:-2]) != tuple(y_shape[:-1]):
        return None
    swap = list(range(rank + 2))  # the unsqueezed value: (1, ..., parts, size)
    swap[0], swap[rank] = rank, 0
    if node_axes(unsqueeze, edit.const) != [0] or node_attribute(transpose, "perm") != swap:
        return None
    if _positive(node_axes(squeeze, edit.const) or [], rank + 2) != [rank]:
        return None
    picks = _picks(edit, squeeze.output[0], parts)
    chain = [reshape, unsqueeze, transpose, squeeze]
    inner = [reshape.output[0], unsqueeze.output[0], transpose.output[0]]
    if picks is None or not all(edit.only_read_by(v, [n]) for v, n in zip(inner, chain[1:])):
        return None
    return chain, picks, y, parts


def _picks(edit: _Edit, name: str, parts: int) -> list[onnx.NodeProto] | None:
    """The Gathers of axis 0 reading ``name``, one per index ``0..parts-1``, in index order."""
    readers = edit.readers.get(name, [])
    if name in edit.pinned or len(readers) != parts:
        return None
    by_index: dict[int, onnx.NodeProto] = {}
    for node in readers:
        index = edit.const(node.input[1]) if node.op_type == "Gather" else None
        if index is None or index.ndim != 0 or node_attribute(node, "axis", 0) != 0:
            return None
        by_index[int(index) % parts] = node
    return [by_index[i] for i in range(parts)] if len(by_index) == parts else None


# --- heads split and merged at once --------------------------------------------------------------


def _split_heads_at_once(edit: _Edit) -> int:
    """``z.view(s, b * h, d).transpose(0, 1).view(b, h, s, d)`` (z of shape (s, b, h * d)) ->
    ``z.view(s, b, h, d).permute(1, 2, 0, 3)``."""
    count = 0
    for last in [node for node in edit.nodes if node.op_type == "Reshape"]:
        swap = edit.made_by(last.input[0], "Transpose")
        first = swap and edit.made_by(swap.input[0], "Reshape")
        if not first or node_attribute(swap, "perm") != [1, 0, 2]:
            continue
        z = first.input[0]
        z_shape, folded, heads = (edit.shape(v) for v in (z, first.output[0], last.output[0]))
        if not z_shape or not folded or not heads or len(z_shape) != 3 or len(folded) != 3:
            continue
        embed, head_dim = z_shape[2], folded[2]
        if not (isinstance(embed, int) and isinstance(head_dim, int) and head_dim > 0):
            continue
        count_heads = embed // head_dim
        # TorchScript bakes the traced key length into the fold (``k.view(6, b * h, d)``, then
        # ``view(b, h, 6, d)``): the same split, valid at that length as the source is
        length = folded[0] if _baked(folded[0], z_shape[0]) else z_shape[0]
        expected = (z_shape[1], count_heads, length, head_dim)
        if embed % head_dim or folded[0] != length or tuple(heads) != expected:
            continue
        if not (
            edit.only_read_by(first.output[0], [swap]) and edit.only_read_by(swap.output[0], [last])
        ):
            continue
        split, reshape = _heads_split(edit, z, count_heads, head_dim, first)
        transpose = edit.node("Transpose", [split], list(last.output), last, perm=[1, 2, 0, 3])
        edit.replace([first, swap, last], [reshape, transpose])
        count += 1
    return count


def _heads_split(edit: _Edit, z: str, heads: int, head_dim: int, fold: onnx.NodeProto):
    """``z`` of shape (s, b, h * d) viewed as (s, b, h, d), in place of the ``fold`` to
    (s, b * h, d): the new value's name and the Reshape making it."""
    dims = (*edit.shape(z)[:2], heads, head_dim)
    split = edit.value(f"{fold.output[0]}_heads", dims, z)
    target = edit.constant(f"{fold.name}_target", [0, 0, heads, head_dim])
    return split, edit.node("Reshape", [z, target], [split], fold)


def _baked(size, dim) -> bool:
    """Whether ``size`` is a number the exporter wrote for the dynamic dimension ``dim``
    (TorchScript traces ``k.view(k.shape[0], b * h, d)`` with the key length as a number: the
    source runs at that length only, and splitting ``b * h`` is the same fold there)."""
    return isinstance(size, (int, np.integer)) and not isinstance(dim, (int, np.integer))


def _merge_heads_at_once(edit: _Edit) -> int:
    """``gemm(x.view(s * b, e), w, bias).view(s, b, o)`` (x of shape (s, b, h, d), e = h * d)
    -> ``Linear(x.view(s, b, e), w, bias)``."""
    count = 0
    for gemm in [node for node in edit.nodes if node.op_type == "Gemm"]:
        flatten = edit.made_by(gemm.input[0], "Reshape")
        unflatten = edit.sole_reader(gemm.output[0], "Reshape")
        weight = edit.const(gemm.input[1])
        if not flatten or not unflatten or weight is None or weight.ndim != 2:
            continue
        if node_attribute(gemm, "transA", 0) or node_attribute(gemm, "alpha", 1.0) != 1.0:
            continue
        if len(gemm.input) > 2 and gemm.input[2] and node_attribute(gemm, "beta", 1.0) != 1.0:
            continue
        x = flatten.input[0]
        x_shape, out = edit.shape(x), edit.shape(unflatten.output[0])
        embed = int(weight.shape[1 if node_attribute(gemm, "transB", 0) else 0])
        if not x_shape or not out or len(x_shape) != 4 or len(out) != 3:
            continue
        if not all(isinstance(d, int) for d in x_shape[2:]) or x_shape[2] * x_shape[3] != embed:
            continue
        if tuple(out[:2]) != tuple(x_shape[:2]) or not edit.only_read_by(flatten.output[0], [gemm]):
            continue
        merged = edit.value(f"{flatten.output[0]}_merged", (*x_shape[:2], embed), x)
        target = edit.constant(f"{flatten.name}_target", [0, 0, embed])
        inputs = [merged, *gemm.input[1:]]
        transposed = int(node_attribute(gemm, "transB", 0))
        new = [
            edit.node("Reshape", [x, target], [merged], flatten),
            edit.node(
                "Linear", inputs, list(unflatten.output), gemm, domain=DOMAIN, transB=transposed
            ),
        ]
        edit.replace([flatten, gemm, unflatten], new)
        count += 1
    return count


# --- transposes meeting transposes --------------------------------------------------------------


def _meet_transposes(edit: _Edit) -> int:
    """Move one transpose of leading axes to the transposes it meets (down the ops that read
    it, or up the ops that make its input); returns 1 when one moved."""
    for node in list(edit.nodes):
        if node.op_type != "Transpose" or node.domain not in ("", "ai.onnx"):
            continue
        perm = node_attribute(node, "perm")
        if not perm or perm[-1] != len(perm) - 1:
            continue
        if _sink(edit, node, list(perm)) or _hoist(edit, node, list(perm)):
            return 1
    return 0


def _through(edit: _Edit, node: onnx.NodeProto, perm: list[int], value: str, down: bool):
    """What the permutation ``perm`` of ``node``'s input ``value`` (going down) or of its
    output (going up) becomes on the other side of ``node``, and ``node``'s new Reshape target
    if it has one; None unless ``node`` only touches the last axes."""
    rank = len(perm)
    if node.input[0] != value:
        return None
    if node.op_type in ("Linear", "SlicedLinear") and node.domain == DOMAIN:
        return perm, None
    if node.domain not in ("", "ai.onnx"):
        return None
    if node.op_type == "MatMul":  # a projection by a constant weight
        weight = edit.const(node.input[1])
        return (perm, None) if weight is not None and weight.ndim == 2 else None
    if node.op_type == "Add" and down and len(node.input) == 2:
        other = edit.shape(node.input[1])  # a projection's bias
        return (perm, None) if other is not None and len(other) == 1 else None
    if node.op_type == "Split" and down:
        return (perm, None) if node_attribute(node, "axis", 0) % rank == rank - 1 else None
    if node.op_type == "Slice" and len(node.input) > 3:
        axes = edit.const(node.input[3])
        last = axes is not None and all(int(a) % rank == rank - 1 for a in axes.reshape(-1))
        return (perm, None) if last else None
    if node.op_type == "Reshape":
        return _through_reshape(edit, node, perm, down)
    return None


def _through_reshape(edit: _Edit, node: onnx.NodeProto, perm: list[int], down: bool):
    """A Reshape that splits the last axis in two or merges the last two (the leading axes
    kept): the permutation on its other side, and its target with the leading axes copied."""
    rank = len(perm)
    before, after = edit.shape(node.input[0]), edit.shape(node.output[0])
    if not before or not after or len(before) < 2 or len(after) < 2:
        return None
    keeps_last_two = perm[-2:] == [rank - 2, rank - 1]
    if len(after) == len(before) + 1 and tuple(after[:-2]) == tuple(before[:-1]):
        if not _ints(before[-1], *after[-2:]) or after[-2] * after[-1] != before[-1]:
            return None
        target = [0] * (len(before) - 1) + [after[-2], after[-1]]
        if down:  # the new axis follows the last
            return [*perm, rank], target
        return (perm[:-1], target) if keeps_last_two else None
    if len(after) == len(before) - 1 and tuple(after[:-1]) == tuple(before[:-2]):
        if not _ints(after[-1], *before[-2:]) or before[-2] * before[-1] != after[-1]:
            return None
        target = [0] * (len(before) - 2) + [after[-1]]
        if down:
            return (perm[:-1], target) if keeps_last_two else None
        return [*perm[:-1], rank - 1, rank], target
    return None


def _ints(*sizes) -> bool:
    return all(isinstance(size, int) for size in sizes)


def _sink(edit: _Edit, first: onnx.NodeProto, perm: list[int]) -> bool:
    """Move ``first`` down through the ops reading its result to the transposes they reach."""
    frontier = [(first.output[0], perm)]
    chain: list[tuple[onnx.NodeProto, list[int], list | None]] = []  # node, its perm, target
    meets: list[tuple[onnx.NodeProto, list[int]]] = []
    sizes: list[tuple[onnx.NodeProto, list[int]]] = []  # Shape nodes reading a moved value
    while frontier:
        value, current = frontier.pop()
        readers = edit.readers.get(value, [])
        if value in edit.pinned or not readers:
            return False
        for reader in readers:
            if reader.op_type == "Transpose" and reader.domain in ("", "ai.onnx"):
                meets.append((reader, current))
                continue
            if _whole_shape(reader):
                sizes.append((reader, current))
                continue
            passed = _through(edit, reader, current, value, down=True)
            if passed is None or any(reader is seen for seen, _, _ in chain):
                return False
            chain.append((reader, passed[0], passed[1]))
            frontier.extend((out, passed[0]) for out in reader.output if out)
    if not meets or any(edit.shape(out) is None for node, _, _ in chain for out in node.output):
        return False
    for reader, current in sizes:
        _reread_shape(
            edit, reader, first.input[0] if reader.input[0] == first.output[0] else "", current
        )
    _apply_sink(edit, first, chain, meets)
    return True


def _whole_shape(node: onnx.NodeProto) -> bool:
    """A Shape node giving its input's whole shape."""
    plain = node.op_type == "Shape" and node.domain in ("", "ai.onnx")
    return plain and node_attribute(node, "start", 0) == 0 and node_attribute(node, "end") is None


def _reread_shape(edit: _Edit, shape: onnx.NodeProto, source: str, perm: list[int]) -> None:
    """``shape`` reads a value that now holds its old contents with the axes ``perm`` undid
    (``source`` instead, when given): its sizes are gathered back in the old order."""
    if source:
        shape.input[0] = source
    sizes = edit.value(f"{shape.output[0]}_unmoved", (len(perm),), shape.output[0])
    order = edit.constant(f"{shape.name}_order", perm)
    gather = edit.node("Gather", [sizes, order], [shape.output[0]], shape, axis=0)
    shape.output[0] = sizes
    edit.nodes.insert(_index(edit.nodes, shape) + 1, gather)


def _apply_sink(edit: _Edit, first, chain, meets) -> None:
    source = first.input[0]
    for node, _, target in chain:
        for index, name in enumerate(node.input):
            if name == first.output[0]:
                node.input[index] = source
        if target is not None:
            node.input[1] = edit.constant(f"{node.name}_target", target)
    for node, perm, _ in chain:
        for out in node.output:  # the values hold what they held before the transpose now
            shape = edit.shape(out)
            edit.declare(out, tuple(shape[perm.index(axis)] for axis in range(len(shape))), out)
    for meet, current in meets:
        if meet.input[0] == first.output[0]:
            meet.input[0] = source
        outer = node_attribute(meet, "perm")
        composed = [current[axis] for axis in outer]
        _set_attr(meet, "perm", composed)
    edit.replace([first], [])


def _hoist(edit: _Edit, last: onnx.NodeProto, perm: list[int]) -> bool:
    """Move ``last`` up through the ops making its input to the transpose that starts them."""
    chain = []
    value, current = last.input[0], perm
    while True:
        node = edit.producer.get(value)
        readers = edit.readers.get(value, [])
        if node is None or value in edit.pinned:
            return False
        if node.op_type == "Transpose" and node.domain in ("", "ai.onnx"):
            top = node
            sizes = [reader for reader in readers if _whole_shape(reader)]
            if len(readers) - len(sizes) != 1:
                return False
            break
        if len(readers) != 1:
            return False
        if len(node.output) != 1:
            return False
        passed = _through(edit, node, current, node.input[0], down=False)
        if passed is None:
            return False
        chain.append((node, current, passed[1]))
        value, current = node.input[0], passed[0]
    if not chain:
        return False
    outer = node_attribute(top, "perm")
    composed = [outer[axis] for axis in current]
    for reader in sizes:  # they read the top transpose's old result: its input, reordered
        _reread_shape(edit, reader, top.input[0], outer)
    for node, node_perm, target in chain:
        shape = edit.shape(node.output[0])
        edit.declare(node.output[0], tuple(shape[axis] for axis in node_perm), node.output[0])
        if target is not None:
            node.input[1] = edit.constant(f"{node.name}_target", target)
    _set_attr(top, "perm", composed)
    source_shape = edit.shape(top.input[0])
    edit.declare(top.output[0], tuple(source_shape[axis] for axis in composed), top.output[0])
    chain[0][0].output[0] = last.output[0]  # declared already, with the shape it keeps
    edit.replace([last], [])
    return True


# --- heads folded into the batch -----------------------------------------------------------------

# the operators a value with the heads folded into its first axis passes through unchanged in
# meaning when the heads are unfolded again: the scale, the masking sum, the softmax, the products
_FOLD_KEEPING = ("Mul", "Div", "Add", "Softmax", "MatMul", "Transpose")


def _sizes_before_transposes(edit: _Edit) -> int:
    """A transpose only read for its sizes (``k.transpose(0, 1)`` read by ``k.size(1)`` for the
    weights' view, beside the key's own transpose) -> the sizes read from its input in the
    transposed order: the folded key then has one reader, and its heads can be unfolded."""
    count = 0
    for node in [n for n in edit.nodes if n.op_type == "Transpose" and n.domain in ("", "ai.onnx")]:
        readers = edit.readers.get(node.output[0], [])
        perm = node_attribute(node, "perm")
        if not readers or perm != [1, 0, 2] or node.output[0] in edit.pinned:
            continue  # the swap of a fold's (s, b * h, d) only
        if not all(_whole_shape(reader) for reader in readers):
            continue
        for reader in list(readers):
            _reread_shape(edit, reader, node.input[0], perm)
        edit.replace([node], [])
        count += 1
    return count


def _unfold_heads(edit: _Edit) -> int:
    """Attention computed with the heads folded into the batch (``bmm`` on ``(b * h, s, d)``,
    F.multi_head_attention_forward when it returns the weights) -> the same on ``(b, h, s, d)``:
    the fold ``z.view(s, b * h, d).transpose(0, 1)`` becomes ``z.view(s, b, h, d)`` and a
    transpose, every step after it runs on the four axes, and the unfold at the end
    (``weights.view(b, h, s, t)``, or the transpose and flatten before the output projection)
    goes. All or nothing: a step that cannot run unfolded leaves the attention as it is."""
    seeds = {}
    for node in edit.nodes:
        seed = _fold_seed(edit, node)
        if seed is not None:
            seeds[node.output[0]] = seed
    if not seeds:
        return 0
    folds = {(edit.shape(z)[1], heads) for z, heads, *_ in seeds.values()}
    if len(folds) != 1:  # one attention's batch and heads
        return 0
    fold = folds.pop()
    plan = _fold_plan(edit, seeds, fold)
    if plan is None:
        return 0
    _apply_fold_plan(edit, seeds, plan, fold)
    return len(seeds)


def _fold_seed(edit: _Edit, node: onnx.NodeProto):
    """(source, heads, head_dim, 4-axis permutation, the Reshape) for
    ``Transpose(Reshape(z, (s, b * h, d)))`` whose permutation brings the folded axis first
    (z of shape (s, b, h * d))."""
    if node.op_type != "Transpose" or node.domain not in ("", "ai.onnx"):
        return None
    perm = node_attribute(node, "perm")
    fold = edit.made_by(node.input[0], "Reshape")
    if not fold or not perm or len(perm) != 3 or perm[0] != 1:
        return None
    z = fold.input[0]
    z_shape, folded = edit.shape(z), edit.shape(fold.output[0])
    if not z_shape or not folded or len(z_shape) != 3 or len(folded) != 3:
        return None
    embed, head_dim = z_shape[2], folded[2]
    length_kept = folded[0] == z_shape[0] or _baked(folded[0], z_shape[0])  # see _baked
    if not _ints(embed, head_dim) or head_dim <= 0 or embed % head_dim or not length_kept:
        return None
    others = [r for r in edit.readers.get(fold.output[0], []) if r is not node]
    if fold.output[0] in edit.pinned or not all(_whole_shape(r) for r in others):
        return None  # sizes read beside the fold (``k.size(1)``) keep the folded value
    expanded = {0: [0], 1: [1, 2], 2: [3]}  # (s, b*h, d) -> (s, b, h, d)
    return z, embed // head_dim, head_dim, [axis for p in perm for axis in expanded[p]], fold


def _fold_plan(edit: _Edit, seeds: dict, fold: tuple):
    """What each step reading a folded value becomes unfolded: a list of (node, kind), or None
    when one cannot. Kinds: ``keep`` (the same operator on four axes), ``unfold`` (a Reshape
    back to (b, h, ...): its readers read the unfolded value), ``flatten`` (the transpose to
    (s, b * h, d) and the flatten after it)."""
    folded = set(seeds)
    plan: list[tuple[onnx.NodeProto, str]] = []
    pending = list(seeds)
    seen: set[int] = set()
    waiting: list[tuple[onnx.NodeProto, str]] = []  # products whose other operand comes later
    while pending or waiting:
        if not pending:
            ready = [(node, value) for node, value in waiting if set(node.input) <= folded]
            if not ready:
                return None
            waiting = [entry for entry in waiting if entry not in ready]
            steps = ready
        else:
            value = pending.pop()
            if value in edit.pinned:
                return None
            steps = [(reader, value) for reader in edit.readers.get(value, [])]
        for reader, value in steps:
            if id(reader) in seen:
                continue
            if reader.op_type == "MatMul" and not set(reader.input) <= folded:
                waiting.append((reader, value))
                continue
            kind = _fold_step(edit, reader, value, folded, fold)
            if kind is None:
                return None
            seen.add(id(reader))
            plan.append((reader, kind))
            if kind == "keep":
                folded.add(reader.output[0])
                pending.append(reader.output[0])
    return plan


def _fold_step(
    edit: _Edit, node: onnx.NodeProto, value: str, folded: set[str], fold: tuple
) -> str | None:
    """What ``node`` reading the folded ``value`` becomes (see :func:`_fold_plan`); ``fold``
    is the (batch, heads) the seeds folded."""
    if node.domain not in ("", "ai.onnx"):
        return None
    rank = len(edit.shape(value) or ())
    if node.op_type == "Reshape":
        before, after = edit.shape(value), edit.shape(node.output[0])
        if not after or not before or len(after) != rank + 1:
            return None
        back = tuple(after[2:]) == tuple(before[1:]) and tuple(after[:2]) == fold
        return "unfold" if back else None
    if node.op_type not in _FOLD_KEEPING:
        return None
    if node.op_type == "Transpose":
        perm = node_attribute(node, "perm")
        if perm and perm[0] == 0:
            return "keep"
        embed = fold[1] * edit.shape(value)[-1]
        return "flatten" if perm == [1, 0, 2] and _flattened(edit, node, embed) else None
    if node.op_type == "Softmax":
        return "keep" if node_attribute(node, "axis", -1) % rank != 0 else None
    others = [name for name in node.input if name != value]
    if node.op_type == "MatMul":
        return "keep" if all(name in folded or name == value for name in node.input) else None
    # a scale or a mask: a scalar, or a value broadcast over the folded axis
    for other in others:
        shape = edit.shape(other)
        if other in folded or shape is None or (len(shape) == rank and shape[0] != 1):
            return None
    return "keep"


def _flattened(edit: _Edit, transpose: onnx.NodeProto, embed) -> bool:
    """Whether the (s, b * h, d) ``transpose`` makes is only flattened to (s * b, h * d)."""
    flatten = edit.sole_reader(transpose.output[0], "Reshape")
    shape = flatten and edit.shape(flatten.output[0])
    return bool(shape) and len(shape) == 2 and shape[1] == embed


def _apply_fold_plan(edit: _Edit, seeds: dict, plan: list, fold: tuple) -> None:
    """Rewrite the seeds and the planned steps in place: every folded value keeps its name and
    holds the unfolded value; ``fold`` is the (batch, heads) of every seed."""
    batch, heads = fold
    for name, (z, _, head_dim, perm, reshape_node) in seeds.items():
        seed = edit.producer[name]
        split, reshape = _heads_split(edit, z, heads, head_dim, reshape_node)
        if edit.only_read_by(reshape_node.output[0], [seed]):
            edit.replace([reshape_node], [reshape])
        else:  # its sizes are read too: the folded value stays for them
            edit.nodes.insert(_index(edit.nodes, reshape_node) + 1, reshape)
        seed.input[0] = split
        _set_attr(seed, "perm", perm)
        _declare_unfolded(edit, name, batch, heads)
    for node, kind in plan:
        if kind == "keep":
            if node.op_type == "Transpose":
                _set_attr(
                    node, "perm", [0, 1, *(axis + 1 for axis in node_attribute(node, "perm")[1:])]
                )
            elif node.op_type == "Softmax" and node_attribute(node, "axis", -1) >= 0:
                _set_attr(node, "axis", node_attribute(node, "axis") + 1)
            _declare_unfolded(edit, node.output[0], batch, heads)
        elif kind == "unfold":  # its readers read the unfolded value
            for reader in list(edit.readers.get(node.output[0], [])):
                reader.input[:] = [
                    node.input[0] if n == node.output[0] else n for n in reader.input
                ]
            if node.output[0] in edit.pinned:
                edit.replace(
                    [node], [edit.node("Identity", [node.input[0]], list(node.output), node)]
                )
            else:
                edit.replace([node], [])
        else:  # flatten: (b, h, s, d) -> (s, b, h, d), flattened as before
            _set_attr(node, "perm", [2, 0, 1, 3])
            shape = edit.shape(node.input[0])
            before = _unfolded_shape(shape, batch, heads) if len(shape) == 3 else shape
            edit.declare(
                node.output[0], (before[2], before[0], before[1], before[3]), node.output[0]
            )


def _unfolded_shape(shape: tuple, batch, heads: int) -> tuple:
    return (batch, heads, *shape[1:])


def _declare_unfolded(edit: _Edit, name: str, batch, heads: int) -> None:
    shape = edit.shape(name)
    edit.declare(name, _unfolded_shape(shape, batch, heads), name)


def _set_attr(node: onnx.NodeProto, name: str, value) -> None:
    kept = [a for a in node.attribute if a.name != name]
    del node.attribute[:]
    node.attribute.extend(kept)
    node.attribute.append(helper.make_attribute(name, value))
