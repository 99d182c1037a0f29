"""A layer the source applies more than once, recognised so the script calls it again.

DeBERTa projects the hidden states and the relative position table with the same
``query_proj``: the exporter writes two MatMuls reading one weight (or an exporter's copy of
it), and the script calls ``self.query_proj`` twice instead of defining a tied second layer.
"""

from __future__ import annotations

from ..graph.weight_roles import is_generated_name
from ..mappers.base import Cell, Weight

# Layers whose Parameters may be replaced by a shared one after construction (recurrent layers
# keep their own lists of parameters, so assigning one would not reach the computation), and
# that may be applied more than once
TIEABLE_CELLS = {"nn.Dense", "nn.Embedding", "nn.LayerNorm", "nn.Conv1d", "nn.Conv2d", "nn.Conv3d"}


def layer_content(cell: Cell, content_keys) -> tuple | None:
    """What identifies a layer with weights: its class, arguments and weights (by content, with
    the source tensor each comes from); None for a layer that is never shared."""
    if cell.cls not in TIEABLE_CELLS or not cell.weights or cell.definition:
        return None
    weights = tuple(
        (name, content_keys.key(weight.array), _steps(weight), weight.source)
        for name, weight in sorted(cell.weights.items())
    )
    return cell.cls, repr(sorted(cell.kwargs.items())), weights


def same_layer(content: tuple, earlier: list[tuple[tuple, str]]) -> str | None:
    """The attribute of an ``earlier`` layer that ``content`` describes again: the same class,
    arguments and weights, each from the same source tensor or from a copy the exporter made
    under a generated name (as tied weights are recognised)."""
    cls, kwargs, weights = content
    for (other_cls, other_kwargs, other_weights), attr in earlier:
        if (other_cls, other_kwargs) != (cls, kwargs) or len(other_weights) != len(weights):
            continue
        if all(
            mine[:3] == theirs[:3] and (mine[3] == theirs[3] or is_generated_name(mine[3]))
            for mine, theirs in zip(weights, other_weights)
        ):
            return attr
    return None


def _steps(weight: Weight) -> tuple[str, ...]:
    """The steps of a weight's transform that change it (an exporter's ``Identity()`` does not)."""
    return tuple(step for step in weight.transform.split("; ") if step and step != "Identity()")
