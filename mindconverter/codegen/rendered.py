"""What code generation hands on: the script text, the checkpoint entries, unconverted sites."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class CheckpointEntry:
    """One parameter of the checkpoint and where its value came from."""

    name: str
    array: np.ndarray
    source: str
    transform: str = ""
    source_shape: tuple[int, ...] | None = None
    source_dtype: str = ""
    exported_as: str = ""  # the exporter's name for the source weight, when it renamed it
    steps: tuple = ()  # the transform as typed steps (mindconverter.graph.weight_steps)


@dataclass
class UnconvertedSite:
    """An operator left as a placeholder, and where it sits in the script."""

    node_name: str
    op_type: str
    domain: str
    reason: str
    attribute: str
    line: int = 0
    column: int = 0


@dataclass
class RenderedModel:
    """The generated script and everything the checkpoint, report and weight map need."""

    code: str
    entries: list[CheckpointEntry]
    unconverted: list[UnconvertedSite]
    input_names: list[str]
    output_names: list[str]
