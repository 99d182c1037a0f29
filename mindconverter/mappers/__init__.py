"""Operator mappers: one function per ONNX operator (family modules), plus the registry."""

from .base import (
    BinOp,
    Call,
    Cell,
    Const,
    DType,
    Input,
    Item,
    Lit,
    Neg,
    NodeContext,
    Outputs,
    Param,
    Unpack,
    Unsupported,
    Weight,
)
from .registry import MapperRegistry, default_registry, mapper

__all__ = [
    "BinOp",
    "Call",
    "Cell",
    "Const",
    "DType",
    "Input",
    "Item",
    "Lit",
    "MapperRegistry",
    "Neg",
    "NodeContext",
    "Outputs",
    "Param",
    "Unpack",
    "Unsupported",
    "Weight",
    "default_registry",
    "mapper",
]
