"""Python warnings raised while converting become notes of the conversion that raised them.

The collector is found through a context variable, not by swapping the process's warning state
for the duration of a conversion, so conversions in several threads keep their own notes.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Iterator
from contextvars import ContextVar

from ..text import one_line

_collector: ContextVar[list[str] | None] = ContextVar("mindconverter_notes", default=None)
_install_lock = threading.Lock()
_replaced: list = [warnings.showwarning]  # what the router passes other warnings on to


def _route(message, category, filename, lineno, file=None, line=None) -> None:
    notes = _collector.get()
    if notes is None:
        _replaced[-1](message, category, filename, lineno, file, line)
        return
    text = "Warning while converting: " + one_line(f"{category.__name__}: {message}", 300)
    if text not in notes and len(notes) < MAX_WARNING_NOTES:
        notes.append(text)


def _install_router() -> None:
    """Put the router in front of the current ``warnings.showwarning`` (again, when a
    ``catch_warnings`` block of the host program swapped it out)."""
    with _install_lock:
        if warnings.showwarning is not _route:
            _replaced[-1:] = [warnings.showwarning]
            warnings.showwarning = _route


@contextlib.contextmanager
def warnings_as_notes(notes: list[str]) -> Iterator[None]:
    """Warnings raised inside (numpy overflow while folding constants, a library's deprecation)
    are appended to ``notes`` instead of being printed on stderr."""
    _install_router()
    token = _collector.set(notes)
    try:
        yield
    finally:
        _collector.reset(token)


# More warnings than this in one conversion are dropped from the report.
MAX_WARNING_NOTES = 20
