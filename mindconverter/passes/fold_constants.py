"""Pass: replace nodes whose inputs are all known by their computed values."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..graph import Graph
from ..graph.evaluator import NOT_FOLDABLE, evaluate_node
from ..graph.provenance import FoldRecord
from ..graph.specs import static_shapes
from ..graph.subgraphs import has_subgraph
from ..graph.symbolic import is_numeric
from ..graph.weight_roles import is_generated_name
from ..graph.weight_store import WeightStore, is_held, worth_holding_array
from .context import PassContext

# A folded constant may grow to this many bytes beyond the size of its inputs before we keep
# computing it at run time instead (e.g. a huge ConstantOfShape).
FOLD_GROWTH_LIMIT = 64 << 20


# Steps that only re-lay a weight out (every value kept): folding them onto a trainable weight is
# traced back to the source weight. Any other operation on a trainable weight (a slice of a
# position table, a gather of embedding rows, arithmetic) stays in the network, so the
# checkpoint holds the whole weight.
LAYOUT_STEPS = {
    "Identity",
    "Cast",
    "CastLike",
    "Transpose",
    "Reshape",
    "Squeeze",
    "Unsqueeze",
    "Flatten",
}


def fold_constants(
    model: onnx.ModelProto,
    records: dict[str, FoldRecord],
    known: dict[str, np.ndarray] | None = None,
    learned: frozenset[str] = frozenset(),
    dtypes: dict[str, np.dtype] | None = None,
    store: WeightStore | None = None,
) -> bool:
    """Replace nodes whose inputs are all known by initializers. Returns whether anything changed.

    ``Shape`` and ``Size`` of statically shaped values count as known, and so does every value in
    ``known`` (shape arithmetic that symbolic inference found to be fixed, e.g. the static size of
    one axis of a tensor with a dynamic batch). Values derived from the ``learned`` (trainable)
    weights are only folded through layout steps; ``dtypes`` (element types by value name) lets
    ``CastLike`` of a constant fold. Initializers held by ``store`` are read from it, and large
    folded values are put there (the model gets their headers). ``records`` gains, for each folded tensor that
    derives from weights, the source initializers and the steps applied.
    """
    known = known or {}
    graph = model.graph
    opsets = {entry.domain or "": entry.version for entry in model.opset_import}
    shapes = static_shapes(model)
    constants: dict[str, np.ndarray] = {}
    source_of: dict[str, FoldRecord] = dict(records)
    for init in graph.initializer:
        constants[init.name] = None  # loaded lazily: weights are only read when a fold needs them
        source_of.setdefault(init.name, FoldRecord([init.name]))
    init_by_name = {init.name: init for init in graph.initializer}
    graph_outputs = {out.name for out in graph.output}

    def value(name: str) -> np.ndarray:
        if constants.get(name) is None:
            tensor = init_by_name[name]
            if is_held(tensor):
                return store.array(name)  # a view of the held bytes, not kept alive here
            constants[name] = numpy_helper.to_array(tensor)
        return constants[name]

    recurrent_prep = _recurrent_weight_prep(graph)
    kept, new_initializers, changed = [], [], False
    for node in graph.node:
        result = None
        if node.domain not in ("", "ai.onnx") or node.op_type in NOT_FOLDABLE or has_subgraph(node):
            kept.append(node)
            continue
        if node.op_type == "Shape" and node.input[0] in shapes:
            result = [_shape_slice(shapes[node.input[0]], node)]
        elif node.op_type == "Size" and node.input[0] in shapes:
            result = [np.array(int(np.prod(shapes[node.input[0]])), dtype=np.int64)]
        elif (
            node.output
            and all(out in known for out in node.output)
            and not all((not name) or name in constants for name in node.input)
        ):  # computed from constants: evaluated below (symbolic values may be approximations)
            result = [known[out] for out in node.output]
        elif node.op_type == "CastLike" and node.input[0] in constants and len(node.input) > 1:
            target = (dtypes or {}).get(node.input[1])
            if target is not None:
                result = [value(node.input[0]).astype(target)]
        elif (
            node.op_type not in LAYOUT_STEPS
            and node.output[0] not in recurrent_prep
            and _reads_learned(node, source_of, learned)
        ):
            kept.append(node)
            continue
        elif node.op_type == "Constant" or all(
            (not name) or name in constants for name in node.input
        ):
            inputs = [value(name) if name else None for name in node.input]
            if not _fold_size_ok(node, inputs, shapes):
                kept.append(node)
                continue
            result = evaluate_node(node, opsets, inputs)
            if result is not None:
                size_in = sum(arr.nbytes for arr in inputs if arr is not None)
                if sum(arr.nbytes for arr in result) > size_in + FOLD_GROWTH_LIMIT:
                    result = None
        if result is None or any(out in graph_outputs for out in node.output):
            kept.append(node)
            continue
        changed = True
        weight_sources = [source_of[n] for n in node.input if n and n in source_of]
        for out_name, array in zip(node.output, result):
            if not out_name:
                continue
            constants[out_name] = array
            init_by_name[out_name] = _initializer(array, out_name, store)
            new_initializers.append(init_by_name[out_name])
            shapes[out_name] = tuple(array.shape)
            if _names_a_merged_parameter(node, out_name, learned):
                source_of[out_name] = records[out_name] = FoldRecord([out_name])
            elif weight_sources and node.op_type not in ("Shape", "Size"):
                main = max(weight_sources, key=lambda rec: len(rec.sources))
                source_of[out_name] = records[out_name] = FoldRecord(
                    list(main.sources), main.steps + [_describe_step(node)]
                )
    if changed:
        del graph.node[:]
        graph.node.extend(kept)
        graph.initializer.extend(new_initializers)
    return changed


def _initializer(array: np.ndarray, name: str, store: WeightStore | None) -> onnx.TensorProto:
    if store is not None and worth_holding_array(array):
        return store.put(name, array)
    return numpy_helper.from_array(array, name)


# Operators whose output size is set by input *values* (not shapes): fold them only when the size
# is known to be reasonable, so a hostile ConstantOfShape([1e6, 1e6]) is never materialised.
_SIZE_FROM_VALUES = {
    "ConstantOfShape",
    "Expand",
    "Tile",
    "Range",
    "Resize",
    "Upsample",
    "Pad",
    "OneHot",
    "EyeLike",
    "CenterCropPad",
    "Col2Im",
}


def _fold_size_ok(node: onnx.NodeProto, inputs: list, shapes: dict[str, tuple[int, ...]]) -> bool:
    """Whether evaluating ``node`` at conversion time may stay near FOLD_GROWTH_LIMIT (the exact
    check runs on the result; this one only stops monstrous arrays from being built)."""
    budget = sum(arr.nbytes for arr in inputs if arr is not None) + FOLD_GROWTH_LIMIT
    for out in node.output:
        if out and out in shapes:
            size = 1
            for dim in shapes[out]:
                size *= max(int(dim), 0)
            if size > 2 * budget:  # elements, at least one byte each
                return False
        elif out and node.op_type in _SIZE_FROM_VALUES:
            return False  # size unknown and driven by values: keep it for run time
    return True


# Recurrent layers and their weight inputs (W, R, B): their mappers lay the weights out again
# as MindSpore's cells hold them, so what an exporter computes in front of them may fold.
_RECURRENT_WEIGHTS = {"LSTM": (1, 2, 3), "GRU": (1, 2, 3), "RNN": (1, 2, 3)}


def _recurrent_weight_prep(graph: onnx.GraphProto) -> set[str]:
    """Nodes (by first output) whose outputs only feed recurrent layers' weight inputs, directly or through
    other such nodes: a TorchScript export without constant folding regroups a PyTorch LSTM's
    gates with Slice/Concat in the graph, which the recurrent mapper needs as constants."""
    consumers: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for node in graph.node:
        for index, name in enumerate(node.input):
            if name:
                consumers.setdefault(name, []).append((node, index))
    outputs = {out.name for out in graph.output}
    prep: set[str] = set()
    for node in reversed(graph.node):  # consumers come after producers in a sorted graph

        def feeds_weights(name: str) -> bool:
            uses = consumers.get(name, [])
            return bool(uses) and all(
                (user.output and user.output[0] in prep)
                or (
                    user.domain in ("", "ai.onnx")
                    and index in _RECURRENT_WEIGHTS.get(user.op_type, ())
                )
                for user, index in uses
            )

        if (
            node.output
            and not outputs & set(node.output)
            and all(feeds_weights(out) for out in node.output if out)
        ):
            prep.add(node.output[0])
    return prep


def _reads_learned(node: onnx.NodeProto, source_of: dict[str, FoldRecord], learned) -> bool:
    """Whether the node reads a trainable weight (or a layout view of one)."""
    for name in node.input:
        record = source_of.get(name)
        if record is not None and any(source in learned for source in record.sources[:1]):
            return True
    return False


def _names_a_merged_parameter(node: onnx.NodeProto, out_name: str, learned) -> bool:
    """Whether ``node`` is the ``Identity`` a TorchScript export writes for a parameter whose
    values equal another's (the zero biases of a fresh model): its output is named after the
    parameter, which is a source parameter of its own (truly tied weights share one input)."""
    return (
        node.op_type == "Identity"
        and node.input[0] in learned
        and out_name != node.input[0]
        and "." in out_name
        and not is_generated_name(out_name)
    )


def _shape_slice(shape: tuple[int, ...], node: onnx.NodeProto) -> np.ndarray:
    attrs = {attr.name: helper.get_attribute_value(attr) for attr in node.attribute}
    start, end = attrs.get("start", 0), attrs.get("end", None)
    return np.array(shape[slice(start, end)], dtype=np.int64)


def _describe_step(node: onnx.NodeProto) -> str:
    attrs = {attr.name: helper.get_attribute_value(attr) for attr in node.attribute}
    shown = ", ".join(
        f"{k}={list(v) if isinstance(v, (list, tuple)) else v}"
        for k, v in attrs.items()
        if isinstance(v, (int, float, list, tuple))
    )
    return f"{node.op_type}({shown})"


def run(graph: Graph, context: PassContext) -> bool:
    """Fold what can be computed at conversion time; provenance goes to ``graph.fold_records``."""
    changed = fold_constants(
        graph.model,
        graph.fold_records,
        fixed_shape_values(graph),
        graph.source_parameters,
        graph.dtypes,
        graph.store,
    )
    if changed:
        merged = {name for name, rec in graph.fold_records.items() if rec.sources == [name]}
        graph.source_parameters = graph.source_parameters | merged
        graph.edited()
    return changed


def fixed_shape_values(graph: Graph) -> dict[str, np.ndarray]:
    """Integer values that symbolic inference computed to plain numbers, as arrays."""
    fixed = {}
    for name, value in graph.symbolic_values.items():
        dtype = graph.dtypes.get(name)
        if name in graph.initializers or dtype is None or dtype.kind not in "iu":
            continue
        if is_numeric(value):
            fixed[name] = np.array(value, dtype=dtype)
    return fixed
