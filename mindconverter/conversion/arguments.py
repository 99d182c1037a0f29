"""The Python API's arguments checked and normalised, with the CLI's error codes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from ..errors import make_error
from ..mappers.registry import MapperRegistry
from ..passes.fix_shapes import parse_shape, parse_shape_request
from ..progress import Progress
from .settings import ShapeRequest

ShapeArg = str | Sequence[int]


def normalise_shapes(shape: Sequence[ShapeArg] | None) -> list[ShapeRequest] | None:
    """Shape requests as (input name or None, dims): from ``"1,3,8,8 2,4"``, ``["x=1,3,8,8"]``,
    ``(1, 3, 8, 8)`` or ``[(1, 3, 8, 8), ()]`` (``()`` is a scalar)."""
    if shape is None:
        return None
    if isinstance(shape, str):
        shape = shape.split()
    if not isinstance(shape, (list, tuple)):
        raise make_error(
            "BAD_SHAPE", f"shape must be a string or a sequence, not {type(shape).__name__}."
        )
    if shape and all(_is_whole_number(d) for d in shape):
        shape = [shape]
    result = []
    for item in shape:
        if isinstance(item, str):
            result.append(parse_shape_request(item))
        elif isinstance(item, (list, tuple)) and all(_is_whole_number(d) for d in item):
            dims = ",".join(str(int(d)) for d in item)
            result.append((None, parse_shape(dims) if item else ()))
        else:
            raise make_error(
                "BAD_SHAPE", f"{item!r} is not a shape: give whole numbers, e.g. (1, 3, 224, 224)."
            )
    return result or None


def check_paths(**paths: str | Path | None) -> None:
    """Paths must be non-empty text or Path objects without NUL bytes (``report`` may be None)."""
    for label, value in paths.items():
        if value is None and label == "report":
            continue
        if not isinstance(value, (str, Path)):
            raise make_error("BAD_ARGUMENT", f"{label} must be a path, not {type(value).__name__}.")
        if not str(value).strip():
            raise make_error("BAD_ARGUMENT", f"{label} is empty; give a file or folder name.")
        if "\x00" in str(value):
            raise make_error("BAD_ARGUMENT", f"{label} contains a NUL byte, which no path can.")


def check_names(**lists: Sequence[str] | None) -> None:
    """Node name lists must be lists of non-empty strings."""
    for label, names in lists.items():
        if names is None:
            continue
        if isinstance(names, str) or not isinstance(names, (list, tuple)):
            raise make_error("BAD_ARGUMENT", f"{label} must be a list of names.")
        if not all(isinstance(name, str) and name for name in names):
            raise make_error("BAD_ARGUMENT", f"{label} has an empty name or one that is not text.")


def check_tolerance(tolerance: object) -> None:
    if (
        isinstance(tolerance, bool)
        or not isinstance(tolerance, (int, float))
        or not math.isfinite(tolerance)
        or tolerance <= 0
    ):
        raise make_error("BAD_ARGUMENT", f"tolerance must be a positive number, not {tolerance!r}.")


def check_options(flags: dict, registry, log, progress) -> None:
    """Reject option values of the wrong kind with BAD_ARGUMENT (never a TypeError later on)."""
    for label, value in flags.items():
        if not isinstance(value, bool):
            raise make_error("BAD_ARGUMENT", f"{label} must be True or False, not {value!r}.")
    for label, value, kind in (
        ("registry", registry, MapperRegistry),
        ("progress", progress, Progress),
    ):
        if value is not None and not isinstance(value, kind):
            raise make_error("BAD_ARGUMENT", f"{label} must be a {kind.__name__} or None.")
    if log is not None and not callable(log):
        raise make_error("BAD_ARGUMENT", "log must be a function taking one message, or None.")


def check_training_arguments(scaffold: bool, train_output, train_loss) -> None:
    """--train_output and --loss choose what --scaffold trains: strings, and only with it."""
    for label, value in (("train_output", train_output), ("train_loss", train_loss)):
        if value is not None and not isinstance(value, str):
            raise make_error("BAD_ARGUMENT", f"{label} must be a string or None.")
        if value is not None and not scaffold:
            raise make_error(
                "BAD_ARGUMENT", f"{label} chooses what --scaffold trains: add --scaffold."
            )


def _is_whole_number(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
