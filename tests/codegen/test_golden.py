"""Golden files: the generated script of each model in ``tests.codegen.golden_cases.py``, compared as text.

A failure shows the diff. When the change to generated code is intended, regenerate the files with
``python tools/regen_golden.py`` and review the diff in the commit.
"""

from __future__ import annotations

import difflib

import pytest

from tests.codegen.golden_cases import CASES, available, generate


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_generated_script_matches_golden_file(case, tmp_path):
    if not available(case):
        pytest.skip(f"needs {case.needs}")
    expected = case.golden_path.read_text(encoding="utf-8")
    actual = generate(case, tmp_path)
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                fromfile=f"tests/golden/{case.golden_path.name}",
                tofile="generated",
            )
        )
        pytest.fail(f"generated script differs (run tools/regen_golden.py if intended):\n{diff}")
