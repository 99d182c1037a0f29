"""The ``construct`` lines of mapped nodes: variables, reuse of dead variables, placeholders."""

from __future__ import annotations

import re
from collections import Counter

from ..graph.internal_domain import DOMAIN
from ..graph.module_tree import module_path
from ..graph.weight_roles import is_generated_name
from ..mappers.base import Cell, Input, MappedNode, Outputs, Temp, Unpack
from .expressions import ExpressionWriter
from .literals import literal
from .mask_names import mask_chain_roles
from .naming import identifier
from .rendered import UnconvertedSite
from .roles import unfolded_into_bias
from .scope import BlockScope, RenderState

# longest sizes tuple written inside the expression that reads it (a longer one keeps its name)
_INLINE_SIZES_LIMIT = 40


class StatementWriter:
    """Appends one node's statement(s) to the current block."""

    def __init__(self, state: RenderState, exprs: ExpressionWriter):
        self.state = state
        self.exprs = exprs
        self.attention_roles = {
            **mask_chain_roles(state.graph, state.mapped),
            **_attention_roles(state.mapped),
        }
        self.id_roles = _embedding_ids(state.mapped)

    @property
    def scope(self) -> BlockScope:
        return self.state.scope

    def output_variable(self, mapped: MappedNode, index: int, reuse: str | None) -> str:
        out = mapped.node.outputs[index]
        named = self.scope.is_root and source_output_name(out, self.state.graph.outputs)
        if named:  # the network's results keep the source's output names
            name = self.exprs.new_variable(named)
        elif _is_dims(mapped):  # sizes, never a tensor's old name
            name = self.exprs.new_variable("size" if _one_size(mapped) else "shape")
            self.scope.sizes.add(out)
        elif mapped.node.op_type == "ScaledDotProductAttention" and mapped.node.domain == DOMAIN:
            name = self.exprs.new_variable("context")  # as attention code names its result
        elif unfolded_into_bias(self.state.graph, mapped.node):
            name = reuse if reuse == "alibi" else self.exprs.new_variable("alibi")
        elif out in self.id_roles and out not in self.state.graph.inputs:
            role = self.id_roles[out]  # what an embedding table looks up: position_ids
            name = reuse if reuse == role else self.exprs.new_variable(role)
        elif out in self.attention_roles:
            role = self.attention_roles[out]  # a straight chain keeps it: q = rotate(q)
            if reuse != role and _frees(self.scope, mapped, role):
                reuse = role  # k = ops.concat((past_key, k), axis=-2)
            name = reuse if reuse == role else self.exprs.new_variable(role)
        elif out in self.scope.passed_roles and not _names_a_role(reuse):
            role = self.scope.passed_roles[out]  # what the children take it as
            name = reuse if reuse == role else self.exprs.new_variable(role)
        elif reuse is not None:
            name = reuse
        else:
            path = module_path(mapped.node)
            # a node of the block itself is named by what it computes, not by the block's name
            # ...and one computed for a list's layers before them (recover_hierarchy) likewise
            block = self.scope.prefix_path
            relative = path.removeprefix(block + ".") if block else path
            own = bool(path) and path != block and "." not in relative
            hint = path.rsplit(".", 1)[-1] if own else ""
            siblings = (
                self.scope.layer_reads.get(mapped.node.inputs[0], 0) if mapped.node.inputs else 0
            )
            if not hint or hint.isdigit() or siblings < 2:
                hint = next(
                    (h for h in ("x", "out") if h not in self.scope.cls.variables.taken), hint
                )
            op_hint = "matmul" if mapped.node.op_type == "MatMul" else mapped.node.op_type
            name = self.exprs.new_variable(hint or identifier(op_hint, "x"))
        self.scope.var_of[out] = name
        return name

    def reusable_input(self, mapped: MappedNode) -> str | None:
        """The first input's variable when this node is its last reader (chains read ``x = f(x)``).

        The network's input arguments are never overwritten, and a name keeps its meaning: it is
        reused only along a straight chain (the value has no other reader) by a node that
        transforms that one value or keeps its shape and dtype (``scores = q @ k`` is a new name).
        """
        for name in mapped.node.inputs:
            if name and name in self.scope.var_of:
                if (
                    name in self.scope.no_reuse
                    or name in self.scope.sizes  # a tensor never takes the name of a size
                    or self.scope.reads.get(name, 0) > 1
                ):
                    return None
                if self.scope.remaining_uses.get(name, 0) == 0 and name not in self.scope.protected:
                    return self.scope.var_of[name] if self._keeps_meaning(mapped, name) else None
                return None
        return None

    def _keeps_meaning(self, mapped: MappedNode, source: str) -> bool:
        graph = self.state.graph
        computed = {
            n
            for n in mapped.node.inputs
            if n and n in self.scope.var_of and not _is_sizes(graph, n)
        }
        if not mapped.node.outputs:
            return True
        result = mapped.node.outputs[0]
        if _looks_up(graph, mapped, source, result):
            return False  # token ids become embeddings: a new kind of value, a new name
        if len(computed) == 1:
            return True
        return graph.dtypes.get(source) == graph.dtypes.get(result) and (
            graph.symbolic_shapes.get(source) == graph.symbolic_shapes.get(result)
        )

    def consume_inputs(self, mapped: MappedNode) -> None:
        self.scope.consume_reads(mapped)

    def targets(self, mapped: MappedNode, count: int) -> str:
        used = [
            i < len(mapped.node.outputs) and mapped.node.outputs[i] in self.scope.remaining_uses_all
            for i in range(count)
        ]
        reuse = self.reusable_input(mapped) if sum(used) == 1 else None
        names = []
        for i in range(count):
            if used[i]:
                own = self._turned_in_place(mapped, i) if count > 1 else None
                names.append(self.output_variable(mapped, i, own or reuse))
                reuse = None
            else:
                names.append("_")
        return ", ".join(names)

    def _turned_in_place(self, mapped: MappedNode, index: int) -> str | None:
        """For a rotary pair, the variable of the input that output ``index`` turns, when this
        node is its last reader: ``q, k = apply_rotary_pos_emb(q, k, cos, sin)``."""
        node = mapped.node
        if node.op_type != "ApplyRotaryPair" or node.domain != DOMAIN:
            return None
        source = node.inputs[index]
        if (
            source not in self.scope.var_of
            or source in self.scope.no_reuse
            or source in self.scope.protected
            or self.scope.reads.get(source, 0) != 1
            or self.scope.remaining_uses.get(source, 0) != 0
        ):
            return None
        return self.scope.var_of[source]

    def statement(self, mapped: MappedNode) -> None:
        """Append the construct() line(s) for one node (comments of unused results are dropped)."""
        self._statement(mapped)
        self.scope.notes.clear()

    def _statement(self, mapped: MappedNode) -> None:
        result = mapped.result
        if isinstance(result, Outputs):
            texts = [None if e is None else self.exprs.expr(e, mapped) for e in result.exprs]
            self.consume_inputs(mapped)
            for index, text in enumerate(texts):
                if text is None or index >= len(mapped.node.outputs):
                    continue
                out = mapped.node.outputs[index]
                if out and out in self.scope.remaining_uses_all:
                    if isinstance(result.exprs[index], Temp) and text.isidentifier():
                        self.scope.var_of[out] = text  # a value written above: its name
                        continue
                    var = self.output_variable(mapped, index, None)
                    self.exprs.statement_line(f"{var} = {text}")
            return
        if isinstance(result, Unpack):
            text = self.exprs.expr(result.expr, mapped)
            self.consume_inputs(mapped)
            targets = self.targets(mapped, result.count)
            if targets.replace("_", "").replace(",", "").strip():
                self.exprs.statement_line(f"{targets} = {text}")
            return
        if isinstance(result, Input) and mapped.node.inputs[result.index] in self.scope.var_of:
            # a pure alias (Identity, no-op): later readers use the input's variable directly
            self.scope.var_of[mapped.node.outputs[0]] = self.scope.var_of[
                mapped.node.inputs[result.index]
            ]
            self.consume_inputs(mapped)
            source = mapped.node.inputs[result.index]
            self.scope.remaining_uses[source] = self.scope.remaining_uses.get(
                source, 0
            ) + self.scope.remaining_uses.get(mapped.node.outputs[0], 0)
            return
        text = self.exprs.expr(result, mapped)
        self.consume_inputs(mapped)
        if mapped.node.outputs and self._same_sizes(mapped, text):
            return
        if mapped.node.outputs and self._inline_sizes(mapped, text):
            self.scope.var_of[mapped.node.outputs[0]] = text
            self.scope.size_parts[mapped.node.outputs[0]] = self._size_parts(mapped)
            self.scope.no_reuse.add(mapped.node.outputs[0])
            return
        if mapped.node.outputs and mapped.node.outputs[0] in self.state.inlined:
            self.scope.var_of[mapped.node.outputs[0]] = text  # its one reader writes the call
            self.scope.no_reuse.add(mapped.node.outputs[0])  # an expression, never a target
            return
        if mapped.node.outputs and mapped.node.outputs[0] in self.scope.remaining_uses_all:
            targets = self.targets(mapped, 1)
            self.exprs.statement_line(f"{targets} = {text}")
            if _is_dims(mapped) and isinstance(mapped.result, tuple):
                # ``shape[0]`` reads ``batch_size`` itself: a name never changes value
                self.scope.size_parts[mapped.node.outputs[0]] = [
                    part if part.isidentifier() or part.isdigit() else ""
                    for part in self._size_parts(mapped)
                ]

    def _size_parts(self, mapped: MappedNode) -> list[str]:
        """Each item of a sizes tuple as it is written (none for one size)."""
        if not isinstance(mapped.result, tuple):
            return []
        return [self.exprs.expr(item, mapped) for item in mapped.result]

    def _same_sizes(self, mapped: MappedNode, text: str) -> bool:
        """A sizes tuple written before in this block, word for word, is read from its name
        (two exporter nodes computing ``(batch_size, seq_len, -1, 16)`` are one ``shape``)."""
        if not _is_dims(mapped) or "ops.shape(" in text:
            return False
        out = mapped.node.outputs[0]
        earlier = self.scope.size_texts.get(text)
        if earlier is None or out in self.scope.protected:
            self.scope.size_texts.setdefault(text, out)
            return False
        if self.scope.var_of[earlier].startswith("("):
            self._name_inlined_sizes(earlier)  # written where read once, now read again
        self.scope.var_of[out] = self.scope.var_of[earlier]
        self.scope.no_reuse.add(out)
        if earlier in self.scope.size_parts:
            self.scope.size_parts[out] = self.scope.size_parts[earlier]
        return True

    def _name_inlined_sizes(self, value: str) -> None:
        """Give the sizes tuple ``value``, written inside the statement that read it, a
        ``shape`` line of its own before that statement, for a second reader to read too."""
        text, body = self.scope.var_of[value], self.scope.cls.body
        index = next((i for i in range(len(body) - 1, -1, -1) if text in body[i]), None)
        if index is None or body[index].startswith(" "):
            return  # not a statement of construct's own level (a loop body)
        name = self.scope.cls.variables.claim("shape", "x")
        body[index] = body[index].replace(text, name)
        body.insert(index, f"{name} = {text}")
        self.scope.var_of[value] = name

    def _inline_sizes(self, mapped: MappedNode, text: str) -> bool:
        """A short tuple of named sizes with one reader is written where it is read:
        ``ops.reshape(context, (batch, sequence, -1))``, and one named size is its name. It
        reads no tensor, so no variable it names can change before its reader runs."""
        out = mapped.node.outputs[0]
        if not _is_dims(mapped) or out in self.scope.protected:
            return False
        if text.isidentifier():
            return True  # one named size: readers use its name
        return (
            isinstance(mapped.result, tuple)
            and self.scope.live_reads.get(out, 0) == 1
            and "(" not in text[1:]
            and len(text) <= _INLINE_SIZES_LIMIT
        )

    def placeholder(self, mapped: MappedNode) -> None:
        """An unconverted node: a clearly marked placeholder cell that keeps the file importable."""
        node = mapped.node
        attr = self.exprs.attribute_name(f"unconverted_{node.op_type}", "unconverted")
        in_shapes = tuple(self.state.graph.shapes.get(n) for n in node.inputs if n)
        out_shapes = tuple(self.state.graph.shapes.get(n) for n in node.outputs if n)
        self.state.uses.add("UnconvertedOperator")
        self.scope.cls.init_lines.append(
            [
                f"self.{attr} = UnconvertedOperator({node.op_type!r}, input_shapes={literal(in_shapes)}, "
                f"output_shapes={literal(out_shapes)})"
            ]
        )
        args = []
        for name in node.inputs:
            if not name:
                args.append("None")
            elif name in self.scope.var_of:
                args.append(self.scope.var_of[name])
            else:
                args.append(self.exprs.const(self.state.graph.constants[name], name, mapped))
        self.consume_inputs(mapped)
        count = len(node.outputs)
        targets = self.targets(mapped, count) if count else "_"
        targets = targets if targets.replace("_", "").replace(",", "").strip() else "_"
        call = f"self.{attr}({', '.join(args)})"
        self.exprs.statement_line(f"{targets} = {call}")
        self.state.unconverted.append(
            UnconvertedSite(node.name, node.op_type, node.domain, mapped.reason or "", attr)
        )


