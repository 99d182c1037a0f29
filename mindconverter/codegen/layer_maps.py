"""Layers of one list applied side by side (none reads another's result), written as one loop
that gathers their results: Segformer's decode head projecting every stage's feature map."""

from __future__ import annotations

from ..graph.module_tree import Block
from .expressions import ExpressionWriter
from .layer_runs import LayerMap, per_layer_base
from .scope import BlockScope


def write_map(
    scope: BlockScope,
    exprs: ExpressionWriter,
    layers: list[Block],
    attr: str,
    mapped: LayerMap,
    params: list[str],
) -> bool:
    """``outputs += (layer(x),)`` in a loop over ``self.<attr>`` zipped with each layer's own
    inputs (``params`` names the layers' arguments); later reads of a layer's result read
    ``outputs[i]``. False (nothing written) when an input has no variable yet."""
    if any(name not in scope.var_of for layer in layers for name in layer.inputs):
        return False
    for layer in layers:
        scope.consume_reads(layer)
    layer_var = exprs.new_variable("layer")
    loop_vars, iterables = [layer_var], [f"self.{attr}"]
    item_of: dict[int, str] = {}
    for position in mapped.own_inputs:
        base = per_layer_base(params[position])
        item = base if scope.holds_dead(base) else exprs.new_variable(base)
        loop_vars.append(item)
        names = [scope.var_of[layer.inputs[position]] for layer in layers]
        iterables.append(f"({', '.join(names)})")  # two layers or more: a tuple
        item_of[position] = item
    group = exprs.new_variable(f"{_singular(attr)}_outputs")
    args = [item_of.get(j) or scope.var_of[name] for j, name in enumerate(layers[0].inputs)]
    body = scope.cls.body
    body.append(f"{group} = ()")
    if len(iterables) == 1:
        body.append(f"for {layer_var} in self.{attr}:")
    else:
        body.append(f"for {', '.join(loop_vars)} in zip({', '.join(iterables)}):")
    body.append(f"    {group} += ({layer_var}({', '.join(args)}),)")
    for index, layer in enumerate(layers):
        scope.var_of[layer.outputs[0]] = f"{group}[{index}]"
        scope.no_reuse.add(layer.outputs[0])
    return True


def _singular(attr: str) -> str:
    """``linear_projection`` for ``linear_projections``: what one layer of the list is."""
    return attr[:-1] if attr.endswith("s") and not attr.endswith("ss") else attr
