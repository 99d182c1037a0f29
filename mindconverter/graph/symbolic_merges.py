"""Symbol merges of the symbolic inference made the same way on every run.

When broadcasting says two dimensions are equal, onnxruntime's symbolic inference records that
one stands for the other. With no number, no input dimension and no plain symbol among them,
it keeps the shortest text, and among texts of one length the first one a Python ``set`` gives,
which depends on the process's string hash seed. A Gemma-2 decoder with a sliding-window cache
then had ``past + sequence`` on one run and ``sequence + 4095`` on the next, and the generated
script differed from run to run. The replacement here chooses in the same order of preference
and breaks every tie by the text itself.
"""

from __future__ import annotations

import numbers
import types
from typing import Any


def make_merges_deterministic(inference: Any) -> None:
    """Replace the tool's ``_add_suggested_merge`` on this instance by a deterministic one."""
    if not callable(getattr(inference, "_add_suggested_merge", None)):
        return
    inference._add_suggested_merge = types.MethodType(_add_suggested_merge, inference)


def _add_suggested_merge(self: Any, symbols, apply: bool = False) -> None:
    """Record that every symbol of ``symbols`` stands for one chosen among them (see
    :func:`merge_target`), then rewrite the model's dimensions when ``apply`` says so."""
    merged = self.suggested_merge_
    current = sorted({merged.get(s, s) for s in symbols}, key=str)
    target = merge_target(current, self.input_symbols_, self.symbolic_dims_)
    value = int(target) if _is_number(target) else target
    for symbol in current:
        if symbol == target:
            continue
        merged[symbol] = value
        for key, old in list(merged.items()):
            if old == symbol:
                merged[key] = value
    if apply and self.auto_merge_:
        self._apply_suggested_merge()


def merge_target(symbols: list, inputs: set, dims: dict):
    """The symbol the others will stand for: a number, else a dimension of a network input,
    else a plain symbol, else the shortest expression; ties go to the first text in order."""
    import sympy

    ordered = sorted(symbols, key=lambda s: (len(str(s)), str(s)))
    for prefer in (
        _is_number,
        lambda s: s in inputs,
        lambda s: isinstance(dims.get(s), sympy.Symbol),
    ):
        chosen = next((s for s in sorted(symbols, key=str) if prefer(s)), None)
        if chosen is not None:
            return chosen
    return ordered[0]


def _is_number(symbol) -> bool:
    """A literal size: an integer (Python, numpy or sympy), never a dimension's name."""
    if isinstance(symbol, str):
        return symbol.lstrip("-").isdigit()
    return isinstance(symbol, numbers.Integral) or bool(getattr(symbol, "is_number", False))
