"""Block instances merged into classes: instances with the same text share one class, and the
literals that differ between them become constructor arguments."""

from __future__ import annotations

import re

from .naming import Namer
from .scope import BlockInstance, ClassBuilder, ClassRef, SlotRef

# Abbreviations in attribute names, spelled out for class names (``self_attn`` -> SelfAttention).
_SPELLED_OUT = {"attn": "attention", "mlp": "MLP", "ffn": "FFN", "ff": "FeedForward"}


def class_hint_from_path(path: str) -> str:
    """A class name hint for a block of a source that kept no class names (a TorchScript
    export): its attribute, abbreviations spelled out, a list's item in the singular
    (``model.layers.0`` -> ``layer``); ``<attribute>_block`` for a one- or two-letter one."""
    item = bool(re.search(r"\.\d+$", path))
    attribute = re.sub(r"\.\d+$", "", path).rsplit(".", 1)[-1]
    words = [_SPELLED_OUT.get(word, word) for word in attribute.split("_") if word]
    if item and words and len(words[-1]) > 3 and words[-1].endswith("s"):
        words[-1] = words[-1][:-1]
    if not words or len(attribute) <= 2:
        return f"{attribute}_block"
    return "_".join(words)


def merge_classes(
    instances: list[BlockInstance], taken: frozenset[str] | set[str] = frozenset()
) -> dict:
    """Group block instances by their text; literals that differ become constructor arguments.
    Class names avoid ``taken`` (classes the script defines otherwise)."""
    groups: dict = {}
    for instance in instances:
        groups.setdefault(instance.key, []).append(instance)
    namer = Namer({"MindSporeModel", *taken})
    classes = {}
    for key, members in groups.items():
        first = members[0]
        varying = [
            i
            for i in range(len(first.builder.slots))
            if len({m.builder.slots[i][2] for m in members}) > 1
        ]
        # slots that carry the same values in every instance share one argument
        vectors = {i: tuple(m.builder.slots[i][2] for m in members) for i in varying}
        distinct = list(dict.fromkeys(vectors.values()))
        labels = [
            next(first.builder.slots[i][0] for i in varying if vectors[i] == v) for v in distinct
        ]
        params = Namer(set())
        by_vector = {}
        for vector, label in zip(distinct, labels):
            owner = next(i for i in varying if vectors[i] == vector)
            attribute = first.builder.slots[owner][1]
            hint = label if labels.count(label) == 1 else f"{attribute}_{label}"
            by_vector[vector] = params.claim(hint, "value")
        names = {i: by_vector[vectors[i]] for i in varying}
        block = first.block
        hint = block.class_hint or class_hint_from_path(block.path)
        classes[key] = {"name": namer.claim_class(hint), "params": names, "members": members}
    for info in classes.values():
        first = info["members"][0]
        info["init"] = [
            join(line, first.builder, info["params"], classes) for line in first.builder.init_lines
        ]
        paths = ", ".join(re.sub(r"[^A-Za-z0-9_.]", "", m.block.path) for m in info["members"][:4])
        more = f" and {len(info['members']) - 4} more" if len(info["members"]) > 4 else ""
        info["doc"] = f"Recovered from {paths}{more}."
    return classes


def join(parts: list, builder: ClassBuilder, params: dict, classes: dict) -> str:
    """Source text of an ``__init__`` line: slots become argument names or their literal."""
    text = []
    for part in parts:
        if isinstance(part, SlotRef):
            text.append(params.get(part.index, builder.slots[part.index][2]))
        elif isinstance(part, ClassRef):
            info = classes[part.key]
            seen, pairs = set(), []
            for i, name in info["params"].items():
                if name not in seen:
                    seen.add(name)
                    pairs.append(
                        f"{name}={params.get(part.slots[i], builder.slots[part.slots[i]][2])}"
                    )
            args = ", ".join(pairs)
            text.append(f"{info['name']}({args})")
        else:
            text.append(part)
    return "".join(text)
