"""Blocks of the module tree as cells: child classes, ``nn.SequentialCell``, ``nn.CellList``."""

from __future__ import annotations

import re

from ..graph.module_tree import Block, module_path
from ..mappers.activation import ACTIVATION_CELLS
from ..mappers.base import Cell
from .classes import one_class
from .dead_code import drop_unused_assignments
from .expressions import ExpressionWriter, with_exporter_note
from .layer_maps import write_map
from .layer_runs import LayerMap, LayerRun, chained_run, mapped_run, per_layer_base
from .naming import identifier
from .repeated_tuples import name_repeated_tuples
from .returns import inline_returned_slices
from .roles import cropped_input, input_names, layer_reads
from .scope import BlockInstance, BlockScope, ClassRef, RenderState
from .sizes import drop_size_only_values, drop_unused_sizes
from .statements import StatementWriter, source_output_name


def is_cell_list(block: Block) -> bool:
    """A container of numbered layers that is not a simple chain (a ModuleList of layers taking
    several inputs, like BERT's ``encoder.layer``; ALBERT's list of one shared layer)."""
    if block.sequential or not block.path:
        return False
    numbered = [item for item in block.items if isinstance(item, Block) and item.name.isdigit()]
    leaves = [item for item in block.items if not isinstance(item, Block)]
    # layers of the list itself (leaf modules named by index) would lose their names
    layer_leaves = [m for m in leaves if module_path(m.node).rsplit(".", 1)[0] == block.path]
    return (
        len(numbered) >= 1
        and not layer_leaves
        and all(item.name.isdigit() for item in block.items if isinstance(item, Block))
    )


def _live_reads(block: Block, readers: dict[str, int], outputs: list[str]) -> dict[str, int]:
    """Reads by nodes whose result something uses (a reshape folded into the transpose that
    reads it is written nowhere: its reads do not count)."""
    counts: dict[str, int] = {}
    for mapped in block.nodes():
        if any(out in readers or out in outputs for out in mapped.node.outputs if out):
            for name in mapped.node.inputs:
                if name:
                    counts[name] = counts.get(name, 0) + 1
    return counts


# roles a child block gives an argument that name the value where the parent computes it
_PASSED_ROLES = {"attention_mask", "attention_bias", "position_ids", "alibi", "cos", "sin"}
# the roles of what a layer transforms (its hidden states, a feature map)
_ACTIVATIONS = {"hidden_states", "x"}


def _passed_roles(graph, block: Block, inputs: set[str]) -> dict[str, str]:
    """The values ``block`` computes and hands to its child blocks, by the role each child's
    argument has (``attention_bias``, ``position_ids``); a value two roles claim keeps none."""
    found: dict[str, set[str]] = {}
    children = block.child_blocks()
    # a layer list's own nodes and calls are written in this block's construct
    children += [
        layer for child in children if is_cell_list(child) for layer in child.child_blocks()
    ]
    for child in children:
        for name, role in zip(child.inputs, input_names(graph, child.inputs, child.nodes())):
            if role in _PASSED_ROLES and name not in inputs and name not in graph.inputs:
                found.setdefault(name, set()).add(role)
    return {name: roles.pop() for name, roles in found.items() if len(roles) == 1}


def _one_class(instances: list[BlockInstance], layers: list[Block], keys: set) -> bool:
    """Whether layers rendered as several texts merge into one class (an optional part or a
    literal of their own): the texts of the layers and their children are tried alone."""
    paths = tuple(layer.path for layer in layers)
    inside = tuple(path + "." for path in paths)
    tried = [i for i in instances if i.block.path in paths or i.block.path.startswith(inside)]
    return one_class(tried, keys)


def _in_a_row(items: list, layers: list[Block]) -> bool:
    """Whether the numbered layers are called one after the other, in order, none of them an
    ``nn.SequentialCell``."""
    start = next(i for i, item in enumerate(items) if item is layers[0])
    run = items[start : start + len(layers)]
    return (
        len(run) == len(layers)
        and all(a is b for a, b in zip(run, layers))
        and [int(layer.name) for layer in layers] == list(range(len(layers)))
        and not any(layer.sequential for layer in layers)
    )


