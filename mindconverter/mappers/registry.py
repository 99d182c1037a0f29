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
import inspect
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import onnx

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
        fn.mapper_specs = specs  # type: ignore[attr-defined]  # read back by default_registry
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
        """The mapper for this operator at this opset version, or None.

        The version that counts is the operator's definition in force at ``opset`` (its schema's
        ``since_version``): a mapper written for the opset-13 definition serves opsets 13-17 when
        the operator did not change in between.
        """
        version = schema_version(op_type, opset, domain)
        for spec in reversed(self._specs.get((domain, op_type), [])):
            if spec.since <= version <= spec.until:
                return spec.fn
        return None

    def why_missing(self, op_type: str, opset: int, domain: str = "") -> str:
        """Why :meth:`lookup` found nothing: no mapper at all, or none for this definition."""
        specs = self._specs.get((domain, op_type), [])
        where = f"domain '{domain}'" if domain else f"opset {opset}"
        if not specs:
            return f"no mapper for '{op_type}' at {where}"
        version = schema_version(op_type, opset, domain)
        known = ", ".join(
            f"{spec.since}-{spec.until}" if spec.until < NEWEST else f"{spec.since}+"
            for spec in specs
        )
        newer = version > max(spec.until for spec in specs)
        return (
            f"'{op_type}' at {where} follows its opset-{version} definition, "
            + ("newer than" if newer else "not covered by")
            + f" the mappers mindconverter has (opsets {known})"
        )

    def specs(self) -> list[MapperSpec]:
        """Every registration, sorted by domain and operator."""
        return [spec for key in sorted(self._specs) for spec in self._specs[key]]

    def op_types(self, domain: str = "") -> list[str]:
        return sorted(op for dom, op in self._specs if dom == domain)


def schema_version(op_type: str, opset: int, domain: str = "") -> int:
    """The ``since_version`` of the operator's definition in force at ``opset`` (``opset`` itself
    for operators ONNX does not define, e.g. custom domains)."""
    try:
        return int(onnx.defs.get_schema(op_type, opset, domain).since_version)
    except Exception:  # noqa: BLE001 - SchemaError for unknown operators and domains
        return opset


def check_no_overlaps(specs: Iterable[MapperSpec]) -> None:
    """Raise when two registrations claim the same operator for overlapping opset ranges."""
    claimed: dict[tuple[str, str], list[MapperSpec]] = {}
    for spec in specs:
        for other in claimed.get((spec.domain, spec.op_type), []):
            if spec.since <= other.until and other.since <= spec.until:
                raise RuntimeError(
                    f"mappers {other.fn.__module__}.{other.fn.__name__} and "
                    f"{spec.fn.__module__}.{spec.fn.__name__} both claim '{spec.op_type}' "
                    f"for opsets {max(spec.since, other.since)}-{min(spec.until, other.until)}"
                )
        claimed.setdefault((spec.domain, spec.op_type), []).append(spec)


def default_registry() -> MapperRegistry:
    """A new registry holding every built-in mapper of the ``mindconverter.mappers`` package;
    raises when two built-in mappers claim the same operator and version."""
    from . import __name__ as package_name
    from . import __path__ as package_path

    registry = MapperRegistry()
    for info in sorted(pkgutil.iter_modules(package_path), key=lambda m: m.name):
        if info.name in ("base", "common", "registry", "syntax") or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package_name}.{info.name}")
        for value in vars(module).values():
            if not inspect.isfunction(value):
                continue
            for spec in getattr(value, "mapper_specs", []):
                if getattr(value, "__module__", None) == module.__name__:
                    registry.add(spec)
    check_no_overlaps(registry.specs())
    return registry
