"""What the AST path produces: conversion events and the per-source and per-script results."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Event:
    """One line of the report."""

    node: ast.AST | None
    converted: bool
    torch_name: str
    ms_name: str = ""
    note: str = ""
    suggest: str = ""
    src_line: int = 0
    src_col: int = 0
    line: int = 0
    col: int = 0

    def text(self) -> str:
        where = f"line {self.line}:{self.col}:"
        if self.converted:
            msg = f"{where} [Convert] '{self.torch_name}' is converted to '{self.ms_name}'."
            if self.note:
                msg += f" Note: {self.note}."
            return msg
        msg = f"{where} [UnConvert] '{self.torch_name}' didn't convert."
        if self.note:
            msg += f" {self.note[:1].upper()}{self.note[1:]}."
        if self.suggest:
            msg += f" Suggestion: {self.suggest}"
        return msg


@dataclass
class SourceConversion:
    """The converted script, its report and the counts."""

    code: str
    report: str
    events: list = field(default_factory=list)
    fallback_reason: str = ""

    @property
    def converted(self) -> int:
        return sum(1 for e in self.events if e.converted)

    @property
    def unconverted(self) -> int:
        return sum(1 for e in self.events if not e.converted)

    @property
    def converted_rate(self) -> float:
        total = self.converted + self.unconverted
        return 100.0 if total == 0 else 100.0 * self.converted / total


@dataclass
class ScriptConversionResult:
    """What :func:`convert_script` wrote."""

    script_path: Path
    report_path: Path
    converted: int
    unconverted: int
    converted_rate: float
    events: list = field(default_factory=list, repr=False)


DEPRECATION = (
    "[Deprecated] The --in_file (script/AST) conversion is deprecated and converts only the APIs in "
    "its mapping table. Export the model to ONNX (torch.onnx.export) and convert it with "
    "`mindconverter --model_file model.onnx` for a complete conversion with weights."
)
