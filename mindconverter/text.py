"""Showing text that came from a model file (names, strings) safely."""

from __future__ import annotations


def one_line(text: str, limit: int = 200) -> str:
    """Printable, on one line, bounded: safe in a comment, a report line or on a terminal."""
    cleaned = "".join(ch if ch.isprintable() else " " for ch in str(text))
    cleaned = " ".join(cleaned.split())
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 3] + "..."


def escape_controls(text: str) -> str:
    """``text`` with every non-printable character written as an escape (``\\n``, ``\\x1b``):
    it can neither start a new line nor move the cursor or colour a terminal."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text
    )
