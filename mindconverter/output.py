"""Writing results atomically: all files appear together or none does.

Each file is first written to a hidden temporary file in its destination folder, then all are
renamed into place once every one was written. Existing results are never replaced unless the
caller passes ``overwrite=True``.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

from .errors import make_error


def prepare_folder(folder: Path) -> Path:
    """Create ``folder`` if needed and check it is a writable directory."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise make_error("OUTPUT_IS_FILE", f"'{folder}' is a file, not a folder.")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise make_error("OUTPUT_NOT_WRITABLE", f"Cannot create folder '{folder}': {exc.strerror}.") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise make_error("OUTPUT_NOT_WRITABLE", f"Folder '{folder}' is not writable.")
    return folder


def check_targets(paths: list[Path], overwrite: bool) -> None:
    """Fail early when a result file exists and overwriting was not asked for."""
    for path in paths:
        if path.is_dir():
            raise make_error("OUTPUT_IS_FILE", f"'{path}' is a folder where a result file must go.")
        if path.exists() and not overwrite:
            raise make_error("OUTPUT_EXISTS", f"'{path}' already exists.")
        if path.parent.exists() and not path.parent.is_dir():
            raise make_error("OUTPUT_IS_FILE", f"'{path.parent}' is a file, not a folder.")


class AtomicOutputs:
    """Collects result files as temporaries, then publishes them all at once.

    Use as a context manager: on an exception every temporary is removed and nothing is published.
    """

    def __init__(self, overwrite: bool = False):
        self.overwrite = overwrite
        self._pending: list[tuple[Path, Path]] = []

    def __enter__(self) -> "AtomicOutputs":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.discard()

    @contextmanager
    def open(self, target: Path) -> Iterator[BinaryIO]:
        """Open a temporary file that will become ``target`` when :meth:`publish` runs."""
        target = Path(target)
        prepare_folder(target.parent)
        try:
            handle, tmp_name = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=f".tmp{target.suffix}", dir=target.parent)
        except OSError as exc:
            raise make_error("OUTPUT_NOT_WRITABLE", f"Cannot write in '{target.parent}': {exc.strerror}.") from None
        tmp_path = Path(tmp_name)
        self._pending.append((tmp_path, target))
        try:
            with os.fdopen(handle, "wb") as stream:
                yield stream
        except OSError as exc:
            raise make_error("OUTPUT_NOT_WRITABLE", f"Writing '{target}' failed: {exc.strerror}.") from None

    def write_text(self, target: Path, text: str) -> None:
        """Stage a text file."""
        with self.open(target) as stream:
            stream.write(text.encode("utf-8"))

    def write_with(self, target: Path, writer: Callable[[BinaryIO], None]) -> None:
        """Stage a file produced by ``writer(stream)``."""
        with self.open(target) as stream:
            writer(stream)

    def staged_path(self, target: Path) -> Path:
        """The temporary path currently holding ``target``'s content."""
        for tmp, final in self._pending:
            if final == Path(target):
                return tmp
        raise KeyError(target)

    def publish(self) -> list[Path]:
        """Move every staged file into place; returns the final paths."""
        check_targets([final for _, final in self._pending], self.overwrite)
        published = []
        for tmp, final in self._pending:
            os.replace(tmp, final)
            published.append(final)
        self._pending.clear()
        return published

    def discard(self) -> None:
        """Remove every staged temporary file."""
        for tmp, _ in self._pending:
            try:
                tmp.unlink()
            except FileNotFoundError:
                pass
        self._pending.clear()