def _embedding_ids(mapped: list[MappedNode]) -> dict[str, str]:
    """``position_ids`` for the indices a ``position_embeddings`` table looks up (BERT's
    positions and token types, computed in the network)."""
    roles: dict[str, str] = {}
    for item in mapped:
        node = item.node
        if node.op_type != "Gather" or len(node.inputs) < 2 or not isinstance(item.result, Cell):
            continue
        table = module_path(node).rsplit(".", 1)[-1]
        for suffix in ("_embeddings", "_embedding"):
            if table.endswith(suffix) and len(table) > len(suffix):
                roles.setdefault(node.inputs[1], table[: -len(suffix)] + "_ids")
    return roles


def _frees(scope: BlockScope, mapped: MappedNode, variable: str) -> bool:
    """Whether ``mapped`` reads ``variable`` for the last time (a value it may take the name of:
    not one the block returns, not a network input, not a size)."""
    return any(
        scope.var_of.get(name) == variable
        and scope.remaining_uses.get(name, 0) == 0
        and name not in scope.protected
        and name not in scope.no_reuse
        and name not in scope.sizes
        for name in mapped.node.inputs
        if name
    )


def _names_a_role(name: str | None) -> bool:
    """A variable named for what it is (``causal_mask``), which a chain keeps."""
    base = re.sub(r"_\d+$", "", name or "")
    return base.endswith(("mask", "bias", "ids")) or base in ("alibi", "cos", "sin")


