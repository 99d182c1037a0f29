"""Pass: combine the declared input shapes with --shape and write them into the graph."""

from __future__ import annotations

import math
import re

import onnx

from ..errors import make_error
from ..graph import Graph
from ..graph.specs import TensorSpec
from .context import PassContext

# A dimension beyond this is not a real size (it would not fit in memory) but an export bug.
MAX_DIMENSION = 1 << 40
# An example input (--shape) is allocated for shape inference and --verify: at most this many
# elements (4 GiB of float32), so a typo cannot ask for terabytes.
MAX_EXAMPLE_ELEMENTS = 1 << 30


def parse_shape(text: str) -> tuple[int, ...]:
    """Parse ``"1,3,224,224"`` into a tuple of non-negative ints (0 is an empty axis; raises
    ArgumentError)."""
    stripped = text.strip().strip("[]()")
    if not stripped:
        raise make_error("BAD_SHAPE", f"Empty shape '{text}'.")
    dims = []
    for part in stripped.split(","):
        part = part.strip()
        if re.fullmatch(r"-\s*[0-9]+", part):
            raise make_error(
                "BAD_SHAPE", f"'{text}' has dimension {part}; dimensions cannot be negative."
            )
        if not re.fullmatch(r"[+]?[0-9]+", part):
            shown = part if part else "(empty)"
            raise make_error(
                "BAD_SHAPE", f"'{text}' is not a shape: '{shown}' is not a whole number."
            )
        value = int(part)
        if value > MAX_DIMENSION:
            raise make_error("BAD_SHAPE", f"'{text}' has dimension {value}, which is too large.")
        dims.append(value)
    if math.prod(dims) > MAX_EXAMPLE_ELEMENTS:
        raise make_error(
            "BAD_SHAPE",
            f"'{text}' asks for {math.prod(dims)} elements; an input may have at most "
            f"{MAX_EXAMPLE_ELEMENTS}.",
        )
    return tuple(dims)


def parse_shape_request(text: str) -> tuple[str | None, tuple[int, ...]]:
    """``"1,3,224,224"`` (the next input's shape) or ``"name=1,3,224,224"`` (input ``name``'s;
    ``"name="`` is a scalar)."""
    if "=" in text:
        name, _, dims = text.rpartition("=")
        if not name:
            raise make_error("BAD_SHAPE", f"'{text}' names no input before '='.")
        return name, (parse_shape(dims) if dims.strip() else ())
    return None, parse_shape(text)


def _assign_shapes(
    specs: list[TensorSpec], shapes: list[tuple[str | None, tuple[int, ...]]]
) -> dict[str, tuple[int, ...]]:
    """Which input each requested shape is for: named ones by name; unnamed ones in order to every
    remaining input, or (when fewer are given) to the remaining inputs that are not fully static,
    or else to the inputs they fit in order (a fully static input, a scalar included, needs none)."""
    known = {spec.name for spec in specs}
    named: dict[str, tuple[int, ...]] = {}
    for name, dims in shapes:
        if name is None:
            continue
        if name not in known:
            names = ", ".join(spec.name for spec in specs)
            raise make_error(
                "UNKNOWN_NODE", f"--shape names '{name}', which is not an input ({names})."
            )
        if name in named:
            raise make_error("DUPLICATE_NODE", f"--shape gives input '{name}' twice.")
        named[name] = dims
    positional = [dims for name, dims in shapes if name is None]
    remaining = [spec for spec in specs if spec.name not in named]
    if not positional or len(positional) == len(remaining):
        return named | {spec.name: dims for spec, dims in zip(remaining, positional)}
    needing = [spec for spec in remaining if not spec.is_static]
    if len(positional) == len(needing):
        return named | {spec.name: dims for spec, dims in zip(needing, positional)}
    fitted = _fit_in_order(remaining, positional)
    if fitted is None:
        names = ", ".join(spec.name for spec in remaining)
        dynamic = ", ".join(spec.name for spec in needing) or "none"
        raise make_error(
            "SHAPE_COUNT",
            f"{len(positional)} shape(s) given for {len(remaining)} input(s) ({names}); "
            f"inputs with dynamic dimensions: {dynamic}.",
        )
    return named | fitted


