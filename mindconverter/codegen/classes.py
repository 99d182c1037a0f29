"""Block instances merged into classes: instances with the same text share one class, and the
literals that differ between them become constructor arguments."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..mappers.base import Cell
from .class_variants import (
    Variants,
    body_slots,
    construct_lines,
    flag_name,
    init_line,
    kind_of,
    used_slots,
)
from .list_depths import DEPTH, REPEAT_OPEN, written_repeat
from .naming import CELL_MEMBERS, Namer, identifier
from .repeated_tuples import name_repeated_tuples
from .scope import BlockInstance, ClassBuilder, ClassRef, SlotRef

# Abbreviations in attribute names, spelled out for class names (``self_attn`` -> SelfAttention).
_SPELLED_OUT = {"attn": "attention", "mlp": "MLP", "ffn": "FFN", "ff": "FeedForward"}


def class_hint_from_path(path: str, wrapped: str = "") -> str:
    """A class name hint for a block of a source that kept no class names (a TorchScript
    export): its attribute, abbreviations spelled out, a list's item in the singular
    (``model.layers.0`` -> ``layer``), ``self`` with its parent's (``attention.self`` ->
    ``self_attention``), a list's item around one module with that module's name first
    (``layer.0`` around ``SelfAttention`` -> ``self_attention_layer``); ``<attribute>_block``
    for a one- or two-letter one."""
    item = bool(re.search(r"\.\d+$", path))
    attribute = re.sub(r"\.\d+$", "", path).rsplit(".", 1)[-1]
    words = [_SPELLED_OUT.get(word, word) for word in attribute.split("_") if word]
    parent = path.rsplit(".", 1)[0] if "." in path else ""
    if attribute == "self" and parent:  # BERT's attention.self: SelfAttention, as HF names it
        words += [_SPELLED_OUT.get(w, w) for w in parent.rsplit(".", 1)[-1].split("_") if w]
    if item and words and len(words[-1]) > 3 and words[-1].endswith("s"):
        words[-1] = words[-1][:-1]
    if item and wrapped:  # T5's layer.0 around SelfAttention: SelfAttentionLayer
        words = [_SPELLED_OUT.get(w, w) for w in identifier(wrapped, "").split("_") if w] + words
    if not words or len(attribute) <= 2:
        return f"{attribute}_block"
    return "_".join(words)


def merge_classes(
    instances: list[BlockInstance], taken: frozenset[str] | set[str] = frozenset()
) -> dict:
    """Group block instances by their text, texts that differ only in optional parts into one
    class (:mod:`.class_variants`); literals that differ become constructor arguments. Every
    text's key maps to its class; class names avoid ``taken`` (classes the script defines
    otherwise)."""
    groups: dict = {}
    for instance in instances:
        groups.setdefault(instance.key, []).append(instance)
    namer = Namer({"MindSporeModel", *taken})
    order = {id(instance): index for index, instance in enumerate(instances)}
    classes: dict = {}
    for variants in _variants(groups):
        members = sorted(
            (m for key in variants.sources for m in groups[key]), key=lambda m: order[id(m)]
        )
        _fill_absent(variants, groups)
        values = {
            id(m): [_value(source, m.builder) for source in variants.sources[m.key]]
            for m in members
        }
        info = {
            "name": namer.claim_class(variants.hint),
            "members": members,
            "sources": variants.sources,
            "variants": variants,
            **_arguments(variants, members, values),
        }
        for key in variants.sources:
            classes[key] = info
    for info in unique(classes):
        variants, first = info["variants"], info["members"][0]
        flags = {attribute: name for name, attribute in info["flags"]}
        template = ClassBuilder(
            slots=[(*label, v) for label, v in zip(variants.labels, info["first"])]
        )
        info["init"] = [
            init_line(variants, line, join(line, template, info["params"], classes), flags)
            for line in variants.lines
        ]
        for guard in sorted(g for g in flags if g.startswith("#")):  # residual, activations
            info["init"].append(f"self.{flags[guard]} = {flags[guard]}")
        numbers, stored = {}, {}
        layers = {m.group(1) for line in info["init"] if (m := re.match(r"self\.(\w+) = ", line))}
        for index in sorted(body_slots(variants)):
            name = info["params"].get(index)
            if name is None:
                numbers[index] = str(info["first"][index])
                continue
            if name not in stored:  # construct reads it: kept as an attribute
                attribute = name
                while attribute in layers or attribute in CELL_MEMBERS:
                    attribute += "_value"
                stored[name] = attribute
                info["init"].append(f"self.{attribute} = {name}")
            numbers[index] = f"self.{stored[name]}"
        info["body"] = construct_lines(variants, flags, numbers)
        taken_names = [*info["body"], *map(str, first.args)]
        name_repeated_tuples(info["body"], _free_names(taken_names, "shape"), static=True)
        info["args"], info["returns"] = first.args, variants.returns
        paths = ", ".join(re.sub(r"[^A-Za-z0-9_.]", "", m.block.path) for m in info["members"][:4])
        more = f" and {len(info['members']) - 4} more" if len(info["members"]) > 4 else ""
        info["doc"] = f"Recovered from {paths}{more}."
    return classes


def one_class(instances: list[BlockInstance], keys: set) -> bool:
    """Whether the texts ``keys`` would merge into one class (the numbered layers of a list
    that differ in an optional part or a literal: one class, so they run as a loop);
    ``instances`` holds them and their children's, children first."""
    groups: dict = {}
    for instance in instances:
        groups.setdefault(instance.key, []).append(instance)
    return any(keys <= variants.sources.keys() for variants in _variants(groups))