def _loopable(graph, items: list, layers: list[Block]) -> LayerRun | None:
    """How the layers run one after the other, each feeding the next (see
    :func:`chained_run`); ``None`` when they do not."""
    return chained_run(graph, layers) if _in_a_row(items, layers) else None


def _mappable(items: list, layers: list[Block]) -> LayerMap | None:
    """How the layers apply side by side, called one after the other (see
    :func:`mapped_run`); ``None`` when they do not."""
    return mapped_run(layers) if len(layers) > 1 and _in_a_row(items, layers) else None


def _hoisted(items: list, layers: list[Block]) -> list:
    """``items`` with the statements that sit between numbered layers and read no layer's
    result moved before the first layer (an exporter computes a preparation some layers share,
    a rotary table's ``unsqueeze``, where the first layer that reads it runs), so the layers run
    one after the other; ``items`` as they are when a statement between them reads a result."""
    listed = {id(layer) for layer in layers}
    positions = [i for i, item in enumerate(items) if id(item) in listed]
    start, end = positions[0], positions[-1]
    between = [item for item in items[start : end + 1] if id(item) not in listed]
    made = {name for layer in layers for name in layer.outputs}
    if not between or any(
        isinstance(item, Block) or set(item.node.inputs) & made for item in between
    ):
        return items
    layered = [items[i] for i in positions]
    return [*items[:start], *between, *layered, *items[end + 1 :]]


def _unpacked(layers: list[Block], classes: list, count: int) -> list[str] | None:
    """Names for the layers of a list whose layers are all different and each called once, by
    the one module each wraps (T5's ``layer``: ``self_attention``, ``dense_relu_dense``), to be
    taken out of the list by name (``_`` for a place the exporter left empty); None when a
    layer wraps no single module or two would share a name."""
    if len(layers) < 2 or len(set(classes)) != len(classes) or any(b.repeats > 1 for b in layers):
        return None
    names = ["_"] * count
    for layer in layers:
        children = layer.child_blocks()
        if len(children) != 1 or children[0].name.isdigit():
            return None
        names[int(layer.name)] = identifier(children[0].name, "layer")
    taken = [n for n in names if n != "_"]
    return names if len(set(taken)) == len(taken) else None


