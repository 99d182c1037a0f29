"""Facts and small tree utilities shared by the parts of the rewrite."""

from __future__ import annotations

import ast
from dataclasses import dataclass

# Method names that plain Python objects also have: kept unchanged and not reported, since the
# receiver is most likely not a tensor.
GENERIC_METHODS = {
    "add",
    "split",
    "sort",
    "count",
    "index",
    "copy",
    "pop",
    "items",
    "keys",
    "values",
    "update",
    "append",
    "extend",
    "insert",
    "remove",
    "join",
    "format",
    "replace",
    "strip",
    "all",
    "any",
    "item",
    "tolist",
    "max",
    "min",
    "sum",
    "mean",
    "round",
    "abs",
    "flip",
    "log",
    "exp",
    "sqrt",
    "apply",
    "type",
    "float",
    "int",
    "bool",
    "sub",
    "mul",
    "div",
    "eq",
    "ne",
    "lt",
    "t",
    "dim",
    "register_buffer",
    "pow",
    "norm",
    "numel",
    "prod",
    "expand",
}


MS_DTYPES = {
    "float16",
    "float32",
    "float64",
    "bfloat16",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "bool_",
    "complex64",
    "complex128",
}


@dataclass
class ClassInfo:
    name: str
    is_cell: bool
    base_key: str | None


def empty_binding():
    from .mapping import Binding

    return Binding(supplied={}, defaults={}, vararg=None, kwarg=None)


def set_store(node):
    node.ctx = ast.Store()
    return node
