"""Typed steps of a weight transform: what the converter did to a source tensor on its way into
the checkpoint, as data.

Each step has ``describe()`` (the prose the weight map's ``transform`` shows), ``to_json()``
(the weight map's structured ``steps``) and ``apply(array, shape)`` (the step replayed on a new
source tensor; ``shape`` is the shape the step must produce, or None when a later step decides).
``parse_steps`` reads the prose the mappers write; ``steps_from_json`` reads a weight map.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
from onnx import helper

from .module_tree import module_classes, module_path


class CannotReplay(Exception):
    """A step computes values the source tensor alone does not give."""


@dataclass(frozen=True)
class Transpose:
    """Axes permuted (``perm`` None: reversed)."""

    perm: tuple[int, ...] | None = None
    op = "transpose"

    def describe(self) -> str:
        return f"transpose({', '.join(map(str, self.perm))})" if self.perm else "transpose()"

    def to_json(self) -> dict:
        return {"op": self.op, "perm": list(self.perm) if self.perm else None}

    def apply(self, array: np.ndarray, shape=None) -> np.ndarray:
        return np.transpose(array, self.perm)

    def shape_before(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The shape whose transpose is ``shape``."""
        perm = self.perm or tuple(range(len(shape) - 1, -1, -1))
        before = [0] * len(shape)
        for position, axis in enumerate(perm):
            before[axis] = shape[position]
        return tuple(before)


@dataclass(frozen=True)
class Reshape:
    """Same values, another shape (a folded Reshape/Unsqueeze, nn.Conv1d's 4-D weight)."""

    note: str = ""
    op = "reshape"

    def describe(self) -> str:
        return self.note or "Reshape()"

    def to_json(self) -> dict:
        return {"op": self.op}

    def apply(self, array: np.ndarray, shape=None) -> np.ndarray:
        return array if shape is None else array.reshape(shape)


@dataclass(frozen=True)
class Broadcast:
    """Leading unit axes dropped, then repeated up to the layer's shape."""

    note: str = ""
    op = "broadcast"

    def describe(self) -> str:
        return self.note or "reshape/broadcast to the layer's shape"

    def to_json(self) -> dict:
        return {"op": self.op}

    def apply(self, array: np.ndarray, shape=None) -> np.ndarray:
        if shape is None:
            return array
        trimmed = array.reshape(
            array.shape[-len(shape) :] if array.ndim > len(shape) else array.shape
        )
        return np.broadcast_to(trimmed, shape)


@dataclass(frozen=True)
class Index:
    """An index of the source: ints and ``(start, stop)`` slices, one per leading axis."""

    items: tuple[int | tuple[int | None, int | None], ...]
    op = "index"

    def describe(self) -> str:
        def text(item) -> str:
            if isinstance(item, int):
                return str(item)
            start, stop = item
            return f"{'' if start is None else start}:{'' if stop is None else stop}"

        return f"[{', '.join(text(item) for item in self.items)}]"

    def to_json(self) -> dict:
        return {
            "op": self.op,
            "items": [list(i) if isinstance(i, tuple) else i for i in self.items],
        }

    def apply(self, array: np.ndarray, shape=None) -> np.ndarray:
        key = tuple(item if isinstance(item, int) else slice(*item) for item in self.items)
        return array[key]


@dataclass(frozen=True)
class GateReorder:
    """Equal blocks of axis 0 (one per gate) put in another order: ``source`` -> ``target``."""

    source: tuple[str, ...]
    target: tuple[str, ...]
    op = "gates"

    def __post_init__(self):
        if sorted(self.source) != sorted(self.target) or len(set(self.source)) != len(self.source):
            raise CannotReplay(self.describe())

    def describe(self) -> str:
        return f"gates {','.join(self.source)} -> {','.join(self.target)}"

    def to_json(self) -> dict:
        return {"op": self.op, "source": list(self.source), "target": list(self.target)}

    def apply(self, array: np.ndarray, shape=None) -> np.ndarray:
        blocks = np.split(array, len(self.source), axis=0)
        return np.concatenate([blocks[self.source.index(gate)] for gate in self.target], axis=0)


