"""MindSpore's call syntax for mappers: ``ops.matmul(q, k)`` builds the expression object
``Call("ops.matmul", [q, k])``, so a mapper reads like the line it writes.

Arithmetic and subscripts on expression objects (``x * 0.5``, ``-x``, ``x[:, -1]``) are defined
on ``Expr`` itself (base.py); this module names the namespaces a script imports.
"""

from __future__ import annotations

from typing import Any

from .base import Call


class Function:
    """A callable of a script's namespace (``ops.softmax``): calling it builds a ``Call``."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Call:
        return Call(self.name, list(args), dict(kwargs))

    def __getattr__(self, name: str) -> Function:
        """A name inside this one: ``ms.Tensor.view``."""
        if name.startswith("_"):
            raise AttributeError(name)
        return Function(f"{self.name}.{name}")

    def __repr__(self) -> str:
        return f"Function({self.name!r})"


class Namespace:
    """A module a script imports (``ops``, ``ms``): its attributes are ``Function``s."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def __getattr__(self, name: str) -> Function:
        if name.startswith("_"):
            raise AttributeError(name)
        return Function(f"{self.prefix}.{name}")

    def __getitem__(self, name: str) -> Function:
        """The function named at run time: ``ops[f"conv{rank}d"]``."""
        return Function(f"{self.prefix}.{name}")


ops = Namespace("ops")
ms = Namespace("ms")
