"""A control-flow body (an ``If`` branch, a ``Loop`` or ``Scan`` body) as a model of its own.

The body reads its formal inputs and, by name, values of the graphs around it (outer scope).
The model made here takes both as inputs, in that order, so it converts like any network into a
cell called with them. Small outer constants are copied in (their mappers need them constant),
except the source's parameters, which the outer network holds and passes in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .graph import Graph

# Outer constants up to this many elements are copied into the body; larger ones are passed in.
COPIED_CONSTANT_SIZE = 4096


@dataclass
class BodyModel:
    """The body as a model, and the outer values its cell is called with after the formals."""

    model: onnx.ModelProto
    captured: list[str]  # outer values, in the order of the model's inputs after the formals
    example_shapes: dict[str, tuple[int, ...]]  # sizes for every input (2 for a dynamic axis)


def outer_reads(body: onnx.GraphProto) -> list[str]:
    """Names ``body`` (and the bodies nested in it) reads without defining them, in order."""
    defined = {inp.name for inp in body.input} | {init.name for init in body.initializer}
    defined |= {out for node in body.node for out in node.output}
    reads: dict[str, None] = {}
    for node in body.node:
        names = list(node.input)
        for attr in node.attribute:
            nested = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
            for sub in nested:
                names += outer_reads(sub)
        for name in names:
            if name and name not in defined:
                reads[name] = None
    return list(reads)


def _value_info(name: str, elem_type: int, dims) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem_type, list(dims) if dims is not None else None)


def declared_dims(info: onnx.ValueInfoProto) -> list | None:
    """A value info's dims: sizes, names, None for an unnamed unknown size; None without a
    shape."""
    tensor_type = info.type.tensor_type
    if not tensor_type.HasField("shape"):
        return None
    return [
        d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
        for d in tensor_type.shape.dim
    ]


def body_model(
    body: onnx.GraphProto,
    outer: Graph,
    formal_types: list[tuple[int, list | None]],
    name: str,
) -> BodyModel:
    """``body`` as a model whose inputs are its formals (typed ``formal_types`` where the body
    declares no type or shape) and then the outer values it reads."""
    inputs, example = [], {}
    taken: set[str] = set()
    for index, inp in enumerate(body.input):
        elem_type, dims = formal_types[index] if index < len(formal_types) else (0, None)
        declared = inp.type.tensor_type
        if declared.elem_type:
            elem_type = declared.elem_type
        declared_sizes = declared_dims(inp)
        if declared_sizes is not None and all(d is not None for d in declared_sizes):
            dims = declared_sizes
        dims = _named_dims(dims, f"{inp.name}", taken)
        inputs.append(_value_info(inp.name, elem_type, dims))
    copied = []
    captured = []
    for outer_name in outer_reads(body):
        constant = outer.constants.get(outer_name)
        trainable = outer_name in outer.source_parameters  # the outer network owns it
        if constant is not None and constant.size <= COPIED_CONSTANT_SIZE and not trainable:
            copied.append(numpy_helper.from_array(np.asarray(constant), outer_name))
            continue
        dtype = outer.dtypes.get(outer_name)
        if dtype is None:
            raise ValueError(f"the type of outer value '{outer_name}' is unknown")
        outer_dims = outer.symbolic_shapes.get(outer_name)
        if outer_dims is None:
            raise ValueError(f"the rank of outer value '{outer_name}' is unknown")
        elem_type = helper.np_dtype_to_tensor_dtype(dtype)
        named = _named_dims(outer_dims, outer_name, taken)
        inputs.append(_value_info(outer_name, elem_type, named))
        captured.append(outer_name)
    for info in inputs:
        dims = declared_dims(info) or []
        example[info.name] = tuple(d if isinstance(d, int) else 2 for d in dims)
    outputs = [_value_info(out.name, out.type.tensor_type.elem_type, None) for out in body.output]
    graph = helper.make_graph(
        list(body.node),
        name,
        inputs,
        outputs,
        list(body.initializer) + copied,
        value_info=list(body.value_info),
    )
    model = helper.make_model(
        graph, opset_imports=list(outer.model.opset_import), producer_name="mindconverter"
    )
    model.ir_version = outer.model.ir_version
    return BodyModel(model, captured, example)


def _named_dims(dims, stem: str, taken: set[str]) -> list | None:
    """Dims with every unknown or symbolic size given a name (its own when it has one)."""
    if dims is None:
        return None
    named: list[int | str] = []
    for axis, dim in enumerate(dims):
        if isinstance(dim, (int, np.integer)) and dim > 0:
            named.append(int(dim))
        elif isinstance(dim, str) and dim:
            named.append(dim)
        else:
            name, count = f"{stem}_dim{axis}", 1
            while name in taken:
                count += 1
                name = f"{stem}_dim{axis}_{count}"
            taken.add(name)
            named.append(name)
    return named
