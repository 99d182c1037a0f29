"""Regenerate the golden scripts under tests/golden/ from the cases in tests.codegen.golden_cases.py.

    python tools/regen_golden.py            # rewrite every golden file
    python tools/regen_golden.py --check    # exit 1 if any would change

Review the resulting diff: it is exactly the change in generated code.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.codegen.golden_cases import CASES, available, generate  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report changes without writing")
    args = parser.parse_args()
    changed = 0
    for case in CASES:
        if not available(case):
            print(f"skipped  {case.name} (needs {case.needs})")
            continue
        with tempfile.TemporaryDirectory() as folder:
            text = generate(case, Path(folder))
        old = case.golden_path.read_text(encoding="utf-8") if case.golden_path.exists() else None
        if old == text:
            print(f"same     {case.name}")
            continue
        changed += 1
        print(f"changed  {case.name}")
        if not args.check:
            case.golden_path.write_text(text, encoding="utf-8")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
