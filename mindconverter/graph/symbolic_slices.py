"""Slice lengths the symbolic inference cannot prove, checked at the conversion shape.

onnxruntime's symbolic inference counts a Slice bound from the end whenever it cannot prove the
bound is non-negative. A relative position table sliced from ``511 - seq`` to ``512 + seq``
(Wav2Vec2-Conformer) has a start sympy cannot prove >= 0, so the tool gives the result
``seq + 1`` rows instead of ``2 * seq + 1``, and every size computed downstream is wrong.

The sizes the user gave with ``--shape`` settle such a case: where the tool's length, evaluated
at those sizes, differs from what slicing tensors of those sizes gives, the length is rewritten
as ``end - start`` when both bounds lie inside the axis there, or as a new unknown size.
"""

from __future__ import annotations

from typing import Any


def add_slice_length_check(inference: Any, sizes: dict[str, int]) -> None:
    """Wrap the tool's Slice handler so its output lengths agree with ``sizes`` (named
    dimension -> size at the conversion shape)."""
    handlers = getattr(inference, "dispatcher_", None)
    if not sizes or not isinstance(handlers, dict) or "Slice" not in handlers:
        return
    infer_slice = handlers["Slice"]

    def checked(node):
        try:
            infer_slice(node)
        except Exception:  # noqa: BLE001 - some sympy proofs raise: ONNX's shapes stand
            pass  # (the tool inferred every node with ONNX's inference before its handler)
        _correct_lengths(inference, node, sizes)

    handlers["Slice"] = checked


def _correct_lengths(inference: Any, node, sizes: dict[str, int]) -> None:
    bounds = _symbolic_bounds(inference, node)
    info = inference.known_vi_.get(node.output[0])
    if bounds is None or info is None or not info.type.tensor_type.HasField("shape"):
        return
    dims = info.type.tensor_type.shape.dim
    in_shape = inference._get_sympy_shape(node, 0)
    rank = len(in_shape)
    if len(dims) != rank or not all(-rank <= axis < rank for axis, *_ in bounds):
        return
    out_shape = [d.dim_value if d.HasField("dim_value") else _dim(inference, d) for d in dims]
    changed = False
    sliced = {axis % rank for axis, *_ in bounds}
    for axis, size in enumerate(in_shape):
        if axis not in sliced and _at(out_shape[axis], sizes) is None:
            if _at(size, sizes) is not None:
                out_shape[axis], changed = size, True  # the tool's fallback lost a kept size
    for axis, start, end, step in bounds:
        axis %= rank
        wanted = _length_at(start, end, step, in_shape[axis], sizes)
        if wanted is None or _at(out_shape[axis], sizes) == wanted:
            continue
        if _at(step, sizes) == 1 and _at(end - start, sizes) == wanted:
            out_shape[axis] = _simplified(end - start)
        else:
            out_shape[axis] = inference._new_symbolic_dim_from_output(node, 0, axis)
        changed = True
    if changed and all(d is not None for d in out_shape):
        _write_shape(inference, node, info, out_shape)


def _length_at(start, end, step, size, sizes: dict[str, int]) -> int | None:
    """The slice's length at the named sizes (Python's slicing is ONNX's, clamping included)."""
    start_at, end_at, step_at, size_at = (_at(v, sizes) for v in (start, end, step, size))
    if start_at is None or end_at is None or step_at is None or size_at is None or not step_at:
        return None
    return len(range(size_at)[start_at:end_at:step_at])


def slice_bounds(inference: Any, node) -> tuple[list, list, list, list] | None:
    """A Slice's (starts, ends, axes, steps) as the tool knows them (numbers or sympy values),
    with ONNX's defaults for axes and steps; None when starts or ends are unknown (or the
    Slice takes them as attributes, before opset 10)."""
    if len(node.input) < 3:
        return None
    starts = inference._try_get_value(node, 1)
    ends = inference._try_get_value(node, 2)
    if starts is None or ends is None:
        return None
    starts, ends = list(_flat(starts)), list(_flat(ends))
    axes = inference._try_get_value(node, 3)
    steps = inference._try_get_value(node, 4)
    axes = list(_flat(axes)) if axes is not None else list(range(len(starts)))
    steps = list(_flat(steps)) if steps is not None else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        return None
    return starts, ends, axes, steps


def is_int(value) -> bool:
    """A number the tool keeps: a Python int, a sympy Integer, a numpy scalar."""
    return (
        isinstance(value, int)
        or getattr(value, "is_Integer", False)
        or (hasattr(value, "dtype") and getattr(value, "ndim", 1) == 0)
    )


def _symbolic_bounds(inference: Any, node) -> list | None:
    """(axis, start, end, step) per sliced axis when some bound is symbolic (opset 10+)."""
    bounds = slice_bounds(inference, node)
    if bounds is None:
        return None
    starts, ends, axes, steps = bounds
    if all(is_int(v) for v in starts + ends):
        return None
    if not all(is_int(a) for a in axes):
        return None
    return [(int(a), s, e, t) for a, s, e, t in zip(axes, starts, ends, steps, strict=True)]


def _write_shape(inference, node, info, shape: list) -> None:
    from onnx import helper
    from onnxruntime.tools.symbolic_shape_infer import get_shape_from_sympy_shape

    inference._update_computed_dims(shape)
    info.CopyFrom(
        helper.make_tensor_value_info(
            node.output[0], info.type.tensor_type.elem_type, get_shape_from_sympy_shape(shape)
        )
    )


def _simplified(value):
    import sympy

    return sympy.simplify(value)


def _dim(inference, dim):
    """A named output dimension as the tool's sympy value (None for an unnamed one)."""
    import sympy

    if not dim.dim_param:
        return None
    known = inference.symbolic_dims_.get(dim.dim_param)
    return (
        known if known is not None else sympy.Symbol(dim.dim_param, integer=True, nonnegative=True)
    )


def _flat(values):
    import numpy as np

    if isinstance(values, np.ndarray):
        return values.reshape(-1).tolist()
    if isinstance(values, (list, tuple)):
        return list(values)
    return [values]


def _at(value, sizes: dict[str, int]) -> int | None:
    """An integer or sympy expression evaluated at the named sizes; None when it cannot be."""
    if value is None:
        return None
    if isinstance(value, int):
        return value
    if getattr(value, "is_Integer", False) or hasattr(value, "dtype"):
        return int(value)
    free = getattr(value, "free_symbols", None)
    if free is None or any(s.name not in sizes for s in free):
        return None
    result = value.subs({s: sizes[s.name] for s in free})
    return int(result) if getattr(result, "is_Integer", False) else None
