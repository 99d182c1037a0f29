"""Regenerate docs/cli.md from the argument parser: python tools/gen_cli_docs.py [--check]."""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"


def render() -> str:
    """The CLI reference text: the parser's own --help output, framed."""
    os.environ["COLUMNS"] = "100"
    from mindconverter.cli import build_parser

    help_text = build_parser().format_help().rstrip()
    return (
        "# Command-line reference\n\n"
        "Generated from the argument parser by `python tools/gen_cli_docs.py`; "
        "`mindconverter --help` prints the same.\n\n"
        f"```text\n{help_text}\n```\n\n"
        "Exit codes: `0` converted, `1` conversion failed (also `--strict` with unconverted operators "
        "and `--verify` mismatches), `2` usage error. Every error is one line "
        "`[ErrorClass] code NNNNNNN: what is wrong. What to do.`; see [errors.md](errors.md).\n"
    )


def main() -> int:
    text = render()
    if "--check" in sys.argv:
        if DOC.read_text() != text:
            print(f"{DOC} is out of date; run python tools/gen_cli_docs.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
