"""Layers some instances of a block hold and others skip, as ``nn.Identity()`` would.

A source that builds ``nn.Identity()`` in place of a layer (ModernBERT's first layer has no
attention norm) leaves no node for it in the export: that instance's text reads the layer's
input where the others read its result. :func:`skip_identity` writes a text as it reads with
the layer passing its input through, so the texts compare as one class.
"""

from __future__ import annotations

import re

from .residuals import targets

# the names a statement binds and its `` = `` (or a loop's `` in ``)
_BINDS = re.compile(r"\s*(?:for )?(?:\w+, )*\w+(?: = | in )")


def identity_call(line: str, layer: str) -> re.Match | None:
    """``v = self.<layer>(a)``: one value in, one out."""
    return re.fullmatch(rf"(\s*)(\w+) = self\.{layer}\((\w+)\)", line)


def identity_layer(earlier: list[set[str]], held: set[str]) -> tuple[str, bool] | None:
    """The one layer a new text (holding ``held``) and the earlier texts (each holding a set of
    ``earlier``) differ by, and whether the earlier texts hold it; None for any other
    difference."""
    before = set.union(*earlier)
    if len(before - held) == 1 and all(held <= h for h in earlier):
        return next(iter(before - held)), True
    if len(held - before) == 1 and before <= held:
        return next(iter(held - before)), False
    return None


def skip_identity(body: list[str], layer: str, returns: list[str]) -> list[str] | None:
    """``body`` as it reads when ``layer`` passes its input through: its one call
    ``v = self.<layer>(a)`` dropped and ``a`` read for ``v`` until ``v`` is bound again; None
    when the layer is called otherwise, or ``a`` is bound again while ``v`` is still read."""
    calls = [i for i, line in enumerate(body) if re.search(rf"\bself\.{layer}\b", line)]
    match = identity_call(body[calls[0]], layer) if len(calls) == 1 else None
    if match is None or match.group(1):
        return None
    at, value, given = calls[0], match.group(2), match.group(3)
    read = re.compile(rf"(?<![\w.]){value}\b")
    out, rest = list(body[:at]), body[at + 1 :]
    for index, line in enumerate(rest):
        names = targets(line)
        bound = _BINDS.match(line) if names else None
        head = bound.end() if bound else 0
        out.append(line[:head] + read.sub(given, line[head:]))
        if value in names:
            return out + rest[index + 1 :]
        if given in names:
            if any(read.search(later) for later in rest[index + 1 :]) or value in returns:
                return None
            return out + rest[index + 1 :]
    return None if value in returns and value != given else out
