"""The module tree of the source model: :class:`Block` s recovered from the hints exporters leave
in node names and metadata, shared by the passes that build the tree and the code generation that
renders it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .node import Node


@dataclass
class Block:
    """A module of the source model: its own nodes and child blocks, in execution order."""

    path: str
    class_hint: str = ""
    items: list[Any] = field(default_factory=list)  # mapped nodes and child blocks
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    sequential: bool = False  # render as nn.SequentialCell of its items
    indices: list[int] = field(default_factory=list)  # for sequential blocks: each item's index
    # a module applied ``repeats`` times in a row with its weights shared (ALBERT's layer): the
    # items are the first application; ``carried`` is (value in, first result, last result)
    repeats: int = 1
    carried: tuple[str, str, str] = ("", "", "")

    @property
    def name(self) -> str:
        """The attribute name in the parent (last path component)."""
        return self.path.rsplit(".", 1)[-1]

    def nodes(self) -> list[Any]:
        """All mapped nodes of the block, its children's included, in order."""
        result: list[Any] = []
        for item in self.items:
            result.extend(item.nodes() if isinstance(item, Block) else [item])
        return result

    def child_blocks(self) -> list[Block]:
        """The block's direct child blocks, in order."""
        return [item for item in self.items if isinstance(item, Block)]


# nn.MultiheadAttention keeps its input projections as parameters of its own, not as layers
# (``self_attn.in_proj_weight``; ``q_proj_weight`` and the rest when query, key and value differ)
_PACKED_PROJECTION = re.compile(r"^(?P<projection>(?:in|q|k|v)_proj)_(?:weight|bias)$")


def packed_projection(source: str) -> str:
    """The projection a packed attention parameter belongs to (``in_proj`` for
    ``self_attn.in_proj_weight``), or ``""``."""
    match = _PACKED_PROJECTION.match(source.rpartition(".")[2])
    return match.group("projection") if match else ""


def parameter_owner(source: str) -> str:
    """The module path of the layer a source parameter belongs to: ``layer1.0.conv1`` for
    ``layer1.0.conv1.weight``, ``self_attn.in_proj`` for ``self_attn.in_proj_weight``."""
    path = source.rpartition(".")[0]
    projection = packed_projection(source)
    return f"{path}.{projection}" if projection and path else path


# Module nesting kept from names: deeper paths are cut here (real models nest a few dozen levels
# at most; a hostile name with thousands of scopes would make as many nested blocks and classes).
MAX_MODULE_DEPTH = 64


def module_path(node: Node) -> str:
    """The source module path of a node when the exporter kept one (``layer1.0.conv1``), else
    ``""``; at most :data:`MAX_MODULE_DEPTH` levels."""
    path = _module_path(node)
    if path.count(".") >= MAX_MODULE_DEPTH:
        path = ".".join(path.split(".")[:MAX_MODULE_DEPTH])
    return path


def _module_path(node: Node) -> str:
    scopes = node.metadata.get("pkg.torch.onnx.name_scopes")
    if scopes:
        parts = [p for p in re.findall(r"'([^']*)'", scopes) if p]
        return parts[-2] if len(parts) >= 2 else ""
    if node.name.startswith("/"):
        path = ""
        for piece in [p for p in node.name.split("/") if p][:-1]:
            head = piece.split(".", 1)[0]
            if not path or piece.startswith(path + "."):
                path = piece  # the scope repeats its parent's path: "layer1" then "layer1.0"
            elif "." in piece and (path == head or path.endswith("." + head)):
                path += piece[len(head) :]  # "downsample" then "downsample.0"
            else:
                path = f"{path}.{piece}"
        return path
    return ""


def module_classes(node: Node) -> dict[str, str]:
    """Source class names by module path, from dynamo metadata (``{'layer1.0': 'BasicBlock'}``)."""
    scopes = node.metadata.get("pkg.torch.onnx.name_scopes")
    classes = node.metadata.get("pkg.torch.onnx.class_hierarchy")
    if not scopes or not classes:
        return {}
    scope_list = re.findall(r"'([^']*)'", scopes)
    class_list = re.findall(r"'([^']*)'", classes)
    return {path: cls.rsplit(".", 1)[-1] for path, cls in zip(scope_list, class_list) if path}
