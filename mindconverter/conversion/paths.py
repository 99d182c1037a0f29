"""Where one conversion's results go."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..codegen.naming import module_name
from ..outputs.scaffold import scaffold_paths


@dataclass
class OutputPaths:
    """Where the four results of one conversion go (and the optional ones)."""

    script: Path
    checkpoint: Path
    report: Path
    weight_map: Path
    mindir: Path | None = None  # with --mindir
    train_script: Path | None = None  # with --scaffold
    eval_script: Path | None = None  # with --scaffold

    def all(self) -> list[Path]:
        extras = [self.mindir, self.train_script, self.eval_script]
        extras = [path for path in extras if path is not None]
        return [self.script, self.checkpoint, self.report, self.weight_map, *extras]


def output_paths(
    model_file: Path,
    output: Path,
    report: Path | None,
    *,
    mindir: bool = False,
    scaffold: bool = False,
) -> OutputPaths:
    """The result file names for ``model_file`` (``<stem>.py``, ``<stem>.ckpt``, ...): the
    stem is the file's name made into a module name, so it never leaves the folders given."""
    has_suffix = model_file.suffix and not model_file.is_dir()  # a SavedModel folder: whole name
    stem = module_name(
        model_file.name[: -len(model_file.suffix)] if has_suffix else model_file.name
    )
    report_dir = report if report is not None else output
    paths = OutputPaths(
        script=output / f"{stem}.py",
        checkpoint=output / f"{stem}.ckpt",
        report=report_dir / f"report_of_{stem}.txt",
        weight_map=report_dir / f"weight_map_of_{stem}.json",
    )
    if mindir:
        paths.mindir = paths.script.with_suffix(".mindir")
    if scaffold:
        paths.train_script, paths.eval_script = scaffold_paths(paths.script)
    return paths
