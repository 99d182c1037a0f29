"""Statements nothing reads, dropped from a block's ``construct``.

A value the graph reads only for its sizes can end up read from elsewhere once sizes are named
(``transpose = out.swapaxes(1, 2)`` while the sizes come from ``out``): its statement is then
left assigning a variable nothing reads, which ``ruff check`` reports (F841) and a reader takes
for meaning. Every expression the converter writes is free of side effects, so such a
statement goes, with the comment written above it.
"""

from __future__ import annotations

import re
from collections import Counter

_TARGET = re.compile(r"([A-Za-z_]\w*) = ")
_UNPACKING = re.compile(r"([A-Za-z_]\w*(?:, [A-Za-z_]\w*)+) = ")
_NAME = re.compile(r"(?<![.\w])[A-Za-z_]\w*")  # not an attribute (ops.transpose)


def drop_unused_assignments(body: list[str], returns: list[str]) -> None:
    """Remove from ``body`` (in place) each top-level ``name = ...`` whose variable appears
    nowhere else in the body or the returned expressions."""
    counts = Counter(_NAME.findall(" ".join(returns)))
    for line in body:
        counts.update(_NAME.findall(_code(line)))
    assigned: dict[str, list[int]] = {}
    for index, line in enumerate(body):
        if match := _TARGET.match(line):
            assigned.setdefault(match.group(1), []).append(index)
    pending = [i for indices in assigned.values() for i in indices]
    dropped: set[int] = set()
    while pending:
        index = pending.pop()
        match = _TARGET.match(body[index])
        if index in dropped or match is None or counts[match.group(1)] != 1:
            continue
        dropped.add(index)
        read = _NAME.findall(_code(body[index]))
        counts.subtract(read)
        for name in set(read):  # values only it read may be unread now
            if counts[name] == 1:
                pending += assigned.get(name, [])
    for index in sorted(dropped, reverse=True):
        del body[index]
        while index > 0 and body[index - 1].lstrip().startswith("#"):  # its note
            del body[index - 1]
            index -= 1
    _blank_unread_targets(body, counts)


def _blank_unread_targets(body: list[str], counts: Counter) -> None:
    """``x, _ = self.embedding(...)`` where the second result is read nowhere (a result the
    graph read only for its sizes, read from elsewhere since): ``ruff check`` reports unused
    unpacked names (RUF059)."""
    for index in range(len(body) - 1, -1, -1):
        match = _UNPACKING.match(body[index])
        if match is None:
            continue
        names = match.group(1).split(", ")
        kept = [name if counts[name] > 1 or name == "_" else "_" for name in names]
        if all(name == "_" for name in kept):  # nothing it computes is read
            del body[index]
            while index > 0 and body[index - 1].lstrip().startswith("#"):
                del body[index - 1]
                index -= 1
        elif kept != names:
            body[index] = f"{', '.join(kept)} = {body[index][match.end() :]}"


def _code(line: str) -> str:
    """The line's code: nothing for a comment (names in notes are not reads)."""
    return "" if line.lstrip().startswith("#") else line
