"""Layer lists of one class that differ only in how many layers repeat.

HF's ResNet and RegNet stages hold ``depth`` layers: the first changes the width (and has a
shortcut), the others repeat one layer. Two stages whose lists differ in length become one class
with a ``depth`` argument, written as mindcv's ``_make_layer`` builds a stage::

    self.layers = nn.SequentialCell([Layer(...), *[Layer(...) for _ in range(depth - 1)]])

An ``__init__`` line holds such a list as parts (:class:`~.scope.ClassRef` per item); this module
reads both forms of it (the items one by one, or the first and the repeated one with the slot of
the depth) and writes the second.
"""

from __future__ import annotations

from dataclasses import dataclass

from .scope import ClassRef, SlotRef

DEPTH = "depth"  # the label of the slot of a list's length
REPEAT_OPEN = ", *["
REPEAT_RANGE = " for _ in range("
REPEAT_CLOSE = " - 1)]"
_SEPARATOR = ", "
_END = "])"


@dataclass(frozen=True)
class LayerList:
    """An ``__init__`` line building a list of blocks: ``head`` up to the list's ``[``, its
    first item, the items after it (one, the repeated item, when ``depth`` is set)."""

    head: list
    first: ClassRef
    rest: list[ClassRef]
    depth: SlotRef | None = None

    def repeated(self, first: ClassRef, rest: ClassRef, depth: SlotRef) -> list:
        """The line's parts with ``rest`` repeated ``depth - 1`` times after ``first``."""
        return [*self.head, first, REPEAT_OPEN, rest, REPEAT_RANGE, depth, REPEAT_CLOSE, _END]


def layer_list(parts: list) -> LayerList | None:
    """The list of blocks an ``__init__`` line builds (``self.layers = nn.SequentialCell([...])``),
    or None for any other line."""
    if len(parts) < 4 or not all(isinstance(p, str) for p in parts[:2]):
        return None
    if not parts[1].endswith("([") or parts[-1] != _END or not isinstance(parts[2], ClassRef):
        return None
    head, items = parts[:2], parts[2:-1]
    if (
        len(items) == 6
        and items[1:4:2] == [REPEAT_OPEN, REPEAT_RANGE]
        and isinstance(items[2], ClassRef)
        and isinstance(items[4], SlotRef)
        and items[5] == REPEAT_CLOSE
    ):
        return LayerList(head, items[0], [items[2]], items[4])
    if any(part != _SEPARATOR for part in items[1::2]):
        return None
    blocks = items[::2]
    if not all(isinstance(block, ClassRef) for block in blocks):
        return None
    return LayerList(head, blocks[0], blocks[1:])


def written_repeat(first: str, rest: str, depth: str) -> str:
    """The text of a list's items once its blocks are written: ``first`` and ``rest`` repeated,
    or one comprehension when the first item is written as the others are."""
    if first == rest:
        return f"{rest}{REPEAT_RANGE}{depth})"
    return f"{first}{REPEAT_OPEN}{rest}{REPEAT_RANGE}{depth}{REPEAT_CLOSE}"
