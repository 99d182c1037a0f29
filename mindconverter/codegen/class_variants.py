"""Block classes that differ only in optional parts, merged into one class.

Two recovered classes of the same kind (torchvision's ``BasicBlock`` with and without its
``downsample`` branch; a block whose convolution has ``stride=2`` in one stage and the default
stride in the others) become one class, as mindcv writes them: an argument for each literal
that differs, the omitted keyword's MindSpore default filled in for the instances that left it
out, ``has_<attribute>`` for a layer only some instances hold, and ``construct`` running that
layer's statements under ``if self.<attribute> is not None:``.

A :class:`Variants` starts from one class text and takes in other texts one by one; a text
that does not fit (another structure, another signature, a statement that differs other than
by an optional layer) stays a class of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from difflib import SequenceMatcher
from typing import Any

from .identity_layers import identity_call, identity_layer, skip_identity
from .list_depths import DEPTH, LayerList, layer_list
from .residuals import leading_space, same_up_to_names, split_residual
from .scope import ClassBuilder, ClassRef, SlotRef

# what texts that end in a residual sum hold, and the guard of that sum (never an attribute)
RESIDUAL = "#residual"
# the guard of a functional activation only some texts apply (``x = ops.relu(x)``): HF's
# ResNet/RegNet conv layers end in an activation except the last of a bottleneck
OPTIONAL_CALL = "#call:"
# x = ops.fn(x) or x = ops.fn(x, <literals>): numbers, tuples of numbers, keyword literals;
# the calls a block may apply or not under a flag (activations, a stride's asymmetric padding)
_OPTIONAL_CALLS = {"relu", "relu6", "sigmoid", "tanh", "hardswish", "hardsigmoid", "silu", "gelu"}
_OPTIONAL_CALLS |= {"pad"}
_CHAIN_CALL = re.compile(r"\s*(\w+) = ops\.(\w+)\(\1((?:, [\w=.\-]+| \([\d, \-.]*\)|,)*)\)")
# q, k = apply_rotary_pos_emb(q, k, cos, sin): the rotary turn some layers skip (SmolLM3 and
# EXAONE-4 leave it out every fourth layer; the source's flag is ``use_rope``)
_ROTARY_CALL = re.compile(r"\s*(\w+), (\w+) = apply_\w*rotary_pos_emb\(\1, \2(?:, \w+)+\)")
ROTARY = "use_rope"

# MindSpore's defaults for the keywords the mappers leave out when they hold them (checked
# against the installed classes by tests/codegen/test_class_variants.py).
_CONV_DEFAULTS = {"stride": "1", "padding": "0", "dilation": "1", "group": "1", "has_bias": "False"}
_POOL_DEFAULTS = {"stride": "1", "padding": "0", "ceil_mode": "False"}
KEYWORD_DEFAULTS: dict[str, dict[str, str]] = {
    **{f"nn.Conv{n}d": _CONV_DEFAULTS for n in (1, 2, 3)},
    "nn.Conv1dTranspose": _CONV_DEFAULTS,
    **{f"nn.Conv{n}dTranspose": {**_CONV_DEFAULTS, "output_padding": "0"} for n in (2, 3)},
    **{f"nn.MaxPool{n}d": {**_POOL_DEFAULTS, "dilation": "1"} for n in (1, 2, 3)},
    **{f"nn.AvgPool{n}d": {**_POOL_DEFAULTS, "count_include_pad": "True"} for n in (1, 2, 3)},
    "nn.Dense": {"has_bias": "True"},
}

_ATTRIBUTE_LINE = re.compile(r"self\.(\w+) = $")
# the name a number of ``construct`` takes from the call it is an argument of
_NUMBER_LABELS = {"math.sqrt": "head_dim", "ops.pad": "pad_size", "roll": "shift"}
_CALLEE = re.compile(r"([\w.]+)$")
# a number in a statement (not part of a name, an attribute or a float's digits), or the
# marker of a number slot the merged text already holds
_NUMBER = re.compile(r"\x00\d+\x00|(?<![\w.\x00])\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.\x00])")
_MARKER = re.compile(r"\x00(\d+)\x00")


def _form(line: str) -> str:
    """A statement with its numbers blanked out (what two texts' statements compare by)."""
    return _NUMBER.sub("#", line)


_READS = re.compile(r"\bself\.(\w+)")
_KEYWORD = re.compile(r"(?:, )?(\w+)=$")
_CONSTRUCTOR = re.compile(r"([\w.]+)\(\[?$")

# where a literal of the merged class comes from for one class text: its own slot, the default
# of a keyword it left out, a literal, or nothing (a slot of a layer that text does not hold)
Source = tuple[str, Any] | None


def kind_of(hint: str) -> str:
    """Texts of one kind may merge: ``Layer1`` and ``Layer2`` (TorchScript names blocks by
    their attribute), ``BasicBlock`` and ``BasicBlock``."""
    return re.sub(r"\d+$", "", hint)


def common_name(first: str, other: str) -> str:
    """The words two class names share at their start and end (``HubertGroupNormConvLayer``,
    ``HubertNoLayerNormConvLayer`` -> ``HubertConvLayer``); ``first`` when they share none."""
    words = [re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", name) for name in (first, other)]
    head = 0
    while head < min(map(len, words)) and words[0][head] == words[1][head]:
        head += 1
    tail = 0
    while tail < min(map(len, words)) - head and words[0][-1 - tail] == words[1][-1 - tail]:
        tail += 1
    shared = words[0][:head] + (words[0][len(words[0]) - tail :] if tail else [])
    return "".join(shared) if shared and tail else first


def _attribute(line: list) -> str | None:
    """The attribute an ``__init__`` line sets (``self.downsample = ...`` -> ``downsample``)."""
    head = line[0] if line and isinstance(line[0], str) else ""
    match = _ATTRIBUTE_LINE.fullmatch(head)
    return match.group(1) if match else None


def _tokens(parts: list, class_of=None) -> list:
    """What a line's parts compare by: a literal by the keyword before it (so that an omitted
    ``, stride=<slot>`` aligns as one piece), a block by its class (``class_of``: text key ->
    the variants it merged into), else by its text."""
    tokens: list = []
    for index, part in enumerate(parts):
        if isinstance(part, SlotRef):
            tokens.append(("slot", parts[index - 1] if index else ""))
        elif isinstance(part, ClassRef):
            merged = class_of(part.key) if class_of else None
            tokens.append(("class", id(merged) if merged is not None else part.key))
        else:
            tokens.append(part)
    return tokens


def _constructor_before(parts: list, position: int) -> str:
    """The cell class whose call holds the part at ``position`` (``nn.Conv2d``)."""
    for part in reversed(parts[:position]):
        if isinstance(part, str):
            match = _CONSTRUCTOR.search(part)
            if match:
                return match.group(1)
    return ""


def _omitted_keyword(parts: list, start: int, end: int) -> str | None:
    """The default of ``, stride=<slot>`` at ``parts[start:end]`` when the other text left
    that keyword out (``None`` when it is something else or its default is unknown)."""
    run = parts[start:end]
    if len(run) != 2 or not isinstance(run[0], str) or not isinstance(run[1], SlotRef):
        return None
    match = _KEYWORD.fullmatch(run[0])
    if not match or not run[0].startswith(", "):
        return None
    return KEYWORD_DEFAULTS.get(_constructor_before(parts, start), {}).get(match.group(1))


@dataclass
class Variants:
    """One class that several class texts (keys) render as."""

    hint: str
    lines: list[list]  # ``__init__`` lines; SlotRef indexes ``labels``
    labels: list[tuple[str, str]]  # per slot: (label, attribute)
    body: list[tuple[str, str | None]]  # construct lines with the optional layer guarding them
    args: list[str]
    returns: list[str]
    sources: dict[Any, list[Source]] = field(default_factory=dict)  # per key, per slot
    held: dict[Any, set[str]] = field(default_factory=dict)  # attributes each key holds
    texts: list[tuple] = field(default_factory=list)  # (key, hint, builder, args, returns)
    # layers some texts hold and the others apply as ``nn.Identity()`` (ModernBERT's first
    # layer has no attention norm): called unguarded, built on a flag
    identity: set[str] = field(default_factory=set)
    # text key -> the variants that text merged into (a child block's class), while merging
    class_of: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def start(cls, key, hint: str, builder: ClassBuilder, args, returns) -> Variants:
        variants = cls(
            hint,
            [list(line) for line in builder.init_lines],
            [(label, attribute) for label, attribute, _ in builder.slots],
            [(line, None) for line in builder.body],
            list(args),
            list(returns),
        )
        variants.sources[key] = [("slot", j) for j in range(len(builder.slots))]
        variants.held[key] = _held(builder)
        variants.texts.append((key, hint, builder, args, returns))
        return variants

    @property
    def optional(self) -> set[str]:
        """Attributes some texts hold and others do not."""
        every = set.intersection(*self.held.values())
        return set.union(*self.held.values()) - every

    def merged(
        self, key, hint: str, builder: ClassBuilder, args, returns, class_of=None, siblings=False
    ) -> Variants | None:
        """These variants with one more class text, or ``None`` when it does not fit
        (``class_of``: text key -> the variants of the class it is in, for child blocks).
        ``siblings``: the text is an item of a list that holds one of these texts, so it may
        merge though its class is of another kind (Hubert's first conv layer has a norm and
        its own class, the others none)."""
        if list(args) != self.args:
            return None
        if kind_of(hint) == kind_of(self.hint):
            name = self.hint if hint == self.hint else kind_of(self.hint)
        elif siblings:
            name = common_name(kind_of(self.hint), kind_of(hint))
        else:
            return None
        held = _held(builder)
        new = Variants(
            name,
            [],
            list(self.labels),
            [],
            self.args,
            self.returns,
            {k: list(v) for k, v in self.sources.items()},
            {**self.held, key: held},
        )
        new.sources[key] = [None] * len(self.labels)
        new.texts = [*self.texts, (key, hint, builder, args, returns)]
        new.class_of = class_of
        new.identity = set(self.identity)
        if not new._take_lines(self.lines, key, builder):
            return None
        if list(returns) == self.returns and new._take_body(self.body, key, builder.body):
            return new
        new.body = []
        if list(returns) == self.returns and new._take_identity(self, key, builder.body):
            return new
        new.body = []
        return new if new._take_residual(self, key, builder.body, list(returns)) else None

    def _new_slot(self, key, label: tuple[str, str], own: Source) -> SlotRef:
        self.labels.append(label)
        for k, sources in self.sources.items():
            sources.append(own if k == key else None)
        return SlotRef(len(self.labels) - 1)

    def _adopt(self, key, builder: ClassBuilder, parts: list) -> list:
        """A line of the new text with its slots made slots of the merged class."""
        adopted: list = []
        for part in parts:
            if isinstance(part, SlotRef):
                adopted.append(
                    self._new_slot(key, builder.slots[part.index][:2], ("slot", part.index))
                )
            elif isinstance(part, ClassRef):
                slots = tuple(
                    self._new_slot(key, builder.slots[j][:2], ("slot", j)).index for j in part.slots
                )
                adopted.append(ClassRef(part.key, slots))
            else:
                adopted.append(part)
        return adopted

    def _take_lines(self, old: list[list], key, builder: ClassBuilder) -> bool:
        """The merged ``__init__``: lines both texts hold paired, a layer only one holds kept."""
        mine = [_attribute(line) or repr(_tokens(line, self.class_of)) for line in old]
        theirs = [
            _attribute(line) or repr(_tokens(line, self.class_of)) for line in builder.init_lines
        ]
        if len(set(mine)) != len(mine) or len(set(theirs)) != len(theirs):
            return False
        matcher = SequenceMatcher(None, mine, theirs, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "replace":
                return False
            if tag in ("delete", "equal"):
                for i, line in enumerate(old[i1:i2]):
                    if tag == "delete":
                        if _attribute(line) is None:
                            return False
                        self.lines.append(line)
                    elif not self._take_line(key, builder, line, builder.init_lines[j1 + i]):
                        return False
            else:
                for line in builder.init_lines[j1:j2]:
                    if _attribute(line) is None:
                        return False
                    self.lines.append(self._adopt(key, builder, line))
        return True

    def _take_line(self, key, builder: ClassBuilder, line: list, other: list) -> bool:
        """One line both texts hold: slots paired, keywords one text left out defaulted."""
        taken = self._take_list(key, builder, line, other)
        if taken is not None:
            return taken
        sources = self.sources[key]
        matcher = SequenceMatcher(
            None, _tokens(line, self.class_of), _tokens(other, self.class_of), autojunk=False
        )
        merged: list = []
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                for mine, theirs in zip(line[i1:i2], other[j1:j2]):
                    if isinstance(mine, SlotRef):
                        sources[mine.index] = ("slot", theirs.index)
                    elif isinstance(mine, ClassRef):
                        mine = self._pair_blocks(key, mine, theirs)
                        if mine is None:
                            return False
                    merged.append(mine)
            elif tag == "delete":  # the new text left keywords out: their defaults
                for at in range(i1, i2, 2):
                    default = _omitted_keyword(line, at, at + 2) if i2 - i1 > 1 else None
                    if default is None:
                        return False
                    sources[line[at + 1].index] = ("default", default)
                merged.extend(line[i1:i2])
            elif tag == "insert":  # the earlier texts left them out
                for at in range(j1, j2, 2):
                    default = _omitted_keyword(other, at, at + 2) if j2 - j1 > 1 else None
                    if default is None:
                        return False
                    slot = self._new_slot(key, builder.slots[other[at + 1].index][:2], None)
                    for k, k_sources in self.sources.items():
                        k_sources[slot.index] = (
                            ("slot", other[at + 1].index) if k == key else ("default", default)
                        )
                    merged.extend([other[at], slot])
            else:
                return False
        self.lines.append(merged)
        return True

    def _take_list(self, key, builder: ClassBuilder, line: list, other: list) -> bool | None:
        """Two lists of blocks of one class that differ in length (HF's ResNet stages): one
        list of the first block and the repeated one, ``depth`` long. None when the lines are
        not such lists (or lists of one length: paired item by item)."""
        mine, theirs = layer_list(line), layer_list(other)
        if mine is None or theirs is None or theirs.depth is not None:
            return None
        if mine.depth is None and len(mine.rest) == len(theirs.rest):
            return None
        if not _repeats_in_texts(mine, self) or not _repeats_in(builder, theirs):
            return False
        first = self._pair_listed(key, mine.first, theirs.first)
        if first is None:
            return False
        rest = mine.rest[0] if mine.rest else None
        if rest is not None and theirs.rest:
            rest = self._pair_listed(key, rest, theirs.rest[0])
        elif theirs.rest:  # the earlier texts' lists hold the first block alone
            rest = self._adopt(key, builder, [theirs.rest[0]])[0]
        if rest is None:
            return False
        depth = mine.depth
        if depth is None:
            attribute = _attribute(line) or ""
            depth = self._new_slot(key, (DEPTH, attribute), None)
            for k_sources in self.sources.values():
                k_sources[depth.index] = ("literal", str(len(mine.rest) + 1))
        self.sources[key][depth.index] = ("literal", str(len(theirs.rest) + 1))
        self.lines.append(mine.repeated(first, rest, depth))
        return True

    def _pair_listed(self, key, mine: ClassRef, theirs: ClassRef) -> ClassRef | None:
        """Two items of layer lists paired when they are of one class."""
        if mine.key != theirs.key:
            child = self.class_of(mine.key) if self.class_of else None
            if child is None or child is not self.class_of(theirs.key):
                return None
        return self._pair_blocks(key, mine, theirs)

    def _pair_blocks(self, key, mine: ClassRef, theirs: ClassRef) -> ClassRef | None:
        """Two child blocks at one place: each literal of the first takes the new text's value
        of the same argument of their class (its slot, or the default it left out); an
        argument the first holds as a literal and the new one sets otherwise becomes a slot of
        this class passed on to the child (Swin's head size per stage). Returns the child as
        the merged text holds it; None when their classes' optional layers differ."""
        sources = self.sources[key]
        if mine.key == theirs.key and not mine.routed and not mine.flags:
            for m, t in zip(mine.slots, theirs.slots):
                sources[m] = ("slot", t)
            return mine
        child = self.class_of(mine.key) if self.class_of else None
        if child is None:
            return None
        flags = self._route_flags(key, mine, child.held[mine.key], child.held[theirs.key])
        routed = dict(mine.routed)
        pairs = zip(child.sources[mine.key], child.sources[theirs.key])
        for index, (first, other) in enumerate(pairs):
            if other is None:  # an argument of a part their child does not hold
                continue
            value = ("slot", theirs.slots[other[1]]) if other[0] == "slot" else other
            if first is None and index not in routed:  # of a part the first child lacks
                slot = self._new_slot(key, child.labels[index], value)
                routed[index] = slot.index
                continue
            if index in routed:
                sources[routed[index]] = value
            elif first[0] == "slot":
                sources[mine.slots[first[1]]] = value
            elif other != first:  # the first child's text holds it as a literal
                slot = self._new_slot(key, child.labels[index], value)
                for k, k_sources in self.sources.items():
                    if k != key:
                        k_sources[slot.index] = first
                routed[index] = slot.index
        return replace(mine, routed=tuple(sorted(routed.items())), flags=flags)

    def _route_flags(self, key, mine: ClassRef, mine_held: set, their_held: set) -> tuple:
        """The child's optional parts one child holds and the other not become flags of this
        class passed on to it (``has_shortcut``); the texts without the part leave the flag
        at its default."""
        routed = dict(mine.flags)
        for part in sorted((mine_held ^ their_held) | routed.keys()):
            value = ("literal", "True") if part in their_held else ("default", "False")
            if part in routed:
                self.sources[key][routed[part]] = value
                continue
            slot = self._new_slot(key, (flag_name(part), ""), value)
            for k, k_sources in self.sources.items():
                if k != key:
                    k_sources[slot.index] = (
                        ("literal", "True") if part in mine_held else ("default", "False")
                    )
            routed[part] = slot.index
        return tuple(sorted(routed.items()))

    def _take_body(self, old: list[tuple[str, str | None]], key, body: list[str]) -> bool:
        """The merged ``construct``: statements only some texts run are those of a layer only
        they hold, and run under its guard."""
        held, before = self.held[key], [h for k, h in self.held.items() if k != key]
        matcher = SequenceMatcher(
            None, [_form(line) for line, _ in old], [_form(line) for line in body], autojunk=False
        )
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                calls = {g for _, g in old[i1:i2] if g and g.startswith(OPTIONAL_CALL)}
                self.held[key] = held = held | calls  # the new text applies them too
                if any(guard and guard not in held for _, guard in old[i1:i2]):
                    return False
                for (line, guard), other in zip(old[i1:i2], body[j1:j2]):
                    merged = self._take_numbers(key, line, other)
                    if merged is None:
                        return False
                    self.body.append((merged, guard))
            elif tag == "insert":  # statements of a layer the new text alone holds
                run = body[j1:j2]
                guard = _guard(
                    run, lambda a, held=held: a in held and all(a not in h for h in before)
                )
                call = optional_call(run)
                if guard is None and call is not None and all(call not in h for h in before):
                    self.held[key] = held = held | {call}
                    guard = call
                if guard is None:
                    return False
                self.body.extend((line, guard) for line in run)
            elif tag == "delete":  # statements of a layer every earlier text holds
                run = [line for line, _ in old[i1:i2]]
                guard = _guard(
                    run, lambda a, held=held: a not in held and all(a in h for h in before)
                )
                call = optional_call(run) if all(g is None for _, g in old[i1:i2]) else None
                if guard is None and call is not None:
                    for k in self.held:  # every earlier text applies it
                        if k != key:
                            self.held[k] = self.held[k] | {call}
                    guard = call
                for line, own in old[i1:i2]:
                    if (own or guard) is None or (own or guard) in held:
                        return False
                    self.body.append((line, own or guard))
            else:
                return False
        return True

    def _take_residual(self, old: Variants, key, body: list[str], returns: list[str]) -> bool:
        """The merged ``construct`` when the texts compute the same under other names and
        some of them end by adding their input (a residual connection): the sum runs under a
        flag. The statements keep the names of a text with the sum (its input stays alive)."""
        if old.body and old.body[-1][1] == RESIDUAL:
            mine, mine_sum, mine_result = old.body[:-1], old.body[-1][0], old.returns[0]
        else:
            split = split_residual([line for line, _ in old.body], self.args, old.returns)
            if split is not None and any(guard for _, guard in old.body):
                return False
            mine, mine_sum, mine_result = old.body, None, old.returns[0]
            if split is not None:
                mine, mine_sum, mine_result = old.body[:-1], split.line, split.result
                for k in old.held:
                    self.held[k] = self.held[k] | {RESIDUAL}
        theirs = split_residual(body, self.args, returns)
        their_lines = theirs.prefix if theirs else body
        their_result = theirs.result if theirs else returns[0] if len(returns) == 1 else ""
        if (mine_sum is None) == (theirs is None) or not same_up_to_names(
            [line for line, _ in mine], mine_result, their_lines, their_result, self.args
        ):
            return False
        if theirs is not None:
            self.held[key] = self.held[key] | {RESIDUAL}
        if theirs is not None and mine_sum is None:  # the names of the text with the sum
            mine = [(line, guard) for line, (_, guard) in zip(their_lines, mine)]
            mine_sum, mine_result = theirs.line, theirs.result
        self.body = [*mine, (mine_sum or "", RESIDUAL)]
        self.returns = [mine_result]
        return True

    def _take_identity(self, old: Variants, key, body: list[str]) -> bool:
        """The merged ``construct`` when texts differ by a layer call ``v = self.<layer>(a)`` the
        others skip (:func:`.identity_layers.skip_identity`): called in every text, an
        ``nn.Identity()`` where it is absent (ModernBERT's first layer has no attention norm)."""
        found = identity_layer(list(old.held.values()), self.held[key])
        if found is None or any(guard for _, guard in old.body):
            return False
        layer, old_holds = found
        old_lines = [line for line, _ in old.body]
        holder, lacking = (old_lines, body) if old_holds else (body, old_lines)
        skipped = skip_identity(holder, layer, self.returns)
        if skipped is None or list(map(_form, skipped)) != list(map(_form, lacking)):
            return False
        if not old_holds and (skipped != lacking or body_slots(old)):
            return False  # numbers that differ: the earlier texts hold no slot for them
        if old_holds:  # the holder's lines, their numbers paired with the new text's
            at = next(i for i, line in enumerate(holder) if identity_call(line, layer))
            rest = [*holder[:at], *holder[at + 1 :]]
            paired = [self._take_numbers(key, a, b) for a, b in zip(rest, lacking)]
            if any(line is None for line in paired):
                return False
            holder = [*paired[:at], holder[at], *paired[at:]]  # type: ignore[list-item]
        self.body = [(line, None) for line in holder]
        self.identity.add(layer)
        return True

    def _take_numbers(self, key, line: str, other: str) -> str | None:
        """A statement both texts run, its numbers paired: a number that differs becomes a
        slot of the class (a stage's head size in Swin), written as a marker until the class
        knows its arguments; None when a number turns into another kind of number."""
        pieces = [m.group(0) for m in _NUMBER.finditer(other)]
        found = list(_NUMBER.finditer(line))
        if len(found) != len(pieces):
            return None
        parts, last = [], 0
        for match, theirs in zip(found, pieces):
            mine, text = match.group(0), match.group(0)
            marker = _MARKER.fullmatch(mine)
            if marker is not None:
                self.sources[key][int(marker.group(1))] = ("literal", theirs)
            elif mine != theirs:
                if ("." in mine) != ("." in theirs):
                    return None
                label = number_label(line[: match.start()])
                slot = self._new_slot(key, (label, ""), ("literal", theirs))
                for k, sources in self.sources.items():
                    if k != key:
                        sources[slot.index] = ("literal", mine)
                text = f"\x00{slot.index}\x00"
            parts.append(line[last : match.start()] + text)
            last = match.end()
        return "".join(parts) + line[last:]


def number_label(before: str) -> str:
    """What a number of a statement is, from the call whose arguments hold it (``before`` is
    the statement up to the number): ``head_dim`` under ``math.sqrt``, ``pad_size`` in the
    amounts of ``ops.pad`` (EfficientNet's strided convolutions), ``shift`` in ``roll``'s
    shifts; ``size`` for anything else."""
    depth = 0
    for index in range(len(before) - 1, -1, -1):
        if before[index] == ")":
            depth += 1
        elif before[index] == "(" and depth:
            depth -= 1
        elif before[index] == "(":
            callee = _CALLEE.search(before[:index])
            if callee is not None:  # a tuple's parenthesis has none: look further out
                return _NUMBER_LABELS.get(callee.group(1), "size")
    return "size"


def body_slots(variants: Variants) -> set[int]:
    """The slots ``construct`` reads (numbers that differ between the texts)."""
    return {int(i) for line, _ in variants.body for i in _MARKER.findall(line)}


def construct_lines(
    variants: Variants, flags: dict[str, str], numbers: dict[int, str]
) -> list[str]:
    """``construct``'s lines, statements of an optional layer under its guard, a residual
    sum only some texts make under its flag (``flags``: guard -> constructor argument),
    each number slot written as ``numbers`` says (``self.head_dim`` or the literal)."""
    lines: list[str] = []
    body = [
        (_MARKER.sub(lambda m: numbers[int(m.group(1))], line), guard)
        for line, guard in variants.body
    ]
    for index, (line, guard) in enumerate(body):
        if guard is None or (guard.startswith("#") and guard not in flags):
            lines.append(line)
            continue
        indent = leading_space(line)
        if guard.startswith("#") and (index == 0 or body[index - 1][1] != guard):
            lines.append(f"{indent}if self.{flags[guard]}:")
        elif index == 0 or body[index - 1][1] != guard:
            lines.append(f"{indent}if self.{guard} is not None:")
        lines.append(f"{indent}    {line[len(indent) :]}")
    return lines


def init_line(variants: Variants, line: list, text: str, flags: dict[str, str]) -> str:
    """An ``__init__`` line as written: a layer only some texts hold is built on its flag
    (``flags``: optional attribute -> the constructor argument that says it is held), an
    ``nn.Identity()`` in its place where the statements call it whatever it is."""
    attribute = _attribute(line)
    if attribute in flags:
        absent = "nn.Identity()" if attribute in variants.identity else "None"
        return f"{text} if {flags[attribute]} else {absent}"
    return text


def optional_call(run: list[str]) -> str | None:
    """The guard of a run that is one functional call of the value it rebinds, with literal
    arguments only (``x = ops.relu(x)``, EfficientNet's ``x = ops.pad(x, (0, 1, 0, 1))``
    before a strided depthwise convolution), or the rotary turn of q and k; None for anything
    else."""
    if len(run) == 1 and _ROTARY_CALL.fullmatch(run[0]):
        return f"{OPTIONAL_CALL}{ROTARY}"
    match = _CHAIN_CALL.fullmatch(run[0]) if len(run) == 1 else None
    if match is None or match.group(2) not in _OPTIONAL_CALLS or "self." in match.group(3):
        return None
    return f"{OPTIONAL_CALL}{match.group(2)}"


def flag_name(guard: str) -> str:
    """The constructor argument that switches a guarded piece on: ``residual``, ``relu`` for
    an optional activation, ``has_<layer>`` for an optional layer."""
    if guard == RESIDUAL:
        return "residual"
    if guard.startswith(OPTIONAL_CALL):
        return guard[len(OPTIONAL_CALL) :]
    return f"has_{guard}"


def _repeats_in_texts(listed: LayerList, variants: Variants) -> bool:
    """Whether every text merged so far repeats one block after the first of ``listed``."""
    if listed.depth is not None or len(listed.rest) < 2:
        return True
    for text_key, _, builder, _, _ in variants.texts:
        sources = variants.sources[text_key]
        values = {
            (
                ref.key,
                ref.routed,
                ref.flags,
                tuple(_source_text(sources[slot], builder) for slot in ref.slots),
            )
            for ref in listed.rest
        }
        if len(values) > 1:
            return False
    return True


def used_slots(variants: Variants) -> set[int]:
    """The slots a merged class reads (a list's items after its repeated one are gone)."""
    used = body_slots(variants)
    for line in variants.lines:
        for part in line:
            if isinstance(part, SlotRef):
                used.add(part.index)
            elif isinstance(part, ClassRef):
                used.update(part.slots)
                used.update(j for _, j in part.routed)
                used.update(j for _, j in part.flags)
    return used


def _repeats_in(builder: ClassBuilder, listed: LayerList) -> bool:
    """Whether a class text's list repeats one block (same class, same literals) after its
    first."""
    values = {(ref.key, tuple(builder.slots[slot][2] for slot in ref.slots)) for ref in listed.rest}
    return len(values) <= 1


def _source_text(source: Source, builder: ClassBuilder) -> str | None:
    """What a slot holds for one text (None where that text has no such literal)."""
    if source is None:
        return None
    kind, value = source
    return builder.slots[value][2] if kind == "slot" else value


def _held(builder: ClassBuilder) -> set[str]:
    """The attributes a class text sets."""
    return {a for a in map(_attribute, builder.init_lines) if a}


def _guard(run: list[str], fits) -> str | None:
    """The optional layer a run of statements belongs to: the first it reads that ``fits``;
    ``None`` when the run is not indented as one piece or reads no such layer."""
    indent = leading_space(run[0])
    if any(not line.startswith(indent) for line in run):
        return None
    for line in run:
        for attribute in _READS.findall(line):
            if fits(attribute):
                return attribute
    return None
