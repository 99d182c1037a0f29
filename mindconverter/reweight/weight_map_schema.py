"""The weight map's schema, checked before any weight is read.

A weight map is edited by hand or arrives from elsewhere: every field is checked for the type a
conversion writes (names are plain strings, shapes lists of non-negative ints, data types from
the known set), each parameter is named once (a checkpoint with two records of one name makes
MindSpore's loader abort the process), and the sizes the rows ask for are bounded by the source
tensors they come from, so replaying the transforms cannot allocate without bound.
"""

from __future__ import annotations

import math
import re

from ..errors import make_error
from ..graph.weight_steps import steps_from_json
from ..outputs.checkpoint import TENSOR_TYPES
from ..text import one_line

MAX_ROWS = 1 << 20
MAX_NAME_CHARS = 1024
MAX_TRANSFORM_CHARS = 4096
MAX_TRANSFORM_STEPS = 64  # each step may copy the tensor once: a converter writes a handful
MAX_RANK = 32
MAX_ELEMENTS = 1 << 40  # the budget for any declared tensor (frontends/loading.py's)
# A broadcast may grow a small source (a scalar bias) up to this many elements.
BROADCAST_ELEMENTS = 1 << 24
# All converted weights together hold at most this many times the distinct sources' elements
# (tied weights and split biases reuse a source; nothing else grows one).
TOTAL_GROWTH = 4

# Converted names are attribute paths of the generated network: identifiers and list indices.
_CONVERTED_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SOURCE_DTYPES = frozenset(TENSOR_TYPES) | {
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "int4",
    "uint4",
}
_CONVERTED_DTYPES = frozenset(TENSOR_TYPES.values())
_CAST_TO = re.compile(r"^Cast\(.*\bto=(?P<to>\d+)")
_NUMERIC_ONNX_TYPES = frozenset(range(1, 8)) | {9, 10, 11, 12, 13, 16} | set(range(17, 24))
_ROW_KEYS = {"converted_weight", "source_weight", "transform", "steps"}
_CONVERTED_KEYS = {"name", "shape", "data_type"}
_SOURCE_KEYS = {"name", "shape", "data_type", "exported_as"}


class _Invalid(Exception):
    """One field breaks the schema (the message says which and why)."""


def check_rows(rows: object, file_name: str) -> None:
    """Raise WEIGHT_MAP_INVALID unless ``rows`` is a list of rows a conversion could write."""
    try:
        _check_rows(rows)
    except _Invalid as why:
        raise make_error(
            "WEIGHT_MAP_INVALID", f"'{one_line(file_name, 80)}' is not a weight map: {why}."
        ) from None


def _check_rows(rows: object) -> None:
    if not isinstance(rows, list):
        raise _Invalid("its model's entry is not a list of rows")
    if len(rows) > MAX_ROWS:
        raise _Invalid(f"it lists {len(rows)} rows (at most {MAX_ROWS})")
    seen: set[str] = set()
    sources: dict[str, int] = {}
    total = 0
    for index, row in enumerate(rows):
        where = f"row {index}"
        converted, source = _check_row(row, where)
        if converted["name"] in seen:
            raise _Invalid(
                f"{where} names parameter {one_line(converted['name'], 80)!r} a second time"
            )
        seen.add(converted["name"])
        wanted, given = math.prod(converted["shape"]), math.prod(source["shape"])
        if wanted > max(given, BROADCAST_ELEMENTS):
            raise _Invalid(
                f"{where} makes {wanted} elements out of a source of {given}: no transform "
                "grows a weight that much"
            )
        sources[source["name"]] = max(sources.get(source["name"], 0), given)
        total += wanted
    budget = TOTAL_GROWTH * sum(sources.values()) + BROADCAST_ELEMENTS
    if total > budget:
        raise _Invalid(
            f"its parameters hold {total} elements, far more than the {sum(sources.values())} "
            "of the source tensors they come from"
        )