def _attention_roles(mapped: list[MappedNode]) -> dict[str, str]:
    """``q``, ``k`` and ``v`` for the values a recognised attention reads, as people name them."""
    roles: dict[str, str] = {}
    producers = {out: item.node for item in mapped for out in item.node.outputs if out}
    layers = {id(item.node) for item in mapped if isinstance(item.result, Cell)}
    reads = Counter(name for item in mapped for name in item.node.inputs if name)
    for item in mapped:
        node = item.node
        if node.op_type == "ScaledDotProductAttention" and node.domain == DOMAIN:
            projected: dict[str, str] = {}
            for name, role in zip(node.inputs, ("q", "k", "v")):
                # the value before its rotary embedding holds the same heads, and so do the new
                # keys and values a cache concatenation appends (``k = concat((past_key, k))``)
                while name and name not in roles:
                    roles[name] = role
                    source = producers.get(name)
                    value, name = name, ""
                    if source is not None and source.op_type == "ApplyRotary":
                        name = source.inputs[0] if source.domain == DOMAIN else ""
                    elif source is not None and source.op_type == "ApplyRotaryPair":
                        turned = source.outputs.index(value)
                        name = source.inputs[turned] if source.domain == DOMAIN else ""
                    elif (
                        source is not None
                        and source.op_type == "Transpose"
                        and turned_first(producers, source)
                    ):
                        name = source.inputs[0]  # GPT-J turns the heads before the transpose
                    elif source is not None and _normalizes_turned(producers, layers, source):
                        name = source.inputs[0]  # HunYuan normalizes q and k after the turn
                    elif source is not None and source.op_type == "Concat" and role in "kv":
                        name = source.inputs[-1] if len(source.inputs) == 2 else ""
                    elif source is not None and role in _SPLIT_ROLES:
                        _name_fused_projection(roles, producers, source, role)
                        projected[_SPLIT_ROLES[role]] = _projected_input(producers, layers, source)
            # each of q, k and v projected from a value of its own (CvT's convolutions)
            if len(set(projected.values()) - {""}) == 3:
                for role, value in projected.items():
                    if reads[value] == 1 and value in producers:
                        roles.setdefault(value, role)
    return roles


