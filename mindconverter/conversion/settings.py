"""What the user asked for, checked once and handed from stage to stage."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..check.verify import DEFAULT_TOLERANCE
from ..mappers.registry import MapperRegistry
from ..progress import Progress

ShapeRequest = tuple[str | None, tuple[int, ...]]  # (input name or None, example sizes)


@dataclass(frozen=True)
class ConversionSettings:
    """The choices that shape the converted network (one conversion's, never shared)."""

    registry: MapperRegistry
    shapes: list[ShapeRequest] | None = None  # --shape
    input_nodes: tuple[str, ...] = ()
    output_nodes: tuple[str, ...] = ()
    dynamic: bool = True  # keep the dimensions the model declares dynamic
    keep_reference: bool = False  # keep the model as given, to verify against it
    float32: bool = False  # compute a float16/bfloat16 model in float32
    keep_quantized: bool = False  # integer weights stay integers, dequantized at run time
    debug: bool = False
    progress: Progress = field(default_factory=Progress)
    log: Callable[[str], None] | None = None

    def quiet(self) -> ConversionSettings:
        """The same settings with no progress shown and nothing said (for extra runs)."""
        return replace(self, progress=Progress(), log=None)

    def say(self, message: str) -> None:
        if self.log is not None:
            self.log(message)


@dataclass(frozen=True)
class WriteOptions:
    """How the results are written and checked."""

    overwrite: bool = False
    verify: bool = False
    tolerance: float = DEFAULT_TOLERANCE
    graph_mode: bool = False
    mindir: bool = False
    scaffold: bool = False
    verify_layers: bool = False  # the per-layer error table in the report, even on a match
    train_output: str | None = None  # the output --scaffold trains (default: the first)
    train_loss: str | None = None  # its loss (default: the one that fits the output)
