"""Replay a weight map's recorded transform on a newer source tensor.

A transform is the ``; ``-joined list of steps the converter applied to a source weight on its
way into the checkpoint: layout changes (``transpose(1, 0)``, folded ``Transpose``/``Reshape``/
``Unsqueeze`` steps, a reshape for ``nn.Conv1d``, an index ``[0, :48]``, a gate reorder ``gates
i,o,f,c -> i,f,c,o``), dtype changes (``Cast``, ``stored as int8``).
Those are replayed exactly. Steps that compute new values (a folded ``Mul``, ``DequantizeLinear``,
BatchNorm folded by the exporter) cannot be replayed from the source weight alone.
"""

from __future__ import annotations

import re

import numpy as np
from onnx import helper

_TRANSPOSE = re.compile(
    r"^(?:transpose\((?P<axes>[\d, ]*)\)|Transpose\((?:perm=\[(?P<perm>[\d, ]*)\])?\))$"
)
_CAST = re.compile(r"^Cast\(.*\bto=(?P<to>\d+).*\)$")
_STORED = re.compile(r"^stored as (?P<dtype>\w+) \(")
_INDEX = re.compile(r"^\[(?P<items>[\d:, -]+)\]$")
_GATES = re.compile(r"^gates (?P<source>[a-z](?:,[a-z])+) -> (?P<target>[a-z](?:,[a-z])+)$")
_LAYOUT_OPS = ("Reshape(", "Unsqueeze(", "Squeeze(", "Flatten(", "Identity(", "reshape to ")


class CannotReplay(Exception):
    """A step of the transform computes values the source tensor alone does not give."""


def _steps(transform: str) -> list[str]:
    return [step.strip() for step in transform.split(";") if step.strip()]


# Notes about where a weight came from, not steps: the source tensor already holds their result.
EXPORTER_NOTES = ("BatchNorm folded", "computed by the exporter")


def _kind(step: str):
    """(kind, argument) of one step: transpose/cast/layout/broadcast, or CannotReplay."""
    if step.startswith(EXPORTER_NOTES):
        return "note", None
    match = _TRANSPOSE.match(step)
    if match:
        text = match.group("axes") if match.group("axes") is not None else match.group("perm")
        perm = tuple(int(v) for v in text.split(",") if v.strip()) if text else None
        return "transpose", perm
    match = _CAST.match(step)
    if match:
        return "dtype", np.dtype(helper.tensor_dtype_to_np_dtype(int(match.group("to"))))
    match = _STORED.match(step)
    if match:
        return "dtype", np.dtype(match.group("dtype"))
    match = _INDEX.match(step)
    if match:
        return "index", tuple(_index_item(item) for item in match.group("items").split(","))
    match = _GATES.match(step)
    if match:
        source, target = match.group("source").split(","), match.group("target").split(",")
        if sorted(source) != sorted(target):
            raise CannotReplay(step)
        return "gates", tuple(source.index(gate) for gate in target)
    if step.startswith("reshape/broadcast "):
        return "broadcast", None
    if step.startswith(_LAYOUT_OPS):
        return "layout", None
    raise CannotReplay(step)


def _index_item(text: str):
    """``3`` or ``a:b`` (either end may be left out) of an index step."""
    text = text.strip()
    if ":" not in text:
        return int(text)
    start, stop = (part.strip() for part in text.split(":", 1))
    return slice(int(start) if start else None, int(stop) if stop else None)


def replay(
    transform: str, source: np.ndarray, shape: tuple[int, ...], dtype: np.dtype
) -> np.ndarray:
    """``source`` put through ``transform``, ending in ``shape`` and ``dtype`` (the converted
    weight's). Reshapes take their sizes from the steps after them, worked out backwards from
    the final shape."""
    steps = [_kind(step) for step in _steps(transform)]
    # the shape each step must produce, from the last step back (None: another reshape decides)
    produced: list[tuple[int, ...] | None] = [None] * len(steps)
    wanted: tuple[int, ...] | None = tuple(shape)
    for index in range(len(steps) - 1, -1, -1):
        produced[index] = wanted
        kind, argument = steps[index]
        if kind == "transpose" and wanted is not None:
            perm = argument or tuple(range(len(wanted) - 1, -1, -1))
            before = [0] * len(wanted)
            for position, axis in enumerate(perm):
                before[axis] = wanted[position]
            wanted = tuple(before)
        elif kind in ("layout", "broadcast", "index"):
            wanted = None
    array = np.asarray(source)
    for (kind, argument), target in zip(steps, produced):
        if kind == "transpose":
            array = np.transpose(array, argument)
        elif kind == "dtype":
            array = array.astype(argument)
        elif kind == "index":
            array = array[argument]
        elif kind == "gates":  # blocks of axis 0, one per gate, put in the target's order
            blocks = np.split(array, len(argument), axis=0)
            array = np.concatenate([blocks[index] for index in argument], axis=0)
        elif kind == "layout" and target is not None:
            array = array.reshape(target)
        elif kind == "broadcast" and target is not None:
            trimmed = array.reshape(
                array.shape[-len(target) :] if array.ndim > len(target) else array.shape
            )
            array = np.broadcast_to(trimmed, target)
    if array.shape != tuple(shape):
        array = array.reshape(shape) if array.size == int(np.prod(shape)) else array
    return np.ascontiguousarray(array.astype(dtype, copy=False))