def _free_names(body: list[str], stem: str) -> Callable[[], str]:
    """A source of names (``stem``, ``stem_1``, ...) no line of ``body`` reads or writes."""
    namer = Namer(re.findall(r"\b\w+\b", "\n".join(body)))
    return lambda: namer.claim(stem)


def unique(classes: dict) -> list[dict]:
    """Each class once (texts merged into one class share it)."""
    return list({id(info): info for info in classes.values()}.values())


def _wrapped(block) -> str:
    """The name of the one module a block wraps (beside at most one layer of its own, a norm:
    T5's ``layer.0`` around ``SelfAttention``), else ``""``."""
    children = block.child_blocks()
    if len(children) != 1 or children[0].name.isdigit():
        return ""
    # a child block has no ``result``: only the block's own layers count
    layers = [item for item in block.items if isinstance(getattr(item, "result", None), Cell)]
    if len(layers) > 1:
        return ""
    listed = any(item.name.isdigit() for item in children[0].child_blocks())
    return "" if listed else children[0].name  # a list of layers names no kind of block


def _variants(groups: dict) -> list[Variants]:
    """The classes: each text joins the first class it fits, or starts one. A text that does
    not fit a class as the class's texts came may fit it taken first (its child block sets an
    argument the others leave at the default), so that order is tried too."""
    found: list[Variants] = []
    where: dict = {}  # text key -> index in found

    def class_of(key):
        return found[where[key]] if key in where else None

    lists = {
        key: {_list_of(m.block.path) for m in members} - {""} for key, members in groups.items()
    }
    for key, members in groups.items():
        first = members[0]
        hint = first.block.class_hint or class_hint_from_path(
            first.block.path, _wrapped(first.block)
        )
        text = (key, hint, first.builder, first.args, first.returns)
        for index, variants in enumerate(found):
            same_kind = kind_of(hint) == kind_of(variants.hint)
            siblings = not same_kind and any(lists[key] & lists[t[0]] for t in variants.texts)
            unnamed = not first.block.class_hint and not any(
                groups[t[0]][0].block.class_hint for t in variants.texts
            )
            if not (same_kind or siblings or unnamed):
                continue  # cheap: most classes are of other kinds
            merged = variants.merged(*text, class_of=class_of, siblings=not same_kind)
            if merged is None and same_kind:
                merged = _taken_first(text, variants, class_of)
            if not (same_kind or siblings) and not _literals_only(merged, variants):
                merged = None
            if merged is not None:
                found[index] = merged
                where[key] = index
                break
        else:
            where[key] = len(found)
            found.append(Variants.start(*text))
    return found


def _literals_only(merged: Variants | None, variants: Variants) -> bool:
    """Whether a text merged into ``variants`` differs from them in literals alone (no optional
    part or guarded statement of its own): blocks of a source without class names (a
    TorchScript export) named by their attributes share a class then (HF ResNet's ``shortcut``
    with a stride and the ``layer`` items without)."""
    return (
        merged is not None
        and merged.optional == variants.optional
        and [guard for _, guard in merged.body] == [guard for _, guard in variants.body]
    )


def _list_of(path: str) -> str:
    """The list a block is an item of (``layers`` for ``layers.3``), else ``""``."""
    return path.rsplit(".", 1)[0] if re.search(r"(^|\.)\d+$", path) and "." in path else ""


def _taken_first(
    text: tuple[Any, str, ClassBuilder, list[str], list[str]], variants: Variants, class_of
) -> Variants | None:
    """The class's texts merged into one that starts from ``text``; None when one does not fit."""
    merged: Variants | None = Variants.start(*text)
    for key, hint, builder, args, returns in variants.texts:
        merged = merged.merged(key, hint, builder, args, returns, class_of) if merged else None
    return merged


def signature(info: dict) -> list[str]:
    """The constructor's parameters, those with a default last (``stride=1``)."""
    names = list(dict.fromkeys(info["params"].values())) + [name for name, _ in info["flags"]]
    defaults = info["defaults"]
    return [n for n in names if n not in defaults] + [
        f"{n}={defaults[n]}" for n in names if n in defaults
    ]


