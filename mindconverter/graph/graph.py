"""The one graph every pass reads and edits.

A :class:`Graph` holds the ONNX ``ModelProto`` being converted (nodes, value infos, subgraphs),
its weights by name (decoded to numpy once, on first use), where folded constants came from, and
indexes derived from the model (static shapes, dtypes, producers, consumers, topological node
views). A pass that edits the model calls :meth:`Graph.edited` (or :meth:`Graph.replace_model`),
which drops the derived indexes so the next question sees the new graph.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cached_property

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .node import Node, attribute_value, topological_order
from .provenance import FoldRecord
from .specs import static_shapes
from .symbolic import DynamicDim, SymbolicValue
from .weight_roles import trainable_initializers
from .weight_store import WeightStore, hold_large_initializers, is_held

# Attributes derived from the model; dropped on every edit.
_DERIVED = (
    "shapes",
    "symbolic_shapes",
    "dtypes",
    "producers",
    "consumer_nodes",
    "nodes",
    "used_values",
)


class Weights(Mapping):
    """The model's initializers as numpy arrays: views of the weight store's buffers for the
    large ones, the small ones (kept in the proto) decoded lazily and once until the next edit."""

    def __init__(self, graph: Graph):
        self._graph = graph
        self._arrays: dict[str, np.ndarray] = {}

    def __getitem__(self, name: str) -> np.ndarray:
        array = self._arrays.get(name)
        if array is None:
            tensor = self._graph.initializers.get(name)
            if tensor is None:
                raise KeyError(name)
            if is_held(tensor):
                return self._graph.store.array(name)
            array = self._arrays[name] = numpy_helper.to_array(tensor)
        return array

    def __contains__(self, name: object) -> bool:
        return name in self._graph.initializers

    def __iter__(self) -> Iterator[str]:
        return iter(self._graph.initializers)

    def __len__(self) -> int:
        return len(self._graph.initializers)

    def forget(self) -> None:
        """Drop the decoded arrays (an edit may have replaced an initializer under its name)."""
        self._arrays = {}


class Graph:
    """The model under conversion and everything passes and mappers ask of it."""

    def __init__(self, model: onnx.ModelProto, store: WeightStore | None = None):
        self.model = model
        # Where the bytes of the large initializers are; the model holds only their headers.
        self.store = store if store is not None else WeightStore()
        hold_large_initializers(model, self.store)
        self.fold_records: dict[str, FoldRecord] = {}
        # Names of initializers as stored in the source file (before folding made new ones).
        self.source_initializers: set[str] = {init.name for init in model.graph.initializer}
        # Those of them that are the source's trainable parameters (see weight_roles.py).
        self._initializers: dict[str, onnx.TensorProto] | None = None
        self.constants = Weights(self)
        self.source_parameters: frozenset[str] = trainable_initializers(model, self.constants)
        # Symbolic values of shape tensors from the last symbolic shape inference (see symbolic.py).
        self.symbolic_values: dict[str, SymbolicValue] = {}
        # Input dimensions kept dynamic (by name); empty for a network fixed to --shape.
        self.dynamic_dims: set[str] = set()
        # Sizes only the data decide (NonZero's count...): named so their consumers convert.
        self.data_dependent_dims: set[str] = set()

    # --- editing -------------------------------------------------------------------------
    def replace_model(self, model: onnx.ModelProto) -> None:
        """Continue with ``model`` (e.g. the result of shape inference or the optimizer)."""
        self.model = model
        self.edited()

    def edited(self) -> None:
        """Forget every index derived from the model: call after changing it in place."""
        self._initializers = None
        for name in _DERIVED:
            self.__dict__.pop(name, None)
        self.constants.forget()

    # --- the model's parts ---------------------------------------------------------------
    @property
    def initializers(self) -> dict[str, onnx.TensorProto]:
        """Initializer protos by name."""
        if self._initializers is None:
            self._initializers = {init.name: init for init in self.model.graph.initializer}
        return self._initializers

    @property
    def opsets(self) -> dict[str, int]:
        """Imported opset version per domain (``""`` for the default domain)."""
        return {entry.domain or "": entry.version for entry in self.model.opset_import}

    @property
    def opset(self) -> int:
        """The default domain's opset version."""
        opsets = self.opsets
        return opsets.get("", opsets.get("ai.onnx", 0))

    @property
    def producer(self) -> str:
        """The tool that wrote the model, with its version."""
        return f"{self.model.producer_name} {self.model.producer_version}".strip()

    @property
    def inputs(self) -> list[str]:
        """Names of the real graph inputs (not weights), in the model's order."""
        return [inp.name for inp in self.model.graph.input if inp.name not in self.initializers]

    @property
    def outputs(self) -> list[str]:
        """Names of the graph outputs, in the model's order."""
        return [out.name for out in self.model.graph.output]

    def dims(self, name: str) -> tuple | None:
        """The shape of value ``name``: ints, and :class:`DynamicDim` for dimensions that stay
        dynamic (only when the network keeps some) or that the data decide; None when not even
        the rank is known."""
        shape = self.shapes.get(name)
        if shape is not None or not (self.dynamic_dims or self.data_dependent_dims):
            return shape
        symbolic = self.symbolic_shapes.get(name)
        if symbolic is None:
            return None
        return tuple(DynamicDim(d) if isinstance(d, str) else d for d in symbolic)

    def constant(self, name: str) -> np.ndarray | None:
        """The value of initializer ``name``, or None when it is not a constant."""
        return self.constants[name] if name and name in self.initializers else None

    # --- derived indexes (rebuilt after an edit) -----------------------------------------
    @cached_property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Every value whose shape is fully known, by name."""
        return static_shapes(self.model)

    @cached_property
    def symbolic_shapes(self) -> dict[str, tuple[int | str, ...]]:
        """Every value whose rank is known: static sizes as ints, named dimensions as strings."""
        graph = self.model.graph
        found: dict[str, tuple[int | str, ...]] = {}
        for info in list(graph.input) + list(graph.value_info) + list(graph.output):
            tensor_type = info.type.tensor_type
            if not tensor_type.HasField("shape"):
                continue
            dims = []
            for dim in tensor_type.shape.dim:
                if dim.HasField("dim_value") and dim.dim_value >= 0:
                    dims.append(int(dim.dim_value))
                elif dim.HasField("dim_param") and dim.dim_param:
                    dims.append(dim.dim_param)
                else:
                    break
            else:
                found[info.name] = tuple(dims)
        for init in graph.initializer:
            found[init.name] = tuple(int(d) for d in init.dims)
        return found

    @cached_property
    def dtypes(self) -> dict[str, np.dtype]:
        """The element type of every value whose type is known, by name."""
        graph = self.model.graph
        dtypes: dict[str, np.dtype] = {}
        for info in list(graph.input) + list(graph.value_info) + list(graph.output):
            dtype = _dtype_of(info.type.tensor_type.elem_type)
            if dtype is not None:
                dtypes[info.name] = dtype
        for init in graph.initializer:
            dtype = _dtype_of(init.data_type)
            if dtype is not None:
                dtypes[init.name] = dtype
        return dtypes

    @cached_property
    def producers(self) -> dict[str, onnx.NodeProto]:
        """The node writing each value."""
        return {out: node for node in self.model.graph.node for out in node.output if out}

    @cached_property
    def consumer_nodes(self) -> dict[str, list[onnx.NodeProto]]:
        """The nodes reading each value, once per read (``Mul(x, x)`` reads ``x`` twice)."""
        readers: dict[str, list[onnx.NodeProto]] = {}
        for node in self.model.graph.node:
            for name in node.input:
                if name:
                    readers.setdefault(name, []).append(node)
        return readers

    @cached_property
    def nodes(self) -> list[Node]:
        """The nodes in topological order with decoded attributes (what mappers read)."""
        available = set(self.inputs) | set(self.initializers)
        ordered = topological_order(list(self.model.graph.node), available)
        return [
            Node(
                name=node.name or f"{node.op_type}_{index}",
                op_type=node.op_type,
                domain=node.domain if node.domain != "ai.onnx" else "",
                attrs={attr.name: attribute_value(attr) for attr in node.attribute},
                inputs=list(node.input),
                outputs=list(node.output),
                metadata={entry.key: entry.value for entry in node.metadata_props},
            )
            for index, node in enumerate(ordered)
        ]

    @cached_property
    def used_values(self) -> frozenset[str]:
        """Names of values some node reads or the graph returns."""
        used = {name for node in self.nodes for name in node.inputs if name}
        return frozenset(used | set(self.outputs))

    def value_names(self) -> set[str]:
        """Every value name the main graph defines (a new set the caller may extend)."""
        graph = self.model.graph
        names = {inp.name for inp in graph.input} | set(self.initializers)
        names |= {out for node in graph.node for out in node.output}
        return names

    def node_names(self) -> set[str]:
        """Every node name of the main graph (a new set the caller may extend)."""
        return {node.name for node in self.model.graph.node}


def claim_name(taken: set[str], wanted: str) -> str:
    """``wanted``, or ``wanted_2``, ``wanted_3``... whichever is free; adds it to ``taken``."""
    name, count = wanted, 1
    while name in taken:
        count += 1
        name = f"{wanted}_{count}"
    taken.add(name)
    return name


def declare_value(graph: onnx.GraphProto, name: str, elem_type: int, dims: list) -> None:
    """Declare value ``name`` of ``graph`` with ``elem_type`` and ``dims`` (ints and names), in
    place of any declaration it had: the result of a node a pass inserts or rewrites."""
    kept = [info for info in graph.value_info if info.name != name]
    del graph.value_info[:]
    graph.value_info.extend(kept)
    graph.value_info.append(helper.make_tensor_value_info(name, elem_type, dims))


def declare_permuted(graph: onnx.GraphProto, source: str, target: str, perm: list[int]) -> None:
    """Declare ``target``'s type as ``source``'s (a value or input of ``graph``) with its
    dimensions permuted by ``perm``: the result of a Transpose a pass inserts. A shape of
    another rank than ``perm``'s declares nothing; an unknown shape stays unknown."""
    for info in [*graph.value_info, *graph.input]:
        if info.name != source or not info.type.HasField("tensor_type"):
            continue
        dims = list(info.type.tensor_type.shape.dim)
        if dims and len(dims) != len(perm):
            return
        declared = onnx.ValueInfoProto()
        declared.CopyFrom(info)
        declared.name = target
        if dims:
            del declared.type.tensor_type.shape.dim[:]
            for axis in perm:
                declared.type.tensor_type.shape.dim.add().CopyFrom(dims[axis])
        graph.value_info.append(declared)
        return


def _dtype_of(elem_type: int) -> np.dtype | None:
    if not elem_type:
        return None
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, TypeError):
        return None