def _check_row(row: object, where: str) -> tuple[dict, dict]:
    if not isinstance(row, dict):
        raise _Invalid(f"{where} is not an object")
    _check_keys(row, _ROW_KEYS, {"converted_weight", "source_weight"}, where)
    converted, source = row["converted_weight"], row["source_weight"]
    _check_weight(converted, _CONVERTED_KEYS, _CONVERTED_DTYPES, f"{where}'s converted_weight")
    _check_weight(source, _SOURCE_KEYS, _SOURCE_DTYPES, f"{where}'s source_weight")
    if not _CONVERTED_NAME.match(converted["name"]):
        raise _Invalid(
            f"{where}'s converted_weight name {one_line(repr(converted['name']), 80)} is not "
            "a parameter path of a generated network"
        )
    if "exported_as" in source:
        _check_text(source["exported_as"], MAX_NAME_CHARS, f"{where}'s exported_as", empty=True)
    if "transform" in row:
        _check_text(row["transform"], MAX_TRANSFORM_CHARS, f"{where}'s transform", empty=True)
        _check_transform(row["transform"], f"{where}'s transform")
    if "steps" in row:
        _check_steps(row["steps"], f"{where}'s steps")
    return converted, source


def _check_steps(entries: object, where: str) -> None:
    """The typed form of the transform: a short list of steps the converter knows."""
    if not isinstance(entries, list) or len(entries) > MAX_TRANSFORM_STEPS:
        raise _Invalid(f"{where} is not a list of at most {MAX_TRANSFORM_STEPS} steps")
    try:
        steps_from_json(entries)
    except (ValueError, TypeError, KeyError) as exc:
        raise _Invalid(f"{where}: {one_line(str(exc), 120)}") from None


def _check_transform(transform: str, where: str) -> None:
    steps = [step.strip() for step in transform.split(";") if step.strip()]
    if len(steps) > MAX_TRANSFORM_STEPS:
        raise _Invalid(f"{where} has {len(steps)} steps (at most {MAX_TRANSFORM_STEPS})")
    for step in steps:
        cast = _CAST_TO.match(step)
        if cast and int(cast.group("to")) not in _NUMERIC_ONNX_TYPES:
            # a cast to text would hold each value as a long string: not a weight's layout
            raise _Invalid(f"{where} casts to ONNX type {cast.group('to')}, not a number type")


def _check_keys(table: dict, allowed: set[str], required: set[str], where: str) -> None:
    unknown = sorted(str(key) for key in set(table) - allowed)
    if unknown:
        raise _Invalid(f"{where} has unknown field(s) {one_line(', '.join(unknown), 80)}")
    missing = sorted(required - set(table))
    if missing:
        raise _Invalid(f"{where} lacks {', '.join(missing)}")


def _check_weight(weight: object, keys: set[str], dtypes: frozenset, where: str) -> None:
    if not isinstance(weight, dict):
        raise _Invalid(f"{where} is not an object")
    _check_keys(weight, keys, {"name", "shape", "data_type"}, where)
    _check_text(weight["name"], MAX_NAME_CHARS, f"{where}'s name", empty=False)
    _check_shape(weight["shape"], f"{where}'s shape")
    if not isinstance(weight["data_type"], str) or weight["data_type"] not in dtypes:
        raise _Invalid(
            f"{where}'s data_type {one_line(repr(weight['data_type']), 40)} is not a known type"
        )


def _check_text(value: object, limit: int, where: str, empty: bool) -> None:
    if not isinstance(value, str):
        raise _Invalid(f"{where} is a {type(value).__name__}, not a string")
    if not value and not empty:
        raise _Invalid(f"{where} is empty")
    if len(value) > limit:
        raise _Invalid(f"{where} is {len(value)} characters long (at most {limit})")
    if _CONTROL.search(value):
        raise _Invalid(f"{where} holds control characters")


def _check_shape(shape: object, where: str) -> None:
    if not isinstance(shape, list):
        raise _Invalid(f"{where} is a {type(shape).__name__}, not a list")
    if len(shape) > MAX_RANK:
        raise _Invalid(f"{where} has {len(shape)} dimensions (at most {MAX_RANK})")
    for dim in shape:
        if type(dim) is not int or dim < 0:  # bool is an int subclass: refused too
            raise _Invalid(f"{where} holds {one_line(repr(dim), 40)}, not a non-negative int")
    if math.prod(shape) > MAX_ELEMENTS:
        raise _Invalid(f"{where} {shape} has more than {MAX_ELEMENTS} elements")


__all__ = ["check_rows"]