class BlockWriter:
    """Writes a block and, recursively, the blocks inside it."""

    def __init__(self, state: RenderState, exprs: ExpressionWriter, statements: StatementWriter):
        self.state = state
        self.exprs = exprs
        self.statements = statements

    @property
    def scope(self) -> BlockScope:
        return self.state.scope

    def render_block(self, block: Block, prefix: str, is_root: bool = False) -> BlockInstance:
        """Render one block (the whole model for the root) with its own names and variables."""
        graph = self.state.graph
        inputs = graph.inputs if is_root else block.inputs
        outputs = graph.outputs if is_root else block.outputs
        readers: dict[str, int] = {}
        for mapped in block.nodes():
            for name in mapped.node.inputs:
                if name:
                    readers[name] = readers.get(name, 0) + 1
        outer = self.state.scope
        scope = BlockScope(prefix=prefix, prefix_path=block.path, is_root=is_root)
        self.state.scope = scope
        args = []
        # a layer's own network input (past_key_1) is named without its layer's index, so that
        # every layer reads the same and shares one class (unless that would merge two names)
        # (a cache cropped from a network input counts as that input: past_key_0 and past_key_1
        # keep their indices when one layer's cache is the crop of its input)
        sources = [name if is_root else cropped_input(graph, name) or name for name in inputs]
        bases = [re.sub(r"(?<=[A-Za-z])_?\d+$", "", name) for name in sources]
        # a layer of a list (or a part of one) reads a network input it shares with no sibling
        # as its siblings read the previous layer's result, by role (one class for all)
        in_list = not is_root and re.search(r"(^|\.)\d+(\.|$)", block.path) is not None
        kept = {s for s, b in zip(sources, bases) if b != s} if in_list else None
        hints = list(inputs) if is_root else input_names(graph, inputs, block.nodes(), kept)
        for name, source, hint, base in zip(inputs, sources, hints, bases):
            shared = in_list and hint in _ACTIVATIONS and base == source  # not past_key_1
            if not is_root and source in graph.inputs and not shared:
                hint = base if bases.count(base) == 1 else source
            scope.var_of[name] = scope.cls.variables.claim(hint, "x")
            args.append(scope.var_of[name])
        scope.params = list(inputs)
        scope.passed_roles = _passed_roles(graph, block, set(inputs))
        scope.lists = {b.name for b in block.child_blocks() if is_cell_list(b)}
        scope.live_reads = _live_reads(block, readers, outputs)
        scope.remaining_uses = readers
        scope.reads, scope.layer_reads = dict(readers), layer_reads(block.items)
        scope.remaining_uses_all = set(readers) | set(outputs)
        scope.protected = set(outputs)
        scope.no_reuse = set(inputs) if is_root else set()
        for item in block.items:
            if isinstance(item, Block):
                self.child_block(item)
            elif item.converted:
                self.statements.statement(item)
            else:
                self.statements.placeholder(item)
        returns = [
            scope.var_of[name]
            if name in scope.var_of
            else self.exprs.const(graph.constants[name], name, None)
            for name in outputs
        ]
        if not is_root:
            if tuple(returns) in scope.gathered:
                returns = [scope.gathered[tuple(returns)]]
            returns = inline_returned_slices(scope.cls.body, returns)
        if scope.size_names:
            drop_size_only_values(scope, returns)
            drop_unused_sizes(scope)
        drop_unused_assignments(scope.cls.body, returns)
        name_repeated_tuples(scope.cls.body, lambda: scope.cls.variables.claim("shape", "x"))
        self.state.scope = outer
        return BlockInstance(block, scope.cls, args, returns)

    def instantiate(self, child: Block, prefix: str, attribute: str) -> ClassRef:
        """Render a child block and refer to its class; its literals become this block's slots."""
        instance = self.render_block(child, prefix)
        self.state.instances.append(instance)
        slots = tuple(
            self.scope.cls.slot(label, attribute, text).index
            for label, _, text in instance.builder.slots
        )
        return ClassRef(instance.key, slots)

    def sequential(self, block: Block, prefix: str, attr: str) -> list:
        """Parts of ``nn.SequentialCell([...])``; layers the exporter dropped become ``nn.Identity()``
        so every element keeps its source index (and its parameters their source names)."""
        self.state.uses.add("nn")
        by_index = dict(zip(block.indices, block.items))
        elements: list = ["nn.SequentialCell(["]
        for index in range(max(block.indices) + 1):
            if index:
                elements.append(", ")
            item = by_index.get(index)
            if item is None:
                elements.append("nn.Identity()")
            elif isinstance(item, Block) and item.sequential:
                elements.extend(self.sequential(item, f"{prefix}{index}.", attr))
            elif isinstance(item, Block):
                elements.append(self.instantiate(item, f"{prefix}{index}.", attr))
            elif isinstance(item.result, Cell):
                elements.extend(self.exprs.cell_ctor(item.result, attr))
                saved, self.scope.prefix = self.scope.prefix, f"{prefix}{index}."
                for param_name, weight in item.result.weights.items():
                    self.exprs.add_entry(param_name, with_exporter_note(weight, item), item)
                self.scope.prefix = saved
            else:
                elements.append(ACTIVATION_CELLS[item.result.func])
        elements.append("])")
        return elements

    def child_block(self, child: Block) -> None:
        """Create the child's cell in ``__init__`` and call it in ``construct``."""
        if is_cell_list(child):
            self.cell_list(child)
            return
        attr = self.exprs.attribute_name(
            child.name if not child.name.isdigit() else child.path, "block"
        )
        prefix = f"{self.scope.prefix}{attr}."
        if child.sequential:
            self.scope.cls.init_lines.append(
                [f"self.{attr} = "] + self.sequential(child, prefix, attr)
            )
        else:
            self.scope.cls.init_lines.append(
                [f"self.{attr} = ", self.instantiate(child, prefix, attr)]
            )
        self.call_block(child, f"self.{attr}", attr)

    def cell_list(self, container: Block) -> None:
        """A ModuleList whose layers take several inputs: ``nn.CellList`` called as ``self.layer[i](...)``,
        with the container's own statements inlined here."""
        attr = self.exprs.attribute_name(container.name, "layers")
        numbered = {
            int(item.name): item
            for item in container.items
            if isinstance(item, Block) and item.name.isdigit()
        }
        elements: list = ["nn.CellList(["]
        for index in range(max(numbered) + 1):
            if index:
                elements.append(", ")
            item = numbered.get(index)
            if item is None:
                elements.append("nn.Identity()")
            elif item.sequential:
                elements.extend(self.sequential(item, f"{self.scope.prefix}{attr}.{index}.", attr))
            else:
                elements.append(self.instantiate(item, f"{self.scope.prefix}{attr}.{index}.", attr))
        elements.append("])")
        self.state.uses.add("nn")
        self.scope.cls.init_lines.append([f"self.{attr} = "] + elements)
        keys = {part.key for part in elements if isinstance(part, ClassRef)}
        layers = [numbered[index] for index in sorted(numbered)]
        loopable = all(b.repeats == 1 for b in layers) and (
            len(keys) == 1 or _one_class(self.state.instances, layers, keys)
        )
        items = _hoisted(container.items, layers) if loopable else container.items
        run = _loopable(self.state.graph, items, layers) if loopable else None
        mapped = _mappable(items, layers) if loopable and run is None else None
        refs = [part.key for part in elements if isinstance(part, ClassRef)]
        plain = len(refs) == len(layers) and not any(b.sequential for b in layers)
        named = _unpacked(layers, refs, max(numbered) + 1) if run is None and plain else None
        looped = False
        for item in items:
            if run is not None and item is layers[0]:
                looped = self.loop_call(layers, attr, run)
            elif mapped is not None and item is layers[0]:
                params = next(i.args for i in self.state.instances if i.block is item)
                looped = write_map(self.scope, self.exprs, layers, attr, mapped, params)
            if looped and any(item is layer for layer in layers):
                continue
            if isinstance(item, Block) and item.name.isdigit() and named is not None:
                if item is layers[0]:  # a list of different layers, each called once (T5Block)
                    names = [self.exprs.new_variable(n) if n != "_" else n for n in named]
                    self.scope.cls.body.append(f"{', '.join(names)} = self.{attr}")
                self.call_block(item, names[int(item.name)], attr)
            elif isinstance(item, Block) and item.name.isdigit():
                self.call_block(item, f"self.{attr}[{int(item.name)}]", attr)
            elif isinstance(item, Block):
                self.child_block(item)
            elif item.converted:
                self.statements.statement(item)
            else:
                self.statements.placeholder(item)

    def loop_call(self, layers: list[Block], attr: str, run: LayerRun) -> bool:
        """``for layer in self.layers: x = layer(x, mask)`` when every layer of one class feeds the
        next; inputs of each layer's own (a KV cache) are zipped in from tuples and results of
        each layer's own gathered into tuples, as is the carried result when it is read after the
        loop. False (nothing written) otherwise."""
        first = layers[0]
        carried = first.inputs[run.carried_in]
        uses = self.scope.remaining_uses
        reads = [n for layer in layers for m in layer.nodes() for n in m.node.inputs if n in uses]
        own_inputs = [[layer.inputs[j] for layer in layers] for j in run.own_inputs]
        if (
            carried not in self.scope.var_of
            or carried in self.scope.no_reuse
            or carried in self.scope.protected
            or uses.get(carried, 0) != reads.count(carried)
            or any(name not in self.scope.var_of for names in own_inputs for name in names)
        ):
            return False
        for name in reads:
            uses[name] -= 1
        body = self.scope.cls.body
        var = self.scope.var_of[carried]
        params = next(i.args for i in self.state.instances if i.block is first)
        layer_var = self.exprs.new_variable("layer")
        loop_vars, iterables = [layer_var], [f"self.{attr}"]
        item_of: dict[int, str] = {}
        for position, names in zip(run.own_inputs, own_inputs):
            base = params[position]
            group = self.exprs.new_variable(self._group_name(base))
            body.append(f"{group} = ({', '.join(self.scope.var_of[n] for n in names)})")
            item = base if self.scope.holds_dead(base) else self.exprs.new_variable(base)
            loop_vars.append(item)
            iterables.append(group)
            item_of[position] = item
        targets, gathered = [], []
        for position in range(len(first.outputs)):
            if position == run.carried_out:
                targets.append(var)
                continue
            if not any(
                layer.outputs[position] in self.scope.remaining_uses_all for layer in layers
            ):
                targets.append("_")
                continue
            name = self._result_name(first, position, item_of, attr)
            item = self.exprs.new_variable(name)
            group = self.exprs.new_variable(self._group_name(name))
            body.append(f"{group} = ()")
            targets.append(item)
            gathered.append((item, group))
            for index, layer in enumerate(layers):
                self.scope.var_of[layer.outputs[position]] = f"{group}[{index}]"
                self.scope.no_reuse.add(layer.outputs[position])
        if run.kept:  # every layer's result is read after the loop too
            group = self.exprs.new_variable("all_hidden_states")
            body.append(f"{group} = ()")
            gathered.append((var, group))
            for index, layer in enumerate(layers[:-1]):
                self.scope.var_of[layer.outputs[run.carried_out]] = f"{group}[{index}]"
                self.scope.no_reuse.add(layer.outputs[run.carried_out])
            items = tuple(f"{group}[{index}]" for index in range(len(layers) - 1)) + (var,)
            self.scope.gathered[items] = group
        args = [
            var if j == run.carried_in else item_of.get(j) or self.scope.var_of[name]
            for j, name in enumerate(first.inputs)
        ]
        if len(iterables) == 1:
            body.append(f"for {layer_var} in self.{attr}:")
        else:
            body.append(f"for {', '.join(loop_vars)} in zip({', '.join(iterables)}):")
        body.append(f"    {', '.join(targets)} = {layer_var}({', '.join(args)})")
        body.extend(f"    {group} += ({item},)" for item, group in gathered)
        self.scope.var_of[layers[-1].outputs[run.carried_out]] = var
        return True

    def _cache_name(self, child: Block, result: str) -> str:
        """``present_key`` for a child's result that grows its ``past_key`` input (a KV cache
        concatenation); empty otherwise."""
        producer = self.state.graph.producers.get(result)
        if producer is None or producer.op_type != "Concat":
            return ""
        for name in child.inputs:
            var = self.scope.var_of.get(name, "")
            if name in producer.input and var.startswith("past_"):
                return "present_" + var.removeprefix("past_")
        return ""

    def _projected_name(self, result: str) -> str:
        """``query``/``key``/``value`` for a child's result that a projection turns into the
        attention's q, k or v (CvT's convolutional projections); empty otherwise."""
        role = self.statements.attention_roles.get(result, "")
        return role if role in ("query", "key", "value") else ""

    def _group_name(self, item: str) -> str:
        """``past_keys`` for the tuple of every layer's ``past_key``, or ``past_key_per_layer``
        when the network has an input or output of that name (a stacked cache)."""
        graph = self.state.graph
        outputs = {source_output_name(name, graph.outputs) for name in graph.outputs}
        taken = self.scope.cls.variables.taken
        item = per_layer_base(item)  # hidden_states_1: a second input of that kind
        plural = f"{item}_per_layer" if item.endswith("s") else f"{item}s"
        return (
            plural
            if plural not in outputs | set(graph.inputs) | set(taken)
            else f"{item}_per_layer"
        )

    def _result_name(self, layer: Block, position: int, item_of: dict[int, str], attr: str) -> str:
        """A name for one layer's own result: ``present_key`` for the concatenation that grows
        the layer's ``past_key``; the network output's name without its index; else generic."""
        producer = self.state.graph.producers.get(layer.outputs[position])
        if producer is not None and producer.op_type == "Concat":
            for j, item in item_of.items():
                item = per_layer_base(item)  # past_value, also for a loop's past_value_2
                if layer.inputs[j] in producer.input:
                    return (
                        f"present_{item.removeprefix('past_')}"
                        if item.startswith("past")
                        else f"new_{item}"
                    )
        base = source_output_name(layer.outputs[position], self.state.graph.outputs)
        return per_layer_base(base) if base else f"{attr}_output"

    def repeat_call(self, child: Block, callee: str) -> None:
        """``for _ in range(3): hidden_states = callee(hidden_states, mask)`` for a module the
        source applies several times in a row with the same weights."""
        carried_in, _, last_out = child.carried
        scope = self.scope
        args = [scope.var_of[name] for name in child.inputs]
        scope.consume_reads(child)
        named = scope.is_root and source_output_name(last_out, self.state.graph.outputs)
        var = scope.var_of[carried_in]
        if (
            named
            or carried_in in scope.no_reuse
            or carried_in in scope.protected
            or scope.remaining_uses.get(carried_in, 0) > 0
        ):
            var = self.exprs.new_variable(named or "hidden_states")
            scope.cls.body.append(f"{var} = {scope.var_of[carried_in]}")
        args[child.inputs.index(carried_in)] = var
        scope.cls.body.append(f"for _ in range({child.repeats}):")
        scope.cls.body.append(f"    {var} = {callee}({', '.join(args)})")
        scope.var_of[last_out] = var

    def _same_shape(self, source: str, result: str) -> bool:
        """Both shapes known and equal (sizes named alike where dynamic)."""
        shapes = self.state.graph.symbolic_shapes
        return shapes.get(source) is not None and shapes.get(source) == shapes.get(result)

    def call_block(self, child: Block, callee: str, attr: str) -> None:
        """``outputs = callee(inputs)`` for a child block, with the usual variable reuse."""
        if child.repeats > 1:
            self.repeat_call(child, callee)
            return
        call = f"{callee}({', '.join(self.scope.var_of[name] for name in child.inputs)})"
        self.scope.consume_reads(child)
        used = [name in self.scope.remaining_uses_all for name in child.outputs]
        reuse = None
        if sum(used) == 1:
            # keep a name only for the same kind of value (hidden states stay hidden states)
            result = child.outputs[used.index(True)]
            for source in child.inputs:
                if (
                    source not in self.scope.no_reuse
                    and source not in self.scope.protected
                    and self.scope.remaining_uses.get(source, 0) == 0
                    and self.state.graph.dtypes.get(source) == self.state.graph.dtypes.get(result)
                    and (len(child.inputs) == 1 or self._same_shape(source, result))
                ):
                    reuse = self.scope.var_of[source]
                    break
        targets = []
        for name, needed in zip(child.outputs, used):
            if not needed:
                targets.append("_")
                continue
            named = self.scope.is_root and source_output_name(name, self.state.graph.outputs)
            named = named or self._cache_name(child, name) or self._projected_name(name)
            var = self.exprs.new_variable(named) if named else None
            var = (
                var
                or reuse
                or self.exprs.new_variable(
                    "x" if "x" not in self.scope.cls.variables.taken else identifier(attr, "out")
                )
            )
            reuse = None
            self.scope.var_of[name] = var
            targets.append(var)
        self.scope.cls.body.append(f"{', '.join(targets) or '_'} = {call}")