def _fits(spec: TensorSpec, dims: tuple[int, ...]) -> bool:
    """Whether ``dims`` could be the shape of ``spec`` (its rank and static sizes)."""
    if spec.shape is None:
        return True
    return len(spec.shape) == len(dims) and all(
        not isinstance(have, int) or have == want for have, want in zip(spec.shape, dims)
    )


def _fit_in_order(
    specs: list[TensorSpec], positional: list[tuple[int, ...]]
) -> dict[str, tuple[int, ...]] | None:
    """Give each shape, in order, to the next input it fits; every input that gets none must be
    fully static. None when that does not work out."""
    assigned: dict[str, tuple[int, ...]] = {}
    pending = list(positional)
    unsized = []
    for spec in specs:
        if pending and _fits(spec, pending[0]):
            assigned[spec.name] = pending.pop(0)
        elif not spec.is_static:
            unsized.append(spec)
    sizes = named_sizes(specs, assigned)
    if pending or any(derived_shape(spec, sizes) is None for spec in unsized):
        return None
    return assigned


def named_sizes(specs: list[TensorSpec], given: dict[str, tuple[int, ...]]) -> dict[str, int]:
    """The size each named dimension (``batch``) takes in the shapes ``given``."""
    sizes: dict[str, int] = {}
    for spec in specs:
        if spec.name in given and spec.shape is not None:
            for dim, size in zip(spec.shape, given[spec.name]):
                if isinstance(dim, str) and dim.strip():
                    sizes.setdefault(dim, size)
    return sizes


def derived_shape(spec: TensorSpec, sizes: dict[str, int]) -> tuple[int, ...] | None:
    """``spec``'s shape when every dynamic dimension of it is named and sized in ``sizes``
    (Silero VAD's state ``[2, batch, 64]`` once ``input`` gives ``batch``); else None."""
    if spec.shape is None:
        return None
    dims = []
    for dim in spec.shape:
        if isinstance(dim, int) and dim > 0:
            dims.append(dim)
        elif isinstance(dim, str) and dim in sizes:
            dims.append(sizes[dim])
        else:
            return None
    return tuple(dims)


def resolve_input_shapes(
    specs: list[TensorSpec], shapes: list[tuple[str | None, tuple[int, ...]]] | None
) -> dict[str, tuple[int, ...]]:
    """Combine declared input shapes with --shape values; checks count and static dims."""
    given_by_name = _assign_shapes(specs, shapes or [])
    sizes = named_sizes(specs, given_by_name)
    resolved = {}
    for spec in specs:
        given = given_by_name.get(spec.name)
        declared = spec.shape
        for dim in declared or []:
            if isinstance(dim, int) and (dim < 0 or dim > MAX_DIMENSION):
                raise make_error(
                    "ABSURD_DIMENSION", f"Input '{spec.name}' declares dimension {dim}."
                )
        if given is None and not spec.is_static:
            given = derived_shape(spec, sizes)
            if given is not None and math.prod(given) > MAX_EXAMPLE_ELEMENTS:
                raise make_error(
                    "BAD_SHAPE",
                    f"Input '{spec.name}' would take {math.prod(given)} elements at the sizes "
                    f"--shape gives its named dimensions; an input may have at most "
                    f"{MAX_EXAMPLE_ELEMENTS}.",
                )
        if given is None:
            if not spec.is_static:
                raise make_error(
                    "SHAPE_REQUIRED",
                    f"Input {spec.describe()} has dynamic or unknown dimensions.",
                )
            if math.prod(declared) > MAX_DIMENSION:  # each dim fits, all of them cannot
                raise make_error(
                    "ABSURD_DIMENSION",
                    f"Input '{spec.name}' declares {list(declared)}: more elements than any "
                    "machine holds.",
                )
            resolved[spec.name] = tuple(declared)
            continue
        _check_against_declared(spec, given)
        resolved[spec.name] = tuple(given)
    return resolved