def _projected_input(producers: dict, layers: set[int], head_split) -> str:
    """What the layer before a head split (Reshape, Transpose) projects: CvT's convolutional
    projections, one for each of the query, key and value, as the source names them; "" when
    no layer of its own makes q, k or v."""
    source = head_split
    for _ in range(3):
        if source is None or source.op_type not in ("Reshape", "Transpose") or not source.inputs:
            break
        source = producers.get(source.inputs[0])
    if source is None or id(source) not in layers or not source.inputs:
        return ""
    return source.inputs[0]


def _normalizes_turned(producers: dict, layers: set[int], node) -> bool:
    """Whether a layer (a norm) reads a rotary embedding's result: it holds the same heads."""
    return id(node) in layers and turned_first(producers, node)


def turned_first(producers: dict, transpose) -> bool:
    """Whether a head transpose (or any node) reads a rotary embedding's result (so both hold
    the heads)."""
    source = producers.get(transpose.inputs[0]) if transpose.inputs else None
    return source is not None and source.op_type in ("ApplyRotary", "ApplyRotaryPair")


_SPLIT_ROLES = {
    "q": "query",
    "k": "key",
    "v": "value",
    "key_states": "key",
    "value_states": "value",
}


def _name_fused_projection(roles: dict, producers: dict, source, role: str) -> None:
    """``query``/``key``/``value`` for the parts of a fused projection's Split that a head
    split (Reshape, Transpose) turns into ``q``/``k``/``v``; ``fused_qkv`` for a fused
    projection split into heads whose q, k and v are picked out of it (BLOOM)."""
    # a Transpose that took in the pick out of a fused projection (chains.py): [data, index]
    picked = producers.get(source.inputs[0]) if len(source.inputs) == 2 else None
    if source.op_type == "Transpose" and picked is not None and picked.op_type == "Reshape":
        roles.setdefault(source.inputs[0], "fused_qkv")
        return
    for _ in range(3):
        if source.op_type not in ("Reshape", "Transpose") or not source.inputs:
            return
        name = source.inputs[0]
        source = producers.get(name)
        if source is not None and source.op_type == "Split":
            roles.setdefault(name, _SPLIT_ROLES[role])
            return
        if source is None:
            return


