"""Graph inputs and outputs as the model declares them, and the shapes it states."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper


@dataclass
class TensorSpec:
    """A graph input or output as the model declares it."""

    name: str
    elem_type: int
    shape: list[int | str | None] | None  # ints for static dims, names or None for dynamic ones

    @property
    def dtype_name(self) -> str:
        if not self.elem_type:
            return "unknown"
        return np.dtype(helper.tensor_dtype_to_np_dtype(self.elem_type)).name

    @property
    def is_static(self) -> bool:
        return self.shape is not None and all(isinstance(d, int) for d in self.shape)

    def describe(self) -> str:
        dims = (
            "?"
            if self.shape is None
            else ", ".join(str(d if d is not None else "?") for d in self.shape)
        )
        return f"{self.name}: {self.dtype_name}[{dims}]"


def _spec_from_value_info(info: onnx.ValueInfoProto) -> TensorSpec:
    tensor_type = info.type.tensor_type
    shape: list[int | str | None] | None = None
    if tensor_type.HasField("shape"):
        shape = []
        for dim in tensor_type.shape.dim:
            if (
                dim.HasField("dim_value") and dim.dim_value != -1
            ):  # Paddle2ONNX writes -1 for dynamic
                shape.append(int(dim.dim_value))
            elif dim.HasField("dim_param"):
                shape.append(dim.dim_param)
            else:
                shape.append(None)
    return TensorSpec(info.name, tensor_type.elem_type, shape)


def detect_inputs(model: onnx.ModelProto) -> list[TensorSpec]:
    """The model's real inputs (not weights), in the model's order."""
    weights = {init.name for init in model.graph.initializer}
    return [_spec_from_value_info(inp) for inp in model.graph.input if inp.name not in weights]


def detect_outputs(model: onnx.ModelProto) -> list[TensorSpec]:
    """The model's outputs, in the model's order."""
    return [_spec_from_value_info(out) for out in model.graph.output]


def static_shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    """Every value whose shape is fully known, by name."""
    known: dict[str, tuple[int, ...]] = {}
    for info in list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output):
        spec = _spec_from_value_info(info)
        if spec.is_static and spec.shape is not None:
            known[info.name] = tuple(int(d) for d in spec.shape if d is not None)
    for init in model.graph.initializer:
        known[init.name] = tuple(init.dims)
    return known
