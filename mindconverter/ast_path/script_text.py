"""From the rewritten tree to the script text: header, formatting, and marks on lines that still use
PyTorch."""

from __future__ import annotations

import ast
import io
import tokenize

from ..ruff_format import ruff_format
from .helpers import helper_closure


class RootRenamer(ast.NodeTransformer):
    def __init__(self, mapping: dict):
        self.mapping = {k: v for k, v in mapping.items() if k != v}

    def visit_Name(self, node):
        if node.id in self.mapping:
            node.id = self.mapping[node.id]
        return node


def script_header(conv, tree: ast.Module) -> list:
    """Imports, helpers, stand-ins and adapters to put at the top of the converted script
    (``conv`` is the transformer.Converter that rewrote ``tree``)."""
    used_names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    for adapter in conv.adapters.values():
        used_names |= {n.id for n in ast.walk(adapter) if isinstance(n, ast.Name)}
    # placeholders for torch names still referenced (unconverted code keeps its text)
    provided = set(conv.root_alias_map.values())
    placeholders = []
    for local, qualified in sorted(conv.aliases.items()):
        if local in used_names and local not in provided:
            placeholders.append((local, qualified))
    for local, qualified in sorted(conv.unknown_imports.items()):
        if local in used_names:
            placeholders.append((local, qualified))
    if placeholders:
        conv.need_helper("_UnconvertedAPI")
    ext_aliases = []
    for local, (_, entry) in sorted(conv.externals.items()):
        helper = entry.get("helper")
        if local in used_names:
            conv.need_helper(helper)
            if helper == "_Anything":
                ext_aliases.append((local, "_Anything()"))
            elif local != helper:
                ext_aliases.append((local, helper))
    helpers = helper_closure(conv.helpers)
    for helper in helpers:
        for sub in ast.walk(helper):
            if isinstance(sub, ast.Name) and sub.id in ("math", "mindspore", "nn", "ops"):
                conv.roots.add(sub.id)
    lines = []
    order = ["mindspore", "nn", "ops", "ms_init", "np", "math", "contextlib", "typing"]
    plain = [r for r in order if r in conv.roots and r in ("np", "math", "contextlib", "typing")]
    for root in plain:
        alias = conv.root_alias_map.get(root, root)
        module = {"np": "numpy"}.get(root, root)
        lines.append(f"import {module}" + (f" as {alias}" if alias != module else ""))
    ms_alias = conv.root_alias_map.get("mindspore", "mindspore")
    lines.append("import mindspore" + (f" as {ms_alias}" if ms_alias != "mindspore" else ""))
    parts = []
    for root in ("nn", "ops"):
        alias = conv.root_alias_map.get(root, root)
        parts.append(root + (f" as {alias}" if alias != root else ""))
    lines.append("from mindspore import " + ", ".join(parts))
    if "ms_init" in conv.roots:
        alias = conv.root_alias_map.get("ms_init", "ms_init")
        lines.append(f"from mindspore.common import initializer as {alias}")
    body = ast.parse("\n".join(lines) + "\n").body
    renamer = RootRenamer(conv.root_alias_map)
    for helper in helpers:
        body.append(renamer.visit(helper))
    for local, helper in ext_aliases:
        body.append(ast.parse(f"{local} = {helper}").body[0])
    for local, qualified in placeholders:
        body.append(ast.parse(f"{local} = _UnconvertedAPI({qualified!r})").body[0])
    for adapter in conv.adapters.values():
        body.append(adapter)
    return body


def insert_header(tree: ast.Module, header: list):
    """Imports go after the docstring and __future__ imports; helpers after the script's own
    leading imports."""
    index = 0
    body = tree.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        index = 1
    while (
        index < len(body)
        and isinstance(body[index], ast.ImportFrom)
        and body[index].module == "__future__"
    ):
        index += 1
    imports = [n for n in header if isinstance(n, (ast.Import, ast.ImportFrom))]
    rest = [n for n in header if not isinstance(n, (ast.Import, ast.ImportFrom))]
    after = index
    while after < len(body) and isinstance(body[after], (ast.Import, ast.ImportFrom)):
        after += 1
    tree.body = body[:index] + imports + body[index:after] + rest + body[after:]


