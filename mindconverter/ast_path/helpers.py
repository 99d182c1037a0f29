"""The helper functions a converted script may need (from helpers_src.py), and torch API names."""

from __future__ import annotations

import ast
import copy
from functools import cache
from pathlib import Path

HELPERS_FILE = Path(__file__).with_name("helpers_src.py")


def torch_display(key: str) -> str:
    """The familiar spelling of a PyTorch API in reports ('nn.Linear', 'F.relu', 'torch.cat')."""
    if key.startswith("torch.nn.functional."):
        return "F." + key[len("torch.nn.functional.") :]
    if key.startswith("torch.nn.") and not key.startswith("torch.nn.init."):
        return key[len("torch.") :]
    if key.startswith("torch.nn.init."):
        return "nn.init." + key[len("torch.nn.init.") :]
    return key


def normalize_key(key: str) -> str:
    """Canonical spelling of a torch path (torch.nn.modules.conv.Conv2d -> torch.nn.Conv2d)."""
    parts = key.split(".")
    if parts[:3] == ["torch", "nn", "modules"]:
        rest = parts[3:]
        if len(rest) >= 2:
            rest = rest[1:]
        return ".".join(["torch", "nn"] + rest)
    if parts[:2] == ["torch", "functional"]:
        return ".".join(["torch"] + parts[2:])
    return key


@cache
def helper_definitions() -> dict:
    """name -> (order, node) for every top-level definition of helpers_src.py."""
    tree = ast.parse(HELPERS_FILE.read_text(encoding="utf-8"))
    defs = {}
    for order, node in enumerate(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defs[node.name] = (order, node)
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            defs[node.targets[0].id] = (order, node)
    return defs


def helper_closure(names: set) -> list:
    """The helper definitions for `names` plus everything they use, in file order."""
    defs = helper_definitions()
    wanted = set()
    todo = [n for n in names if n in defs]
    while todo:
        name = todo.pop()
        if name in wanted:
            continue
        wanted.add(name)
        for sub in ast.walk(defs[name][1]):
            if (
                isinstance(sub, ast.Name)
                and sub.id in defs
                and sub.id not in wanted
                and sub.id != name
            ):
                todo.append(sub.id)
    return [copy.deepcopy(defs[n][1]) for n in sorted(wanted, key=lambda n: defs[n][0])]
