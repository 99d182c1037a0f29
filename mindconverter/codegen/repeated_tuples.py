"""A tuple of sizes written twice in one ``construct`` is written once, under a name.

A static export's target shapes count too, once classes are merged (two tuples of numbers may
coincide in one instance of a class and not in another): q, k and v split by
``(1, 2, -1, 8)`` read ``shape``, as a dynamic export's read ``(batch_size, seq_len, -1, 8)``.

Two exporter nodes may each build the same target shape from the same sizes: Mistral's
sliding-window mask (dynamo) broadcasts two index grids to ``(batch_size, -1, -1, shape_3[3])``,
written twice. Like the tuples codegen names itself (``shape = (batch_size, seq_len, -1, 8)``),
such a tuple gets one ``shape`` line before its first statement and every statement reads the
name, as long as no variable it reads is assigned between its first and last use.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Callable


def name_repeated_tuples(body: list[str], claim: Callable[[], str], static: bool = False) -> None:
    """Rewrite ``body`` (construct's lines, in place): each tuple of sizes written in two or
    more of its top-level statements is assigned once to a variable ``claim()`` gives; with
    ``static``, each static target shape (numbers and a merged class's ``self.<argument>``,
    one of them -1) instead."""
    places: dict[str, list[int]] = defaultdict(list)
    for index, line in enumerate(body):
        for text in _size_tuples(line, static):
            if index not in places[text]:
                places[text].append(index)
    for text, indices in places.items():
        if len(indices) < 2 or not _stable(body, text, indices):
            continue
        first = min(indices)
        if not all(text in body[i] for i in indices):
            continue  # an earlier rewrite changed one of its statements
        name = claim()
        for i in indices:
            body[i] = body[i].replace(text, name)
        while first > 0 and body[first - 1].startswith("#"):
            first -= 1  # above the notes of its first statement
        body.insert(first, f"{name} = {text}")


def _size_tuples(line: str, static: bool = False) -> list[str]:
    """The source of each tuple of sizes in a top-level statement that picks a size out of
    another value (``(batch_size, -1, -1, shape_3[3])``), or with ``static`` of each static
    target shape."""
    if line.startswith((" ", "#")):
        return []  # a loop's body or a comment
    try:
        tree = ast.parse(line)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Tuple) or len(node.elts) < 2:
            continue
        if isinstance(node.ctx, ast.Store):
            continue
        if static:
            picked = _static_shape(node)
        else:
            # a size picked out of another value (``shape_3[3]``, ``x.shape[1]``); a tuple of
            # named sizes alone reads as well inline (``(batch, -1, -1)`` twice, DeiT's tokens)
            picked = all(_size_part(e) for e in node.elts) and any(
                isinstance(n, (ast.Subscript, ast.Attribute)) for n in ast.walk(node)
            )
        text = ast.get_source_segment(line, node) if picked else None
        if text and text.startswith("("):
            found.append(text)
    return found


def _static_shape(node: ast.Tuple) -> bool:
    """Three or more numbers or ``self.<argument>``, one of them -1."""
    parts = [_number(e) for e in node.elts]
    return (
        len(parts) >= 3
        and -1 in parts
        and all(p is not None or _is_attribute(e) for p, e in zip(parts, node.elts))
    )


def _number(node: ast.expr) -> int | None:
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        sign, node = -1, node.operand
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return sign * node.value
    return None


def _is_attribute(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _size_part(node: ast.expr) -> bool:
    """A number, a name, a subscript of a name, ``x.shape[i]``, or arithmetic of those."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int)
    if isinstance(node, ast.UnaryOp):
        return _size_part(node.operand)
    if isinstance(node, ast.BinOp):
        return _size_part(node.left) and _size_part(node.right)
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and _size_part(node.value)
    if isinstance(node, ast.Attribute):
        return node.attr == "shape" and isinstance(node.value, ast.Name)
    return isinstance(node, ast.Name)


def _stable(body: list[str], text: str, indices: list[int]) -> bool:
    """Whether no variable the tuple reads is assigned from its first use to its last."""
    names = {n.id for n in ast.walk(ast.parse(text, mode="eval")) if isinstance(n, ast.Name)}
    for line in body[min(indices) : max(indices) + 1]:
        try:
            tree = ast.parse(line.strip())
        except SyntaxError:
            return False  # a line of a block (a loop): not sure what it assigns
        for node in ast.walk(tree):
            targets = getattr(node, "targets", None) or [getattr(node, "target", None)]
            for target in targets:
                if target is None:
                    continue
                assigned = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
                if assigned & names:
                    return False
    return True
