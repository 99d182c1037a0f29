"""Pass: ONNX shape inference (with data propagation where it is safe)."""

from __future__ import annotations

import onnx
from onnx import shape_inference

from ..errors import make_error
from ..graph import Graph
from ..graph.example_run import observed_ranks
from ..graph.symbolic import infer_symbolic
from .context import PassContext


def infer_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    """Run ONNX shape inference with data propagation (shape arithmetic included).

    Data propagation keeps every element of 1-D integer values as a proto message (hundreds of
    bytes each), so a hostile ``Range(0, 1e9)`` would exhaust memory: it is only used when a first
    pass without it shows no integer vector longer than ``DATA_PROP_LIMIT``.
    """
    try:
        plain = shape_inference.infer_shapes(
            model, check_type=False, strict_mode=False, data_prop=False
        )
        if _long_integer_vectors(plain):
            return plain
        return shape_inference.infer_shapes(
            model, check_type=False, strict_mode=False, data_prop=True
        )
    except MemoryError:
        raise make_error(
            "ABSURD_DIMENSION", "Shape inference ran out of memory on the declared sizes."
        ) from None
    except Exception as exc:  # noqa: BLE001 - InferenceError, RuntimeError, ValidationError...
        raise make_error(
            "SHAPE_INFERENCE_FAILED", str(exc).splitlines()[0] if str(exc) else ""
        ) from None


# Longest integer vector for which shape inference may propagate values (real shape tensors are tiny).
DATA_PROP_LIMIT = 4096


_INTEGER_TYPES = {
    onnx.TensorProto.INT64,
    onnx.TensorProto.INT32,
    onnx.TensorProto.INT16,
    onnx.TensorProto.INT8,
    onnx.TensorProto.UINT64,
    onnx.TensorProto.UINT32,
    onnx.TensorProto.UINT16,
    onnx.TensorProto.UINT8,
}


def _long_integer_vectors(model: onnx.ModelProto) -> bool:
    graph = model.graph
    for init in graph.initializer:
        if (
            init.data_type in _INTEGER_TYPES
            and len(init.dims) == 1
            and init.dims[0] > DATA_PROP_LIMIT
        ):
            return True
    for info in list(graph.input) + list(graph.value_info) + list(graph.output):
        tensor_type = info.type.tensor_type
        if tensor_type.elem_type in _INTEGER_TYPES and len(tensor_type.shape.dim) == 1:
            dim = tensor_type.shape.dim[0]
            if not dim.HasField("dim_value") or dim.dim_value > DATA_PROP_LIMIT:
                return True
    return False


def run(graph: Graph, context: PassContext) -> bool:
    """Infer the shape and type of every value (replaces the graph's value infos).

    A graph whose inputs have named (symbolic) dimensions goes through symbolic inference, which
    also records the symbolic values of its shape tensors in ``graph.symbolic_values``.
    """
    if has_symbolic_inputs(graph.model):
        symbolic = infer_symbolic(graph.model, _named_sizes(context))
        if symbolic is not None:
            graph.replace_model(symbolic.model)
            graph.symbolic_values = _vectors_only(graph, symbolic.values)
            return False
    graph.replace_model(infer_shapes(graph.model))
    graph.symbolic_values = {}
    _name_unknown_sizes_until_settled(graph)
    if _observe_missing_ranks(graph, context):
        graph.replace_model(infer_shapes(graph.model))
        _name_unknown_sizes_until_settled(graph)
    return False


def _named_sizes(context: PassContext) -> dict[str, int]:
    """Each named input dimension's size at the conversion shape."""
    sizes = {}
    for name, declared in context.declared_shapes.items():
        for dim, size in zip(declared, context.resolved_shapes.get(name, ()), strict=False):
            if isinstance(dim, str) and isinstance(size, int):
                sizes[dim] = size
    return sizes


def _vectors_only(graph: Graph, values: dict) -> dict:
    """The symbolic values of scalars and vectors. onnxruntime's symbolic inference keeps a
    reshaped value's data flat, so its value for a tensor of rank 2 or more reads as a vector
    (a Slice over rows of such a tensor came out reversed element by element): dropped."""
    shapes = graph.symbolic_shapes
    return {name: value for name, value in values.items() if len(shapes.get(name, ())) <= 1}