def _is_dims(mapped: MappedNode) -> bool:
    return mapped.node.op_type == "Dims" and mapped.node.domain == DOMAIN


def _one_size(mapped: MappedNode) -> bool:
    """A ``Dims`` node giving one number (as a number or a scalar tensor), not a vector."""
    attrs = mapped.node.attrs
    if attrs.get("scalar", 0):
        return True
    return not attrs.get("as_tensor", 0) and not isinstance(mapped.result, tuple)


def _is_sizes(graph, value: str) -> bool:
    """A tuple of sizes (a ``Dims`` node's result), not tensor data."""
    producer = graph.producers.get(value)
    return producer is not None and producer.domain == DOMAIN and producer.op_type == "Dims"


def source_output_name(value: str, outputs: list[str]) -> str:
    """The variable name for a network output named ``value`` in the source (``logits``), or ""
    when it is no output or its name was made up by the exporter (``onnx::Gemm_12``, ``123``,
    TensorFlow's ``Identity:0``)."""
    made_up = is_generated_name(value) or not value[:1].isalpha() or ":" in value or "/" in value
    if value not in outputs or made_up:
        return ""
    return identifier(value, "out")


def _looks_up(graph, mapped: MappedNode, source: str, result: str) -> bool:
    """Whether ``mapped`` turns integer ids into floats by a lookup (an embedding)."""
    before, after = graph.dtypes.get(source), graph.dtypes.get(result)
    return (
        mapped.node.op_type == "Gather"
        and before is not None
        and after is not None
        and before.kind in "iu"
        and after.kind == "f"
    )