@dataclass(frozen=True)
class Cast:
    """Values stored in another data type."""

    dtype: str
    note: str = ""
    op = "cast"

    def describe(self) -> str:
        return self.note or f"cast to {self.dtype}"

    def to_json(self) -> dict:
        return {"op": self.op, "dtype": self.dtype}

    def apply(self, array: np.ndarray, shape=None) -> np.ndarray:
        return array.astype(np.dtype(self.dtype))


@dataclass(frozen=True)
class BatchNormFold:
    """The exporter folded an eval-mode BatchNorm into the convolution before it: ``part``
    (``weight`` or ``bias``) of the folded convolution, from the convolution's parameters and
    the BatchNorm's (``batchnorm``: its state-dict prefix, "" when the export does not say;
    ``eps``: None when the export does not say)."""

    part: str
    batchnorm: str = ""
    eps: float | None = None
    note: str = ""
    op = "batchnorm_fold"

    def describe(self) -> str:
        return self.note or "BatchNorm folded into the convolution by the exporter"

    def to_json(self) -> dict:
        return {"op": self.op, "part": self.part, "batchnorm": self.batchnorm, "eps": self.eps}

    def apply(self, array: np.ndarray, shape=None) -> np.ndarray:
        raise CannotReplay(f"{self.describe()} (needs the BatchNorm's tensors)")

    def fold(self, weight, bias, gamma, beta, mean, var, eps: float) -> np.ndarray:
        """w * gamma / sqrt(var + eps) per output channel, or (b - mean) * that + beta."""
        scale = gamma.astype(np.float64) / np.sqrt(var.astype(np.float64) + eps)
        if self.part == "weight":
            return weight * scale.reshape((-1,) + (1,) * (weight.ndim - 1))
        return (bias.astype(np.float64) - mean) * scale + beta


@dataclass(frozen=True)
class Computed:
    """A step that computes new values (a folded Mul, DequantizeLinear): not replayable."""

    note: str
    op = "computed"

    def describe(self) -> str:
        return self.note

    def to_json(self) -> dict:
        return {"op": self.op, "note": self.note}

    def apply(self, array: np.ndarray, shape=None) -> np.ndarray:
        raise CannotReplay(self.note)


WeightStep = Transpose | Reshape | Broadcast | Index | GateReorder | Cast | BatchNormFold | Computed

_TRANSPOSE = re.compile(
    r"^(?:transpose\((?P<axes>[\d, ]*)\)|Transpose\((?:perm=\[(?P<perm>[\d, ]*)\])?\))$"
)
_CAST = re.compile(r"^Cast\(.*\bto=(?P<to>\d+).*\)$")
_STORED = re.compile(r"^stored as (?P<dtype>\w+) \(")
_INDEX = re.compile(r"^\[(?P<items>[\d:, -]+)\]$")
_GATES = re.compile(r"^gates (?P<source>[a-z](?:,[a-z])+) -> (?P<target>[a-z](?:,[a-z])+)$")
_LAYOUT_OPS = ("Reshape(", "Unsqueeze(", "Squeeze(", "Flatten(", "Identity(", "reshape to ")
_FOLD_NOTES = ("BatchNorm folded", "computed by the exporter")


def _index_item(text: str) -> int | tuple[int | None, int | None]:
    text = text.strip()
    if ":" not in text:
        return int(text)
    start, stop = (part.strip() for part in text.split(":", 1))
    return (int(start) if start else None, int(stop) if stop else None)


def parse_step(step: str) -> WeightStep:
    """The typed step a mapper's prose describes (``Computed`` when it computes values)."""
    if step.startswith(_FOLD_NOTES):
        return BatchNormFold(part="", note=step)
    if match := _TRANSPOSE.match(step):
        text = match.group("axes") if match.group("axes") is not None else match.group("perm")
        perm = tuple(int(v) for v in text.split(",") if v.strip()) if text else None
        return Transpose(perm or None)
    if match := _CAST.match(step):
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(int(match.group("to"))))
        return Cast(dtype.name, note=step)
    if match := _STORED.match(step):
        return Cast(np.dtype(match.group("dtype")).name, note=step)
    if match := _INDEX.match(step):
        return Index(tuple(_index_item(item) for item in match.group("items").split(",")))
    if match := _GATES.match(step):
        source, target = match.group("source").split(","), match.group("target").split(",")
        try:
            return GateReorder(tuple(source), tuple(target))
        except CannotReplay:
            return Computed(step)
    if step.startswith("reshape/broadcast "):
        return Broadcast(note=step)
    if step.startswith(_LAYOUT_OPS):
        return Reshape(note=step)
    return Computed(step)


