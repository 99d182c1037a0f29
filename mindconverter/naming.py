"""Turning names from a model file into safe, unique Python identifiers.

Nothing from a model reaches generated code except through :func:`identifier` (for names) or
:func:`comment_text` (for text shown in comments); string literals go through ``repr``.
"""

from __future__ import annotations

import builtins
import keyword
import re
import unicodedata

MAX_IDENTIFIER = 48

# Names the generated script itself uses at module or method level.
RESERVED = {
    "self",
    "ms",
    "nn",
    "ops",
    "np",
    "math",
    "Parameter",
    "Tensor",
    "MindSporeModel",
    "UnconvertedOperator",
    "super",
}


def identifier(text: str, fallback: str = "value") -> str:
    """A lower-case snake_case identifier made from ``text`` (ASCII letters, digits, ``_``)."""
    text = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    text = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()
    text = re.sub(r"_+", "_", text)
    if not text:
        text = fallback
    if text[0].isdigit():
        text = f"{fallback}_{text}"
    if len(text) > MAX_IDENTIFIER:
        text = text[:MAX_IDENTIFIER].rstrip("_")
    if keyword.iskeyword(text) or keyword.issoftkeyword(text) or text in RESERVED or hasattr(builtins, text):
        text = f"{text}_"
    return text


def class_name(text: str, fallback: str = "Block") -> str:
    """A CamelCase class name made from ``text``."""
    parts = identifier(text, fallback.lower()).split("_")
    name = "".join(part[:1].upper() + part[1:] for part in parts if part)
    name = name or fallback
    if name in RESERVED or keyword.iskeyword(name) or hasattr(builtins, name):
        name = f"{name}Cell"
    return name


def module_name(stem: str) -> str:
    """A valid Python module name from a file stem (``bert.base`` -> ``bert_base``); keeps case."""
    text = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_") or "model"
    if text[0].isdigit():
        text = f"model_{text}"
    if keyword.iskeyword(text) or text in ("mindspore", "onnx", "numpy"):
        text = f"{text}_model"
    return text[:80]


class Namer:
    """Hands out unique identifiers within one scope."""

    def __init__(self, taken: set[str] | None = None):
        self.taken = set(RESERVED) | set(taken or ())

    def claim(self, hint: str, fallback: str = "value") -> str:
        """A fresh identifier based on ``hint``: ``relu``, then ``relu_1``, ``relu_2``..."""
        base = identifier(hint, fallback)
        name, counter = base, 0
        while name in self.taken:
            counter += 1
            name = f"{base}_{counter}"
        self.taken.add(name)
        return name

    def claim_exact(self, name: str) -> str:
        """Reserve an already-safe identifier (suffixing it if taken)."""
        return self.claim(name)


def comment_text(text: str, limit: int = 200) -> str:
    """Text safe inside a ``#`` comment: one line, printable, bounded."""
    cleaned = "".join(ch if ch.isprintable() else " " for ch in str(text))
    cleaned = " ".join(cleaned.split())
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 3] + "..."
