"""The deprecated AST path: rewrite a PyTorch model script into a MindSpore script.

``convert_source`` does the work on text and never raises for a script Python can parse: when
the rewritten tree cannot be produced it falls back to the original code with every PyTorch
use marked. ``convert_script`` adds the file handling (errors from :mod:`mindconverter.errors`,
atomic writes, no silent overwrite).
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from collections.abc import Callable
from pathlib import Path

from ..errors import make_error
from ..outputs.atomic import AtomicOutputs, check_targets, prepare_folder
from .helpers import torch_display
from .mapping import (
    load_table,
)
from .report import render_report, sort_events
from .results import DEPRECATION, Event, ScriptConversionResult, SourceConversion
from .script_text import (
    add_marks,
    fix_empty_bodies,
    format_script,
    insert_header,
    node_positions,
    script_header,
)
from .transformer import Converter


def convert_source(source: str, name: str = "<script>") -> SourceConversion:
    """Convert PyTorch script text. Raises SyntaxError (or ValueError) only for unparsable input."""
    tree = ast.parse(source)
    try:
        return _convert_tree(tree, name)
    except Exception as exc:
        return _fallback(source, name, f"{type(exc).__name__}: {exc}")


def _convert_tree(tree: ast.Module, name: str) -> SourceConversion:
    conv = Converter(tree)
    tree = conv.visit(tree)
    header = script_header(conv, tree)
    insert_header(tree, header)
    fix_empty_bodies(tree)
    ast.fix_missing_locations(tree)
    code = format_script(ast.unparse(tree) + "\n")
    positions = node_positions(tree, code)
    for event in conv.events:
        pos = positions.get(id(event.node)) if event.node is not None else None
        if pos is not None:
            event.line, event.col = pos
        else:
            event.line, event.col = event.src_line, event.src_col
    events = conv.events
    sort_events(events)
    code = add_marks(code, events)
    sort_events(events)
    ast.parse(code)  # the output must be valid Python; a failure here falls back
    helpers = sorted(n for n in {d.name if hasattr(d, "name") else "" for d in header} if n)
    return SourceConversion(
        code=code, report=render_report(events, name, "", helpers), events=events
    )


def _fallback(source: str, name: str, reason: str) -> SourceConversion:
    """The original code with every PyTorch use marked (used if rewriting failed)."""
    events: list = []
    try:
        tree = ast.parse(source)
        conv = Converter.__new__(Converter)
        conv.table = load_table()
        conv.aliases, conv.externals, conv.unknown_imports, conv.removed_imports = {}, {}, {}, set()
        Converter._collect_imports(conv, tree)
        seen = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Attribute, ast.Name)) and id(node) not in seen:
                key = Converter.resolve(conv, node)
                if key is None:
                    continue
                for sub in ast.walk(node):
                    seen.add(id(sub))
                if isinstance(node, ast.Name) and key in conv.table.torch_family:
                    continue
                events.append(
                    Event(
                        node=None,
                        converted=False,
                        torch_name=torch_display(key),
                        suggest=conv.table.suggestion(key),
                        line=node.lineno,
                        col=node.col_offset,
                    )
                )
    except Exception:
        events = []
    sort_events(events)
    code = source if source.endswith("\n") else source + "\n"
    try:
        marked = add_marks(code, events)
        ast.parse(marked)
        code = marked
    except Exception:
        pass
    return SourceConversion(
        code=code,
        report=render_report(events, name, reason, []),
        events=events,
        fallback_reason=reason,
    )


# The longest script --in_file reads (real model definitions are a few hundred KB at most).
MAX_SCRIPT_BYTES = 8 << 20


def _read_script(path: Path) -> str:
    if not path.exists():
        raise make_error("FILE_NOT_FOUND", f"The script '{path}' does not exist.")
    if path.is_dir():
        raise make_error("FILE_IS_DIRECTORY", f"'{path}' is a directory, not a Python script.")
    if not path.is_file():  # a FIFO would block, a device never end
        raise make_error(
            "SCRIPT_UNREADABLE", f"'{path}' is not a regular file (a device, pipe or socket)."
        )
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_SCRIPT_BYTES + 1)
    except OSError as exc:
        raise make_error("SCRIPT_UNREADABLE", f"Cannot read '{path}': {exc.strerror}.") from None
    if len(data) > MAX_SCRIPT_BYTES:
        raise make_error(
            "SCRIPT_UNREADABLE",
            f"'{path}' is larger than {MAX_SCRIPT_BYTES >> 20} MB; no model script is that long.",
        )
    if not data.strip():
        raise make_error("FILE_EMPTY", f"The script '{path}' is empty.")
    if b"\x00" in data:
        raise make_error(
            "SCRIPT_UNREADABLE", f"'{path}' contains NUL bytes; it is not a Python script."
        )
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        raise make_error(
            "SCRIPT_UNREADABLE", f"'{path}' is not a text file Python can decode ({exc})."
        ) from None
    text = text.removeprefix("\ufeff")
    return text


def convert_script(
    in_file: str | Path,
    output_dir: str | Path,
    report_dir: str | Path | None = None,
    overwrite: bool = False,
    notify: Callable[[str], None] | None = None,
) -> ScriptConversionResult:
    """Convert the PyTorch script `in_file`; write `<name>.py` to `output_dir` and
    `report_of_<name>.txt` to `report_dir` (default: `output_dir`). The deprecation notice goes
    to ``notify`` (default: stderr; the CLI prints it on stdout, keeping stderr for errors)."""
    if notify is None:
        print(DEPRECATION, file=sys.stderr)
    else:
        notify(DEPRECATION)
    path = Path(in_file)
    text = _read_script(path)
    try:
        compile(text, str(path), "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        raise make_error(
            "SCRIPT_UNREADABLE", f"'{path}' is not valid Python: {exc.msg} (line {exc.lineno})."
        ) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise make_error("SCRIPT_UNREADABLE", f"'{path}' cannot be parsed: {exc}.") from None
    output_dir = Path(output_dir)
    report_dir = Path(report_dir) if report_dir is not None else output_dir
    script_path = output_dir / (path.stem + ".py")
    report_path = report_dir / f"report_of_{path.stem}.txt"
    try:
        same = script_path.resolve() == path.resolve()
    except OSError:
        same = False
    if same:
        raise make_error(
            "BAD_ARGUMENT",
            f"The converted script would replace the input '{path}'; choose another --output folder.",
        )
    prepare_folder(output_dir)
    prepare_folder(report_dir)
    check_targets([script_path, report_path], overwrite)
    try:
        result = convert_source(text, path.name)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise make_error("SCRIPT_UNREADABLE", f"'{path}' cannot be parsed: {exc}.") from None
    with AtomicOutputs(overwrite=overwrite) as outputs:
        outputs.write_text(script_path, result.code)
        outputs.write_text(report_path, result.report)
        outputs.publish()
    return ScriptConversionResult(
        script_path=script_path,
        report_path=report_path,
        converted=result.converted,
        unconverted=result.unconverted,
        converted_rate=result.converted_rate,
        events=result.events,
    )