def _observe_missing_ranks(graph: Graph, context: PassContext) -> bool:
    """Give values whose rank inference could not find the rank they have in one run on
    example inputs, their sizes named (unknown); whether any was found."""
    body = graph.model.graph
    infos = {info.name: info for info in list(body.value_info) + list(body.output)}
    missing = []
    for node in body.node:
        for out in node.output:
            info = infos.get(out)
            if not out or (info is not None and not info.type.HasField("tensor_type")):
                continue  # sequences, optionals
            if info is None or not info.type.tensor_type.HasField("shape"):
                missing.append(out)
    if not missing or not context.resolved_shapes:
        return False
    found = observed_ranks(graph.model, graph.store, context.resolved_shapes, missing)
    for name, (elem_type, rank) in found.items():
        if name not in infos:
            infos[name] = body.value_info.add(name=name)
        tensor_type = infos[name].type.tensor_type
        tensor_type.elem_type = tensor_type.elem_type or elem_type
        tensor_type.shape.SetInParent()  # a scalar has an empty shape
        dims = tensor_type.shape.dim
        for axis in range(rank):
            dims.add().dim_param = f"observed_{len(graph.data_dependent_dims)}_{axis}"
            graph.data_dependent_dims.add(dims[axis].dim_param)
    return bool(found)


def _name_unknown_sizes_until_settled(graph: Graph) -> None:
    for _ in range(NAMING_ROUNDS):
        named = name_data_dependent_dims(graph.model)
        new = named - graph.data_dependent_dims
        graph.data_dependent_dims |= named
        if not new:
            break
        graph.replace_model(infer_shapes(graph.model))  # carry the names to the consumers


# Rounds of naming unknown sizes and inferring again (each may let inference reach further).
NAMING_ROUNDS = 3


# Operators whose output sizes only the data decide, and the rank of their outputs when shape
# inference leaves it unknown (None: keep what inference found).
_DATA_DEPENDENT = {"NonZero": 2, "NonMaxSuppression": 2, "Compress": None, "Unique": None}


def name_data_dependent_dims(model: onnx.ModelProto) -> set[str]:
    """Give the unknown sizes of data-dependent outputs a name (``nonzero_count_3``), and
    NonZero's output its rank ([input rank, count]) when inference lost it, so shape inference
    carries them to the consumers and mappers see a known rank with a dynamic size."""
    graph = model.graph
    infos = {info.name: info for info in list(graph.value_info) + list(graph.output)}
    ranks = {
        info.name: len(info.type.tensor_type.shape.dim)
        for info in list(graph.input) + list(graph.value_info)
        if info.type.tensor_type.HasField("shape")
    }
    ranks.update({init.name: len(init.dims) for init in graph.initializer})
    named: set[str] = set()
    for index, node in enumerate(graph.node):
        if node.domain not in ("", "ai.onnx"):
            continue
        if node.op_type not in _DATA_DEPENDENT:  # sizes computed at run time (a Pad's pads...)
            named |= _name_unknown_sizes(node, index, infos)
            continue
        for position, out in enumerate(node.output[:1]):
            if not out:
                continue
            info = infos.get(out)
            if info is None:
                info = graph.value_info.add(name=out)
                infos[out] = info
            shape_known = info.type.tensor_type.HasField("shape")
            if not shape_known and node.op_type == "NonZero" and node.input[0] in ranks:
                dims = info.type.tensor_type.shape.dim
                dims.add().dim_value = max(ranks[node.input[0]], 1)
                dims.add()
                if not info.type.tensor_type.elem_type:
                    info.type.tensor_type.elem_type = onnx.TensorProto.INT64
            for axis, dim in enumerate(info.type.tensor_type.shape.dim):
                if not dim.HasField("dim_value"):
                    if not dim.dim_param:  # (newer onnx names them unk__N itself)
                        dim.dim_param = f"{node.op_type.lower()}_count_{index}_{position}_{axis}"
                    named.add(dim.dim_param)
    return named


def _name_unknown_sizes(node: onnx.NodeProto, index: int, infos: dict) -> set[str]:
    """Names for the sizes inference left unknown in outputs whose rank it found."""
    named = set()
    for position, out in enumerate(node.output):
        info = infos.get(out)
        if info is None or not info.type.tensor_type.HasField("shape"):
            continue
        for axis, dim in enumerate(info.type.tensor_type.shape.dim):
            if not dim.HasField("dim_value"):
                if not dim.dim_param:  # (newer onnx names them unk__N itself)
                    dim.dim_param = f"{node.op_type.lower()}_size_{index}_{position}_{axis}"
                named.add(dim.dim_param)
    return named


def has_symbolic_inputs(model: onnx.ModelProto) -> bool:
    """Whether any graph input has a dimension that is not a fixed size."""
    weights = {init.name for init in model.graph.initializer}
    return any(
        not dim.HasField("dim_value")
        for inp in model.graph.input
        if inp.name not in weights
        for dim in inp.type.tensor_type.shape.dim
    )
