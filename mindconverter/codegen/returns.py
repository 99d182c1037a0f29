"""A block's results written in its ``return`` when they are a slice and nothing else reads
them: ``return k[:, :, -3:], v[:, :, -3:], x`` (a sliding-window cache keeping its last
positions) instead of two variables assigned only to be returned; and a last layer call written
in the return (``return k, v, self.o_proj(x)``), as mindnlp ends its blocks."""

from __future__ import annotations

import re

from .sizes import ASSIGNMENT

_SLICE = re.compile(r"([A-Za-z_]\w*)\[[^\[\]()]*\]")


def inline_returned_slices(body: list[str], returns: list[str]) -> list[str]:
    """``returns`` with each variable that holds only a slice written as the slice; its line
    leaves ``body``. The sliced variable must keep its value until the return."""
    returns = list(returns)
    for position, name in enumerate(returns):
        if returns.count(name) != 1:
            continue
        index = next(
            (i for i in range(len(body) - 1, -1, -1) if body[i].startswith(f"{name} = ")), None
        )
        if index is None:
            continue
        match = ASSIGNMENT.fullmatch(body[index])
        sliced = _SLICE.fullmatch(match.group(2)) if match else None
        if match is None or sliced is None:
            continue
        base = sliced.group(1)
        later = body[index + 1 :]
        if any(re.search(rf"\b{name}\b", line) for line in later):
            continue
        if any(base in _targets(line) for line in later):
            continue  # the sliced variable changes before the return
        returns[position] = match.group(2)
        del body[index]
    return returns


def _targets(line: str) -> set[str]:
    """Names a line assigns (``a, b = ...``, ``for x, y in ...``)."""
    text = line.strip()
    if text.startswith("for ") and " in " in text:
        return set(re.findall(r"\w+", text[4 : text.index(" in ")]))
    if " = " in text:
        return set(re.findall(r"\w+", text.split(" = ", 1)[0]))
    if " += " in text:
        return set(re.findall(r"\w+", text.split(" += ", 1)[0]))
    return set()


_LAYER_CALL = re.compile(r"([A-Za-z_]\w*) = (self\.\w+\(.*\))")


def inline_returned_call(body: list[str], returns: list[str]) -> list[str]:
    """``returns`` with a result that the block's last line computes by calling one of its
    layers written as that call (the line leaves ``body``); unchanged when the result is
    returned twice or the last line is anything else (a guarded or commented statement)."""
    if not body:
        return list(returns)
    match = _LAYER_CALL.fullmatch(body[-1])
    if match is None or returns.count(match.group(1)) != 1 or "#" in body[-1]:
        return list(returns)
    if len(body) > 1 and body[-2].lstrip().startswith("#"):
        return list(returns)  # a note about the call stays above it
    returns = [match.group(2) if name == match.group(1) else name for name in returns]
    del body[-1]
    return returns
