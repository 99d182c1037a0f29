"""The AST path's text report."""

from __future__ import annotations

from .results import DEPRECATION


def render_report(events: list, name: str, fallback_reason: str, helpers: list) -> str:
    converted = sum(1 for e in events if e.converted)
    unconverted = len(events) - converted
    total = converted + unconverted
    rate = 100.0 if total == 0 else 100.0 * converted / total
    lines = ["[Start Convert]"]
    lines.extend(e.text() for e in events)
    lines.append("[Convert Over]")
    lines.append(f"Converted Rate: {rate:.2f}%.")
    lines.append("")
    lines.append(f"Script: {name}")
    lines.append(f"Converted: {converted}  Unconverted: {unconverted}")
    if fallback_reason:
        lines.append(
            f"The script could not be rewritten ({fallback_reason}); the output is the original code "
            "with every PyTorch use marked."
        )
    missing: dict = {}
    for event in events:
        if not event.converted:
            missing[event.torch_name] = missing.get(event.torch_name, 0) + 1
    if missing:
        lines.append(
            "Not converted: " + ", ".join(f"{k} ({v})" for k, v in sorted(missing.items()))
        )
    if helpers:
        lines.append("Helpers added to the script: " + ", ".join(helpers))
    lines.append("Line:column positions point into the converted script (columns count from 0).")
    lines.append(DEPRECATION)
    return "\n".join(lines) + "\n"


def sort_events(events):
    events.sort(key=lambda e: (e.line, e.col))
