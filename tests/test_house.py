"""The files every project has, and that the README, pyproject and docs agree."""

from __future__ import annotations

import re
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest brings tomli
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_license_changelog_and_contributing_exist():
    assert "Apache License" in (ROOT / "LICENSE").read_text()
    assert PYPROJECT["project"]["license"]["text"] == "Apache-2.0"
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in changelog and re.search(r"## \[\d+\.\d+\.\d+\] - \d{4}-", changelog)
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    assert all(word in contributing for word in ("mapper", "not slow", "72 characters"))


def test_one_version_source():
    assert "version" not in PYPROJECT["project"] and "version" in PYPROJECT["project"]["dynamic"]
    attr = PYPROJECT["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "mindconverter.version.__version__"


def test_no_model_files_or_outputs_at_the_root():
    stray = [p.name for p in ROOT.iterdir() if p.suffix in {".onnx", ".ckpt", ".pb", ".mindir"}]
    assert not stray and not (ROOT / "out").exists(), stray


def test_readme_python_version_is_pyprojects():
    required = re.match(r">=\s*(\d+\.\d+)", PYPROJECT["project"]["requires-python"]).group(1)
    readme = (ROOT / "README.md").read_text()
    assert f"Python {required}+" in readme
    assert not re.search(r"Python 3\.\d+\+", readme.replace(f"Python {required}+", ""))


def test_quick_lane_is_documented():
    assert 'pytest -m "not slow"' in (ROOT / "README.md").read_text()


def test_mindspore_lower_bound_is_the_oldest_tested_version_that_passes():
    table = (ROOT / "docs" / "compatibility.md").read_text()
    rows = re.findall(r"^\| (\d+\.\d+\.\d+) \| (\w+) \|", table, re.M)
    passing = sorted(
        (tuple(int(p) for p in v.split(".")) for v, result in rows if result == "passes")
    )
    assert passing, "docs/compatibility.md lists no passing MindSpore version"
    for extra in ("mindspore", "test"):
        (bound,) = [
            d for d in PYPROJECT["project"]["optional-dependencies"][extra] if "mindspore" in d
        ]
        lower = tuple(int(p) for p in re.search(r">=\s*([\d.]+)", bound).group(1).split("."))
        lower += (0,) * (3 - len(lower))  # 2.10 is 2.10.0
        assert lower == passing[0], f"{bound}: the oldest passing version is {passing[0]}"
