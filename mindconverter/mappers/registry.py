"""The mapper registry: which function converts which ONNX operator at which opset.

Mapper modules mark functions with :func:`mapper`; :func:`default_registry` collects them into a
fresh :class:`MapperRegistry` (no module-level mutable state). Users add or override mappers on
their own registry instance and pass it to ``mindconverter.convert(..., registry=...)``::

    registry = default_registry()

    @registry.register("MyOp", domain="com.example")
    def map_my_op(ctx):
        return Call("ops.relu", [Input(0)])
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass

MapperFn = Callable[..., object]
NEWEST = 10_000


@dataclass(frozen=True)
class MapperSpec:
    """One registration: operator, domain, opset range (inclusive) and the function."""

    op_type: str
    domain: str
    since: int
    until: int
    fn: MapperFn


def mapper(op_types: str | Iterable[str], since: int = 1, until: int = NEWEST, domain: str = ""):
    """Mark a function as the mapper for ``op_types`` from opset ``since`` to ``until``."""
    names = [op_types] if isinstance(op_types, str) else list(op_types)

    def mark(fn: MapperFn) -> MapperFn:
        specs = list(getattr(fn, "mapper_specs", []))
        specs.extend(MapperSpec(name, domain, since, until, fn) for name in names)
        fn.mapper_specs = specs
        return fn

    return mark


class MapperRegistry:
    """Looks mappers up by (domain, op_type) and opset version range."""

    def __init__(self) -> None:
        self._specs: dict[tuple[str, str], list[MapperSpec]] = {}

    def add(self, spec: MapperSpec) -> None:
        """Add a registration; a later one wins over an earlier one for overlapping versions."""
        self._specs.setdefault((spec.domain, spec.op_type), []).append(spec)

    def register(
        self, op_types: str | Iterable[str], since: int = 1, until: int = NEWEST, domain: str = ""
    ):
        """Decorator registering a user mapper on this registry (overrides built-ins)."""

        def decorate(fn: MapperFn) -> MapperFn:
            names = [op_types] if isinstance(op_types, str) else list(op_types)
            for name in names:
                self.add(MapperSpec(name, domain, since, until, fn))
            return fn

        return decorate

    def lookup(self, op_type: str, opset: int, domain: str = "") -> MapperFn | None:
        """The mapper for this operator at this opset version, or None."""
        for spec in reversed(self._specs.get((domain, op_type), [])):
            if spec.since <= opset <= spec.until:
                return spec.fn
        return None

    def specs(self) -> list[MapperSpec]:
        """Every registration, sorted by domain and operator."""
        return [spec for key in sorted(self._specs) for spec in self._specs[key]]

    def op_types(self, domain: str = "") -> list[str]:
        return sorted(op for dom, op in self._specs if dom == domain)


def default_registry() -> MapperRegistry:
    """A new registry holding every built-in mapper of the ``mindconverter.mappers`` package."""
    from . import __name__ as package_name
    from . import __path__ as package_path

    registry = MapperRegistry()
    for info in sorted(pkgutil.iter_modules(package_path), key=lambda m: m.name):
        if info.name in ("base", "registry") or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package_name}.{info.name}")
        for value in vars(module).values():
            for spec in getattr(value, "mapper_specs", []):
                if getattr(value, "__module__", None) == module.__name__:
                    registry.add(spec)
    return registry
