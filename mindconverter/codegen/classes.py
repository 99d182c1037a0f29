"""Block instances merged into classes: instances with the same text share one class, and the
literals that differ between them become constructor arguments."""

from __future__ import annotations

import re

from .naming import Namer
from .scope import BlockInstance, ClassBuilder, ClassRef, SlotRef


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
        hint = block.class_hint or (re.sub(r"\.\d+$", "", block.path).rsplit(".", 1)[-1] + "_block")
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
