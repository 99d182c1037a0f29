"""The classes and functions a generated script defines itself (``RMSNorm``,
``masked_softmax``, ``apply_rotary_pos_emb``...), kept as real modules: tests import and run
them, and a script that uses one gets its source inlined, without the module's docstring and
imports (the script imports for itself). The converter reads them as text, never imports them.
"""

from __future__ import annotations

from importlib import resources


def helper_source(name: str) -> str:
    """The definitions of helper module ``name`` as the script inlines them: two blank lines,
    then everything after the module's docstring, imports and blank lines at its top."""
    text = resources.files(__package__).joinpath(f"{name}.py").read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    start = 1 if lines and lines[0].startswith('"""') else 0
    while start < len(lines) and (
        not lines[start].strip() or lines[start].startswith(("import ", "from "))
    ):
        start += 1
    return "\n\n" + "".join(lines[start:]).rstrip("\n")


class HelperSources:
    """``helpers["rms_norm"]`` in the script's template: the helper's source, read on use."""

    def __getitem__(self, name: str) -> str:
        return helper_source(name)
