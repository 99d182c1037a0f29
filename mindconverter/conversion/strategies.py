"""The ways to convert a model, tried in order until one leaves nothing unconverted.

Like an exporter that tries its capture strategies one after the other, conversion first keeps
the dimensions the model declares dynamic; when that leaves operators unconverted, it tries
again with every dimension fixed at the ``--shape`` sizes, and keeps the run with fewer
unconverted operators (a network that runs at the example sizes beats one with placeholders).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ..text import one_line
from .settings import ConversionSettings
from .stages import ConvertedModel, convert_model


@dataclass(frozen=True)
class Strategy:
    """One way to convert: its name, and whether the declared dynamic dimensions stay dynamic."""

    name: str
    dynamic: bool


KEEP_DYNAMIC = Strategy("dynamic dimensions kept", dynamic=True)
FIXED_SIZES = Strategy("every dimension fixed at the --shape sizes", dynamic=False)
STRATEGIES = (KEEP_DYNAMIC, FIXED_SIZES)


def strategies_for(settings: ConversionSettings) -> tuple[Strategy, ...]:
    """The strategies to try, in order (``dynamic=False`` asks for fixed sizes only)."""
    return STRATEGIES if settings.dynamic else (FIXED_SIZES,)


def _worth_another_try(best: ConvertedModel) -> bool:
    """Only unconverted operators in a model with dynamic dimensions call for the next try."""
    return bool(best.rendered.unconverted and best.dynamic and best.graph.dynamic_dims)


def convert_in_order(model_path: Path, settings: ConversionSettings) -> ConvertedModel:
    """Convert with each strategy in turn; the first result that needs no other try, else the
    one with the fewest unconverted operators (the report notes a fallback)."""
    best: ConvertedModel | None = None
    for strategy in strategies_for(settings):
        if best is not None and not _worth_another_try(best):
            break
        run = settings if best is None else settings.quiet()
        candidate = convert_model(model_path, replace(run, dynamic=strategy.dynamic))
        if best is None:
            best = candidate
        elif candidate.unconverted_count < best.unconverted_count:
            best = _fallen_back(best, candidate, settings)
    assert best is not None  # strategies_for never returns an empty tuple
    return best


def _fallen_back(
    first: ConvertedModel, chosen: ConvertedModel, settings: ConversionSettings
) -> ConvertedModel:
    kinds = ", ".join(sorted({site.op_type for site in first.rendered.unconverted}))
    note = (
        f"Every dimension is kept at the --shape sizes: with dynamic dimensions "
        f"{first.unconverted_count} operator(s) ({kinds}) could not be converted, "
        f"with fixed sizes {chosen.unconverted_count}."
    )
    chosen.context.log = settings.log
    chosen.context.notes.append(one_line(note, 400))
    settings.say(f"NOTE: {chosen.context.notes[-1]}")
    return chosen