def fix_empty_bodies(tree):
    for node in ast.walk(tree):
        for field_name in ("body",):
            value = getattr(node, field_name, None)
            if isinstance(value, list) and not value and not isinstance(node, ast.Module):
                setattr(node, field_name, [ast.Pass()])
        if isinstance(node, ast.Try):
            for handler in node.handlers:
                if not handler.body:
                    handler.body = [ast.Pass()]


def format_script(code: str) -> str:
    """Format with ruff when available (same AST, so positions are recomputed afterwards)."""
    formatted = ruff_format(code, 100, timeout=60)
    if formatted is None:
        return code
    try:
        if ast.dump(ast.parse(formatted)) != ast.dump(ast.parse(code)):
            return code
    except SyntaxError:
        return code
    return formatted


def node_positions(tree: ast.AST, code: str) -> dict:
    """id(node) -> (line, col) in `code`, by walking `tree` and the re-parsed code in lockstep."""
    reparsed = ast.parse(code)
    positions = {}

    def nodes(root):
        return (
            n
            for n in ast.walk(root)
            if not isinstance(
                n, (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
            )
        )

    for old, new in zip(nodes(tree), nodes(reparsed)):
        if type(old) is not type(new):
            break
        if hasattr(new, "lineno"):
            positions[id(old)] = (new.lineno, new.col_offset)
    return positions


def unsafe_lines(code: str) -> set:
    """Lines whose end lies inside a string token (no comment may be appended there)."""
    unsafe = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type == tokenize.STRING or tok.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
                unsafe.update(range(tok.start[0], tok.end[0]))
    except (tokenize.TokenError, SyntaxError):
        pass
    lines = code.splitlines()
    for number, line in enumerate(lines, 1):
        if line.rstrip().endswith("\\"):
            unsafe.add(number)
    return unsafe


def statement_starts(code: str) -> list:
    """(start, end, indent) of every statement, to find where a comment line may go."""
    spans = []
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return spans
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            spans.append((node.lineno, getattr(node, "end_lineno", node.lineno), node.col_offset))
    return spans


def add_marks(code: str, events: list) -> str:
    """Append '# [UnConvert] ...' comments to the lines of unconverted APIs; lines positions of
    events are updated when a comment has to go on a line of its own."""
    marks: dict = {}
    for event in events:
        if not event.converted and event.line > 0:
            marks.setdefault(event.line, [])
            if event.torch_name not in marks[event.line]:
                marks[event.line].append(event.torch_name)
    if not marks:
        return code
    lines = code.split("\n")
    unsafe = unsafe_lines(code)
    spans = statement_starts(code)
    insert_before: dict = {}
    for line, names in marks.items():
        if line > len(lines):
            continue
        text = (
            "# [UnConvert] "
            + ", ".join(f"'{n}'" for n in names)
            + " didn't convert (see the report)"
        )
        if line not in unsafe:
            lines[line - 1] = lines[line - 1] + "  " + text
            continue
        enclosing = [s for s in spans if s[0] <= line <= s[1]]
        start, _, indent = max(enclosing, key=lambda s: s[0]) if enclosing else (line, line, 0)
        insert_before.setdefault(start, []).append(" " * indent + text)
    if not insert_before:
        return "\n".join(lines)
    out = []
    shift_at = []
    for number, line in enumerate(lines, 1):
        extra = insert_before.get(number, [])
        out.extend(extra)
        if extra:
            shift_at.append((number, len(extra)))
        out.append(line)
    for event in events:
        event.line += sum(count for start, count in shift_at if start <= event.line)
    return "\n".join(out)
