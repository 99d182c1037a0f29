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
    Noted,
    Outputs,
    Param,
    Unpack,
    Unsupported,
    Weight,
)
from .registry import MapperRegistry, default_registry, mapper
from .syntax import ms, ops

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
    "Noted",
    "Outputs",
    "Param",
    "Unpack",
    "Unsupported",
    "Weight",
    "default_registry",
    "mapper",
    "ms",
    "ops",
]
