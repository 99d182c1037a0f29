"""What every pass receives besides the graph: the user's choices, and what passes found."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import onnx

from ..graph.module_tree import Block
from ..graph.specs import TensorSpec
from ..mappers.base import MappedNode
from ..mappers.registry import MapperRegistry
from ..progress import Progress


@dataclass
class PassContext:
    """The conversion's settings (read by passes) and findings (written by passes).

    Settings come from the CLI or the Python API; each finding is written by one pass, named
    beside it, and read by later passes, code generation and the report.
    """

    registry: MapperRegistry
    input_nodes: list[str] = field(default_factory=list)
    output_nodes: list[str] = field(default_factory=list)
    shapes: list[tuple[int, ...]] | None = None  # --shape, one per input
    keep_reference: bool = False  # keep the model as given, for verification against it
    dynamic: bool = True  # keep the dimensions the model declares dynamic symbolic
    float32: bool = False  # compute a float16/bfloat16 model in float32
    keep_quantized: bool = False  # quantized weights stay integers (mappers read it)
    debug: bool = False
    log: Callable[[str], None] | None = None
    progress: Progress = field(default_factory=Progress)  # stage timings on a terminal
    # converts an If/Loop/Scan body into a cell class (bodies.py); None: bodies stay unconverted
    convert_body: Callable | None = None

    input_specs: list[TensorSpec] = field(default_factory=list)  # select_io
    output_specs: list[TensorSpec] = field(default_factory=list)  # select_io
    reference: onnx.ModelProto | None = None  # keep_reference
    resolved_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # fix_shapes
    # fix_shapes: input shapes with the declared dynamic dimensions as names
    declared_shapes: dict[str, tuple[int | str, ...]] = field(default_factory=dict)
    lifted: dict[str, int] = field(default_factory=dict)  # lift_patterns
    mapped: list[MappedNode] = field(default_factory=list)  # map_operators
    tree: Block | None = None  # recover_hierarchy
    notes: list[str] = field(default_factory=list)  # report_pinned_dims (for the report)

    def say(self, message: str) -> None:
        """Tell the user about progress (the CLI prints it; the API is silent by default)."""
        if self.log is not None:
            self.log(message)