def parse_steps(transform: str) -> list[WeightStep]:
    """The typed steps of a ``; ``-joined transform."""
    return [parse_step(step.strip()) for step in transform.split(";") if step.strip()]


def _ints(values, name: str) -> tuple[int, ...]:
    if not isinstance(values, list) or not all(type(v) is int for v in values):
        raise ValueError(f"'{name}' is not a list of integers")
    return tuple(values)


def _index_items(values) -> tuple:
    items: list[int | tuple[int | None, int | None]] = []
    for value in values if isinstance(values, list) else [None]:
        if type(value) is int:
            items.append(value)
        elif (
            isinstance(value, list)
            and len(value) == 2
            and all(v is None or type(v) is int for v in value)
        ):
            items.append((value[0], value[1]))
        else:
            raise ValueError("'items' of an index step are not integers or [start, stop]")
    return tuple(items)


def _eps(value) -> float | None:
    if value is None:
        return None
    if type(value) not in (int, float) or not (0 <= value < 1) or not math.isfinite(value):
        raise ValueError("'eps' of a BatchNorm fold is not a small non-negative number")
    return float(value)


def _text(value, name: str) -> str:
    if not isinstance(value, str) or len(value) > 1000:
        raise ValueError(f"'{name}' is not a short string")
    return value


def step_from_json(entry) -> WeightStep:
    """A step of a weight map's ``steps``; ValueError when it is not one."""
    if not isinstance(entry, dict):
        raise ValueError("a step is not an object")
    op = entry.get("op")
    if op == "transpose":
        perm = entry.get("perm")
        return Transpose(None if perm is None else _ints(perm, "perm"))
    if op in ("reshape", "broadcast"):
        return Reshape() if op == "reshape" else Broadcast()
    if op == "index":
        return Index(_index_items(entry.get("items")))
    if op == "gates":
        source = tuple(_text(g, "source") for g in entry.get("source") or [])
        target = tuple(_text(g, "target") for g in entry.get("target") or [])
        try:
            return GateReorder(source, target)
        except CannotReplay:
            raise ValueError("'gates' step whose orders are not the same gates") from None
    if op == "cast":
        try:
            return Cast(np.dtype(_text(entry.get("dtype"), "dtype")).name)
        except TypeError:
            raise ValueError("'cast' step with an unknown data type") from None
    if op == "batchnorm_fold":
        part = entry.get("part")
        if part not in ("weight", "bias", ""):  # "": the converted parameter's own name says
            raise ValueError("'part' of a BatchNorm fold is not 'weight' or 'bias'")
        return BatchNormFold(
            part, _text(entry.get("batchnorm", ""), "batchnorm"), _eps(entry.get("eps"))
        )
    if op == "computed":
        return Computed(_text(entry.get("note", ""), "note"))
    raise ValueError(f"unknown step {str(op)[:40]!r}")


def steps_from_json(entries) -> list[WeightStep]:
    """The typed steps of a weight map row's ``steps``; ValueError when they are not steps."""
    if not isinstance(entries, list):
        raise ValueError("'steps' is not a list")
    return [step_from_json(entry) for entry in entries]


_FX_BATCHNORM_EPS = re.compile(
    r"batch_norm\w*\.default\]\(args = \([^()]*, (?P<momentum>[-+.\deE]+), (?P<eps>[-+.\deE]+)\)"
)


def folded_batchnorm(node) -> tuple[str, float | None]:
    """The state-dict prefix and epsilon of the BatchNorm a dynamo export folded into the
    convolution ``node`` (the rewritten node keeps the BatchNorm's metadata), or ("", None)
    when the export does not record them (a TorchScript export does not)."""
    path = module_path(node)
    if not path or "BatchNorm" not in module_classes(node).get(path, ""):
        path = ""
    match = _FX_BATCHNORM_EPS.search(node.metadata.get("pkg.torch.onnx.fx_node", ""))
    eps = None
    if match:
        try:
            eps = _eps(float(match.group("eps")))
        except ValueError:
            eps = None
    return path, eps