def _check_against_declared(spec: TensorSpec, given: tuple[int, ...]) -> None:
    declared = spec.shape
    if declared is not None and len(declared) != len(given):
        raise make_error(
            "SHAPE_CONFLICT",
            f"--shape {','.join(map(str, given)) or '(scalar)'} has rank {len(given)} but input "
            f"{spec.describe()} has rank {len(declared)}.",
        )
    for axis, (want, have) in enumerate(zip(given, declared or [])):
        if isinstance(have, int) and have > 0 and have != want:
            raise make_error(
                "SHAPE_CONFLICT",
                f"--shape gives {want} for axis {axis} of input {spec.describe()}, which is static "
                f"{have}.",
            )


def symbolic_input_shapes(
    specs: list[TensorSpec], resolved: dict[str, tuple[int, ...]]
) -> dict[str, tuple[int | str, ...]]:
    """Input shapes that keep every dimension the model declares dynamic as a name: its own
    (``batch``, dynamo's ``s0``) or ``<input>_dim<axis>`` for an unnamed one."""
    shapes = {}
    for spec in specs:
        declared = spec.shape if spec.shape is not None else [None] * len(resolved[spec.name])
        dims: list[int | str] = []
        for axis, dim in enumerate(declared):
            if isinstance(dim, int) and (dim > 0 or resolved[spec.name][axis] == 0):
                dims.append(dim)  # a declared 0 is an empty axis unless --shape sizes it
            elif isinstance(dim, str) and dim.strip():
                dims.append(_dimension_name(dim))
            else:
                dims.append(f"{spec.name}_dim{axis}")
        shapes[spec.name] = tuple(dims)
    return shapes


def _dimension_name(name: str) -> str:
    """A declared dimension name as a plain identifier (it ends up in code comments and reports)."""
    cleaned = re.sub(r"\W", "_", name.strip(), flags=re.ASCII)[:40]
    return cleaned if cleaned[:1].isalpha() else f"d_{cleaned}"


def fix_input_shapes(model: onnx.ModelProto, shapes: dict[str, tuple[int | str, ...]]) -> None:
    """Write the input shapes (sizes, or names for symbolic dimensions) into the graph and forget
    stale intermediate shapes."""
    for inp in model.graph.input:
        if inp.name not in shapes:
            continue
        tensor_type = inp.type.tensor_type
        tensor_type.ClearField("shape")
        tensor_type.shape.SetInParent()  # a scalar keeps an empty (rank 0) shape, not an unknown one
        for size in shapes[inp.name]:
            if isinstance(size, str):
                tensor_type.shape.dim.add().dim_param = size
            else:
                tensor_type.shape.dim.add().dim_value = size
    del model.graph.value_info[:]
    for out in model.graph.output:
        out.type.tensor_type.ClearField("shape")


def run(graph: Graph, context: PassContext) -> bool:
    """Resolve every input's shape from the model and --shape, and write it into the graph."""
    context.resolved_shapes = resolve_input_shapes(context.input_specs, context.shapes)
    remove_initializer_inputs(graph.model)
    shapes: dict[str, tuple[int | str, ...]] = dict(context.resolved_shapes)
    if context.dynamic:
        shapes = symbolic_input_shapes(context.input_specs, context.resolved_shapes)
        context.declared_shapes = dict(shapes)
        graph.dynamic_dims = {d for dims in shapes.values() for d in dims if isinstance(d, str)}
    fix_input_shapes(graph.model, shapes)
    graph.edited()
    return True


def remove_initializer_inputs(model: onnx.ModelProto) -> None:
    """Drop graph inputs that are really weights (old exporters list initializers as inputs)."""
    weights = {init.name for init in model.graph.initializer}
    kept = [inp for inp in model.graph.input if inp.name not in weights]
    if len(kept) != len(model.graph.input):
        del model.graph.input[:]
        model.graph.input.extend(kept)