def _value(source, builder: ClassBuilder) -> str:
    kind, value = source
    return builder.slots[value][2] if kind == "slot" else value


def _fill_absent(variants: Variants, groups: dict) -> None:
    """A literal of a layer some texts do not hold: for them, the value of a literal that
    agrees with it wherever both exist (so both stay one argument), else the first value."""
    sources = variants.sources
    for index in range(len(variants.labels)):
        present = [k for k in sources if sources[k][index] is not None]
        if len(present) == len(sources):
            continue
        mine = [_value(sources[k][index], m.builder) for k in present for m in groups[k]]
        twin = next(
            (
                other
                for other in range(len(variants.labels))
                if all(sources[k][other] is not None for k in sources)
                and [_value(sources[k][other], m.builder) for k in present for m in groups[k]]
                == mine
            ),
            None,
        )
        for key in sources:
            if sources[key][index] is None:
                sources[key][index] = (
                    sources[key][twin] if twin is not None else ("literal", mine[0])
                )


def _arguments(variants: Variants, members: list, values: dict) -> dict:
    """Constructor arguments: one per distinct vector of values across the instances (slots
    that always agree share one), and a ``has_<layer>`` flag per optional layer."""
    used = used_slots(variants)
    varying = [
        i
        for i in range(len(variants.labels))
        if i in used and len({values[id(m)][i] for m in members}) > 1
    ]
    # a list's depth is an argument of its own, whatever other argument it agrees with
    vectors = {
        i: (*(values[id(m)][i] for m in members), *(["#depth"] if _is_depth(variants, i) else []))
        for i in varying
    }
    distinct = list(dict.fromkeys(vectors.values()))
    # a slot's label names its argument; a plain "size" (a number of construct) yields to a
    # label that says more
    owners = {
        v: min(
            (i for i in varying if vectors[i] == v), key=lambda i: variants.labels[i][0] == "size"
        )
        for v in distinct
    }
    labels = [variants.labels[owners[v]][0] for v in distinct]
    params = Namer(set())
    by_vector = {}
    for vector, label in zip(distinct, labels):
        owner = owners[vector]
        attribute = variants.labels[owner][1]
        hint = label if labels.count(label) == 1 or not attribute else f"{attribute}_{label}"
        by_vector[vector] = params.claim(hint, "value")
    flags = [
        (
            params.claim(flag_name(attribute), "flag"),
            attribute,
        )
        for attribute in sorted(variants.optional)
    ]
    names = {i: by_vector[vectors[i]] for i in varying}
    # an argument some texts left at MindSpore's default takes that default
    defaults = {
        names[i]: source[1]
        for i in varying
        for source in (sources[i] for sources in variants.sources.values())
        if source is not None and source[0] == "default"
    }
    defaults.update({name: "False" for name, _ in flags})
    return {"params": names, "flags": flags, "defaults": defaults, "first": values[id(members[0])]}


def _is_depth(variants: Variants, index: int) -> bool:
    return variants.labels[index][0] == DEPTH


def join(parts: list, builder: ClassBuilder, params: dict, classes: dict) -> str:
    """Source text of an ``__init__`` line: slots become argument names or their literal."""
    text = []
    for part in parts:
        if isinstance(part, SlotRef):
            text.append(params.get(part.index, builder.slots[part.index][2]))
        elif isinstance(part, ClassRef):
            info = classes[part.key]
            sources = info["sources"][part.key]
            routed = {info["params"][i]: j for i, j in part.routed if i in info["params"]}
            seen, pairs = set(), []
            for i, name in info["params"].items():
                if name not in seen:
                    seen.add(name)
                    kind, value = sources[i]
                    if name in routed:  # passed on from an argument of the parent
                        kind, value = "slot", None
                        j = routed[name]
                        value = params.get(j, builder.slots[j][2])
                    elif kind == "slot":
                        j = part.slots[value]
                        value = params.get(j, builder.slots[j][2])
                    if info["defaults"].get(name) != value:
                        pairs.append(f"{name}={value}")
            held = info["variants"].held[part.key]
            flags = dict(part.flags)  # the parent's own flags, passed on
            for name, attribute in info["flags"]:
                if attribute in flags:
                    j = flags[attribute]
                    value = params.get(j, builder.slots[j][2])
                    pairs += [] if value == "False" else [f"{name}={value}"]
                elif attribute in held:
                    pairs.append(f"{name}=True")
            args = ", ".join(pairs)
            text.append(f"{info['name']}({args})")
        else:
            text.append(part)
    while REPEAT_OPEN in text:  # a list's repeated block: [first, *[rest for _ in range(...)]]
        at = text.index(REPEAT_OPEN)
        text[at - 1 : at + 5] = [written_repeat(text[at - 1], text[at + 1], text[at + 3])]
    return "".join(text)
