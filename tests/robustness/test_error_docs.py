"""docs/errors.md is generated from ERROR_CODES; the table is well-formed and in use."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from mindconverter.errors import _CLASSES, ERROR_CODES, make_error

ROOT = Path(__file__).resolve().parents[2]


def test_errors_doc_is_up_to_date():
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_error_docs.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_every_code_is_documented_with_cause_and_fix():
    doc = (ROOT / "docs" / "errors.md").read_text()
    for key, entry in ERROR_CODES.items():
        assert f"| {entry.number} | `{key}` |" in doc
        assert entry.cause.endswith(".") and entry.fix.endswith(".")


def test_codes_are_unique_and_in_their_class_range():
    numbers = [entry.number for entry in ERROR_CODES.values()]
    assert len(numbers) == len(set(numbers))
    ranges = {
        "ModelLoadingError": 1,
        "ArgumentError": 2,
        "OutputError": 3,
        "ConversionError": 4,
        "VerificationError": 5,
        "ScriptConversionError": 6,
        "InternalError": 9,
    }
    for key, entry in ERROR_CODES.items():
        assert entry.category in _CLASSES
        assert entry.number // 1_000_000 == ranges[entry.category], key
        error = make_error(key, "Detail.")
        assert re.fullmatch(rf"\[{entry.category}\] code {entry.number}: Detail\. .+", str(error))
        assert error.exit_code == (2 if entry.category == "ArgumentError" else 1)


def test_every_code_used_in_the_package_exists():
    used = set()
    for path in (ROOT / "mindconverter").rglob("*.py"):
        used |= set(re.findall(r"make_error\(\s*\"([A-Z_]+)\"", path.read_text()))
    assert used <= set(ERROR_CODES), used - set(ERROR_CODES)
