"""Residual connections some instances of a block make and others do not.

torchvision's ``InvertedResidual`` adds its input to its result only when the shapes allow it
(``use_res_connect``); the recovered instances then read ``x = self.conv(x)`` in one stage and
``conv = self.conv(x)`` / ``out = x + conv`` in another. :func:`split_residual` finds the final
sum, and :func:`same_up_to_names` tells whether two ``construct`` bodies compute the same thing
under other variable names, so that the two can be one class with a flag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SUM = re.compile(r"(\w+) = (\w+) \+ (\w+)")
_TARGETS = re.compile(r"(\s*)(?:for )?((?:\w+, )*\w+)(?: = | in )")
_TOKEN = re.compile(r"(\.\s*)?([A-Za-z_]\w*)|(\S)")


@dataclass(frozen=True)
class Residual:
    """A body split before its final residual sum."""

    prefix: list[str]
    line: str  # the sum, written into the value before it: ``conv = x + conv``
    result: str  # the value the body returns with the sum made: ``conv``


def split_residual(body: list[str], args: list[str], returns: list[str]) -> Residual | None:
    """The body's statements before a last line that adds one of the block's inputs to the
    value computed just before and is returned (``out = x + conv``); ``None`` otherwise."""
    if len(returns) != 1 or len(body) < 2:
        return None
    match = _SUM.fullmatch(body[-1])
    if match is None or match.group(1) != returns[0] or body[-2][:1].isspace():
        return None
    left, right = match.group(2), match.group(3)
    before = targets(body[-2])
    for given, value in ((left, right), (right, left)):
        if given in args and value not in args and before == [value]:
            line = (
                f"{value} = {given} + {value}" if given == left else f"{value} = {value} + {given}"
            )
            return Residual(body[:-1], line, value)
    return None


def targets(line: str) -> list[str]:
    """The names a statement binds (``a, b = ...``, ``for layer in ...``)."""
    match = _TARGETS.match(line)
    return match.group(2).split(", ") if match else []


def same_up_to_names(
    mine: list[str], mine_result: str, theirs: list[str], theirs_result: str, args: list[str]
) -> bool:
    """Whether two bodies run the same statements on the same inputs, each value under a name
    of its own, and return the same value. Attributes, calls and literals must be equal; only
    the names the bodies bind may differ."""
    if len(mine) != len(theirs):
        return False
    bound_mine: dict[str, object] = {name: ("input", name) for name in args}
    bound_theirs = dict(bound_mine)
    for index, (a, b) in enumerate(zip(mine, theirs)):
        names_a, names_b = targets(a), targets(b)
        if len(names_a) != len(names_b) or leading_space(a) != leading_space(b):
            return False
        rest_a, rest_b = _after_targets(a, names_a), _after_targets(b, names_b)
        if not _same_tokens(rest_a, rest_b, bound_mine, bound_theirs):
            return False
        for position, (x, y) in enumerate(zip(names_a, names_b)):
            bound_mine[x] = bound_theirs[y] = (index, position)
    return bound_mine.get(mine_result, mine_result) == bound_theirs.get(
        theirs_result, theirs_result
    )


def leading_space(line: str) -> str:
    """The leading whitespace of a line."""
    return line[: len(line) - len(line.lstrip())]


def _after_targets(line: str, names: list[str]) -> str:
    """The statement without the names it binds (``for`` kept, so loops compare as loops)."""
    match = _TARGETS.match(line)
    if not names or match is None:
        return line.strip()
    head = "for  in " if line.lstrip().startswith("for ") else " = "
    return head + line[match.end() :]


def _same_tokens(a: str, b: str, bound_a: dict, bound_b: dict) -> bool:
    tokens_a, tokens_b = _TOKEN.findall(a), _TOKEN.findall(b)
    if len(tokens_a) != len(tokens_b):
        return False
    for (dot_a, name_a, other_a), (dot_b, name_b, other_b) in zip(tokens_a, tokens_b):
        if dot_a != dot_b or other_a != other_b:
            return False
        if dot_a or not name_a:  # an attribute (``self.conv``) or punctuation: as written
            if name_a != name_b:
                return False
        elif name_a in bound_a or name_b in bound_b:  # a value: the same one
            if bound_a.get(name_a) != bound_b.get(name_b) or None in (
                bound_a.get(name_a),
                bound_b.get(name_b),
            ):
                return False
        elif name_a != name_b:  # a module, function or keyword: as written
            return False
    return True
