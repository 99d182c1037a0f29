"""Values of small shape tensors of more than one axis, sliced along any axis.

onnxruntime's symbolic inference keeps the value of a shape tensor as a flat list and slices it
as if it had one axis. The TorchScript exporter writes ``F.pad(x, (0, 0, 0, n))`` with a run-time
``n`` as a pads vector reshaped to rows of two, its rows reversed (a Slice with step -1 on axis
0), transposed and flattened back: sliced as one flat list, the value came out
``(0, n, 0, 0, 0, 0)`` (padding the start of the time axis) instead of ``(0, 0, 0, 0, n, 0)``,
and SEW's converted encoder matched onnxruntime only where ``n`` was 0. Here the Slice of such
a value is taken on its real shape; where a bound is unknown, the value is dropped, so the
tensor is computed when the network runs instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .symbolic_slices import is_int, slice_bounds


def add_slice_values_by_shape(inference: Any) -> None:
    """Wrap the tool's Slice handler so the values it keeps follow the sliced tensor's shape."""
    handlers = getattr(inference, "dispatcher_", None)
    if not isinstance(handlers, dict) or "Slice" not in handlers:
        return
    infer_slice = handlers["Slice"]

    def by_shape(node):
        infer_slice(node)
        _reslice(inference, node)

    handlers["Slice"] = by_shape


def _reslice(inference: Any, node) -> None:
    """Recompute the Slice's kept value when its input has more than one axis."""
    values = getattr(inference, "sympy_data_", None)
    if not isinstance(values, dict) or node.input[0] not in values:
        return
    try:
        shape = inference._get_shape(node, 0)
    except Exception:  # noqa: BLE001 - the tool keeps no shape: keep no value either
        shape = None
    if shape is not None and len(shape) <= 1:
        return  # one axis: the tool's own slicing is right
    sliced = _sliced(inference, node, shape)
    if sliced is None:
        values.pop(node.output[0], None)
    else:
        values[node.output[0]] = sliced


def _sliced(inference: Any, node, shape) -> list | None:
    """The flat value of ``node``'s output, or None when a bound or the shape is unknown."""
    if shape is None or not all(isinstance(d, (int, np.integer)) for d in shape):
        return None
    data = inference.sympy_data_[node.input[0]]
    flat = list(data) if isinstance(data, (list, tuple)) else None
    bounds = slice_bounds(inference, node)
    if flat is None or len(flat) != int(np.prod(shape)) or bounds is None:
        return None
    if not all(is_int(v) for part in bounds for v in part):
        return None
    starts, ends, axes, steps = ([int(v) for v in part] for part in bounds)
    picks: list[Any] = [slice(None)] * len(shape)
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if not -len(shape) <= axis < len(shape) or step == 0:
            return None
        picks[axis % len(shape)] = slice(*_clamped(start, end, step, int(shape[axis])))
    array = np.empty(len(flat), dtype=object)
    array[:] = flat
    return array.reshape([int(d) for d in shape])[tuple(picks)].reshape(-1).tolist()


def _clamped(start: int, end: int, step: int, size: int) -> tuple[int | None, int | None, int]:
    """ONNX's bounds as a Python slice: huge ends (INT64 max or min) mean 'to the edge'."""
    edge = 2**62
    start_at: int | None = None if abs(start) >= edge else start
    end_at: int | None = None if abs(end) >= edge else end
    if end_at is not None and end_at < -size and step < 0:
        end_at = None  # before the first element, going backwards: through index 0
    return start_at, end_at, step
