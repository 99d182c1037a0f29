"""The state of one rendering: shared parts (imports, checkpoint entries, rendered block
instances) and the scope of the block being written (its class text, names and variables)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..graph import Graph
from ..graph.module_tree import Block
from ..mappers.base import MappedNode, Temp
from .naming import CELL_MEMBERS, Namer
from .rendered import CheckpointEntry, UnconvertedSite
from .ties import ContentKeys


@dataclass(frozen=True)
class SlotRef:
    """A literal in an ``__init__`` line that may become a constructor argument of the class."""

    index: int


@dataclass(frozen=True)
class ClassRef:
    """Instantiation of a recovered block class; ``slots`` are the parent's slots for its values."""

    key: Any
    slots: tuple[int, ...]
    # (argument slot of the child's class, parent slot) for arguments the parent passes on
    # though this child's own text holds them as literals (another child of its class set them)
    routed: tuple[tuple[int, int], ...] = ()
    # (optional part of the child's class, parent slot) for the flags the parent passes on
    # (HF's ResNet stages: the first stage's first layer has no shortcut, the others do)
    flags: tuple[tuple[str, int], ...] = ()


@dataclass
class ClassBuilder:
    """The text of one class being written: ``__init__`` lines, ``construct`` body, names."""

    init_lines: list[list] = field(default_factory=list)  # parts: str | SlotRef | ClassRef
    body: list[str] = field(default_factory=list)
    attributes: Namer = field(default_factory=lambda: Namer(CELL_MEMBERS, reserve=False))
    variables: Namer = field(default_factory=Namer)
    slots: list[tuple[str, str, str]] = field(
        default_factory=list
    )  # (label, attribute, literal text)

    def slot(self, label: str, attribute: str, text: str) -> SlotRef:
        self.slots.append((label, attribute, text))
        return SlotRef(len(self.slots) - 1)


@dataclass
class BlockInstance:
    """One rendered block instance, before instances are merged into classes."""

    block: Block
    builder: ClassBuilder
    args: list[str]
    returns: list[str]

    @property
    def key(self):
        lines = tuple(tuple(line) for line in self.builder.init_lines)
        return (
            self.block.class_hint,
            lines,
            tuple(self.builder.body),
            tuple(self.args),
            tuple(self.returns),
        )


@dataclass
class BlockScope:
    """Names and variables of the block being written (the whole model for the root)."""

    cls: ClassBuilder = field(default_factory=ClassBuilder)
    var_of: dict[str, str] = field(default_factory=dict)  # graph value -> variable
    remaining_uses: dict[str, int] = field(default_factory=dict)  # reads still to come
    remaining_uses_all: set[str] = field(default_factory=set)  # values read at all (or returned)
    reads: dict[str, int] = field(default_factory=dict)  # how many times the block reads a value
    layer_reads: dict[str, int] = field(default_factory=dict)  # ...as the input of its own layers
    notes: list[str] = field(default_factory=list)  # comments for the next statement written
    temps: dict[int, tuple[Temp, str]] = field(default_factory=dict)
    prefix: str = ""  # attribute path of the block, with a trailing dot
    prefix_path: str = ""  # source module path of the block
    protected: set[str] = field(default_factory=set)  # block outputs: never overwritten
    no_reuse: set[str] = field(default_factory=set)  # network inputs: never overwritten
    sizes: set[str] = field(
        default_factory=set
    )  # values holding sizes: tensors don't take their names
    is_root: bool = False  # the network's own class (its results keep the source's names)
    # trainable tensors already held by an attribute of this block, by content (tied weights)
    held_weights: dict[tuple, tuple[str, str]] = field(default_factory=dict)
    # frozen constants already held by an attribute of this block, by graph value
    held_constants: dict[str, str] = field(default_factory=dict)
    params: list[str] = field(default_factory=list)  # the values ``construct`` takes, in order
    live_reads: dict[str, int] = field(default_factory=dict)  # reads by nodes that are written
    size_names: dict[str, str] = field(default_factory=dict)  # dimension symbol -> variable
    size_lines: int = 0  # lines unpacking inputs' sizes at the top of ``construct``
    size_texts: dict[str, str] = field(default_factory=dict)  # sizes tuple text -> first value
    # sizes tuples -> their items' text (``shape[0]`` -> ``batch``; "" where not a name)
    size_parts: dict[str, list[str]] = field(default_factory=dict)
    lists: set[str] = field(default_factory=set)  # source names of the block's layer lists
    # layers of this block by what they are (class, arguments, weights): a layer the source
    # applies twice is called twice, not copied (DeBERTa's projections of the position table)
    cells_by_content: list[tuple[tuple, str]] = field(default_factory=list)
    # values the block computes for its children, named by the role a child gives them
    passed_roles: dict[str, str] = field(default_factory=dict)
    # tuples a layer loop gathers every layer's result into, by the items they stand for (the
    # last one is the loop's variable): a block returning all of them returns the tuple
    gathered: dict[tuple[str, ...], str] = field(default_factory=dict)

    def consume_reads(self, block_or_node: Block | MappedNode) -> None:
        """Count the reads of a statement, or of every node of a block, as done."""
        nodes = block_or_node.nodes() if isinstance(block_or_node, Block) else [block_or_node]
        for mapped in nodes:
            for name in mapped.node.inputs:
                if name in self.remaining_uses:
                    self.remaining_uses[name] -= 1

    def holds_dead(self, name: str) -> bool:
        """Whether variable ``name`` exists, is no parameter (a loop variable must not redefine
        one: ruff's PLR1704) and what it holds is read no more (so a loop may take the name for
        each layer's item, ``past_value``, instead of ``past_value_2``)."""
        holders = [value for value, var in self.var_of.items() if var == name]
        return bool(holders) and all(
            self.remaining_uses.get(value, 0) == 0
            and value not in self.protected
            and value not in self.no_reuse
            and value not in self.params
            for value in holders
        )


@dataclass
class RenderState:
    """Everything one rendering shares across blocks."""

    graph: Graph
    mapped: list[MappedNode]
    uses: set[str] = field(default_factory=set)  # names the script imports
    entries: list[CheckpointEntry] = field(default_factory=list)
    unconverted: list[UnconvertedSite] = field(default_factory=list)
    instances: list[BlockInstance] = field(default_factory=list)
    scope: BlockScope = field(default_factory=BlockScope)
    # layer results written inside the one expression that reads them (codegen/chains.py)
    inlined: set[str] = field(default_factory=set)
    # trainable tensors held anywhere, by content -> (origin, checkpoint path), and ties between
    # blocks the network's own __init__ makes: (path given the Parameter, path holding it)
    held_paths: dict[tuple, tuple[str, str]] = field(default_factory=dict)
    ties: list[tuple[str, str]] = field(default_factory=list)
    content_keys: ContentKeys = field(default_factory=ContentKeys)  # tensors' identity by value
    # classes defined from converted control-flow bodies: final name -> class text
    body_classes: dict[str, str] = field(default_factory=dict)
    # module path -> how many mapped nodes the exporter filed under it
    scopes: Counter = field(default_factory=Counter)
