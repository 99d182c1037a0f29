"""Python literals for generated code: clean floats (``1e-05``, not float noise), tuples, slices."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def float_literal(value: float) -> str:
    """The shortest literal that is ``value`` again as a float32 (``1e-05``, not float noise):
    a literal one float32 step off moves a value truncated to an integer (a position bucket)."""
    value = float(value)
    if math.isnan(value):
        return "math.nan"
    if math.isinf(value):
        return "math.inf" if value > 0 else "-math.inf"
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    single = np.float32(value)
    for digits in range(1, 18):
        text = f"{value:.{digits}g}"
        if np.float32(float(text)) == single and abs(float(text) - value) <= abs(value) * 2e-7:
            break
    number = float(text)
    text = repr(number)
    return text


def literal(value: Any) -> str:
    """Python source for a literal value (numbers, bools, None, strings, tuples, lists)."""
    if isinstance(value, (bool, np.bool_)):
        return "True" if value else "False"
    if value is None:
        return "None"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return float_literal(float(value))
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, tuple):
        inner = ", ".join(literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, slice):
        parts = [
            literal(value.start) if value.start is not None else "",
            literal(value.stop) if value.stop is not None else "",
        ]
        if value.step is not None:
            parts.append(literal(value.step))
        return ":".join(parts)
    if value is Ellipsis:
        return "..."
    if isinstance(value, np.ndarray):
        return literal(value.tolist())
    raise TypeError(f"cannot write {type(value).__name__} as a literal")
