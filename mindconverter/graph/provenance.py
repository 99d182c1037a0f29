"""Where a constant made by folding came from (for the weight map)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FoldRecord:
    """How a folded constant was derived from source initializers (for the weight map)."""

    sources: list[str]
    steps: list[str] = field(default_factory=list)
