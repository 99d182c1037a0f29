"""Which of the source model's initializers are trainable parameters.

A PyTorch dynamo export says so itself: each initializer's value metadata carries the
``torch.export`` input kind (``PARAMETER``, ``BUFFER`` or ``CONSTANT_TENSOR``). Other exports
(TorchScript, tf2onnx) only leave evidence: a tensor read as the weight of a layer is a parameter;
BatchNorm statistics and tensors holding infinities (attention masks) are not; the names the
TorchScript exporter makes up (``onnx::...``) are constants unless a layer reads them as weights.
Everything else that is a float tensor of more than one value counts as a learned weight.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import onnx

from .half_precision import FLOAT_TYPES

_KIND_KEY = "pkg.torch.export.graph_signature.InputSpec.kind"

# (operator, input positions) that hold a layer's learned weights.
_WEIGHT_SLOTS = {
    "Conv": (1, 2),
    "ConvTranspose": (1, 2),
    "Gemm": (1, 2),
    "MatMul": (1,),
    "LSTM": (1, 2, 3),
    "GRU": (1, 2, 3),
    "RNN": (1, 2, 3),
    "LayerNormalization": (1, 2),
    "GroupNormalization": (1, 2),
    "InstanceNormalization": (1, 2),
    "BatchNormalization": (1, 2),
    "PRelu": (1,),
    "Embedding": (0,),
}
_BUFFER_SUFFIXES = ("running_mean", "running_var", "num_batches_tracked", "moving_mean")
_GENERATED_NAME = re.compile(r"^(onnx::|val_\d|_val_|_v_\d|Constant_\d|const_fold_opt__)")


def trainable_initializers(model: onnx.ModelProto, values: Mapping) -> frozenset[str]:
    """Names of the initializers that are the source's trainable parameters (``values`` gives
    an initializer's array by name)."""
    declared = _declared_kinds(model.graph)
    weight_reads = {
        node.input[i]
        for node in model.graph.node
        for i in _WEIGHT_SLOTS.get(node.op_type, ())
        if node.domain in ("", "ai.onnx") and i < len(node.input)
    }
    found = set()
    for init in model.graph.initializer:
        if init.name in declared:
            if declared[init.name] == "PARAMETER":
                found.add(init.name)
        elif _looks_trainable(init, init.name in weight_reads, values):
            found.add(init.name)
    return frozenset(found)


def _declared_kinds(graph: onnx.GraphProto) -> dict[str, str]:
    kinds = {}
    for info in list(graph.value_info) + list(graph.input):
        for entry in info.metadata_props:
            if entry.key == _KIND_KEY:
                kinds[info.name] = entry.value
    for init in graph.initializer:
        for entry in init.metadata_props:
            if entry.key == _KIND_KEY:
                kinds[init.name] = entry.value
    return kinds


def _looks_trainable(init: onnx.TensorProto, read_as_weight: bool, values: Mapping) -> bool:
    if init.data_type not in FLOAT_TYPES or _element_count(init) <= 1:
        return False
    if init.name.endswith(_BUFFER_SUFFIXES):
        return False
    if read_as_weight:
        return True
    if _GENERATED_NAME.match(init.name):
        return False
    return bool(np.isfinite(values[init.name]).all())


def _element_count(init: onnx.TensorProto) -> int:
    count = 1
    for dim in init.dims:
        count *= int(dim)
    return count


def is_generated_name(name: str) -> bool:
    """Whether an initializer's name was made up by the exporter (``onnx::MatMul_12``)."""
    return bool(_GENERATED_NAME.match(name))


def learned_source(graph, name: str) -> str | None:
    """The source parameter a value is (or was folded from by layout steps), else None."""
    record = graph.fold_records.get(name)
    source = record.sources[0] if record is not None and record.sources else name
    return source if source in graph.source_parameters else None
