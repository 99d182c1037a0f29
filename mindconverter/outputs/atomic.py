"""Writing results atomically: all files appear together or none does.

Each file is first written to a hidden temporary file in its destination folder, then all are
renamed into place once every one was written. Existing results are never replaced unless the
caller passes ``overwrite=True``.
"""

from __future__ import annotations

import os
import signal
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from ..errors import make_error


def prepare_folder(folder: Path) -> Path:
    """Check ``folder`` is, or can be created as, a writable directory (see :func:`_check_folder`)."""
    if not isinstance(folder, (str, Path)) or "\x00" in str(folder):
        what = "holds a NUL byte" if isinstance(folder, (str, Path)) else "is not a path"
        raise make_error("BAD_ARGUMENT", f"The folder name {str(folder)[:80]!r} {what}.")
    try:
        return _check_folder(folder)
    except OSError as exc:  # EACCES while looking at a parent, ENAMETOOLONG, ELOOP...
        raise make_error(
            "OUTPUT_NOT_WRITABLE", f"Cannot use folder '{folder}': {exc.strerror}."
        ) from None


def _check_folder(folder: Path) -> Path:
    """Check ``folder`` is, or can be created as, a writable directory.

    Nothing is created here: folders appear only when results are published, so a conversion
    that fails leaves no empty folder behind.
    """
    folder = Path(folder)
    if str(folder).strip() == "":
        raise make_error("OUTPUT_NOT_WRITABLE", "An empty folder name was given.")
    if folder.exists() and not folder.is_dir():
        raise make_error("OUTPUT_IS_FILE", f"'{folder}' is a file, not a folder.")
    existing = folder
    while not existing.exists():
        if existing.is_symlink():
            raise make_error("OUTPUT_NOT_WRITABLE", f"'{existing}' is a broken symbolic link.")
        parent = existing.parent
        if parent == existing:
            break
        existing = parent
    if not existing.is_dir():
        raise make_error(
            "OUTPUT_IS_FILE", f"'{existing}' is a file, so folder '{folder}' cannot be created."
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        what = (
            "is not writable"
            if existing == folder
            else f"cannot be created: '{existing}' is not writable"
        )
        raise make_error("OUTPUT_NOT_WRITABLE", f"Folder '{folder}' {what}.")
    return folder


def _make_folders(folder: Path) -> list[Path]:
    """Create ``folder`` and missing parents; returns the folders created, deepest last."""
    missing = []
    current = Path(folder)
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    created = []
    for path in reversed(missing):
        try:
            path.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            _remove_folders(created)
            raise make_error(
                "OUTPUT_NOT_WRITABLE", f"Cannot create folder '{path}': {exc.strerror}."
            ) from None
        created.append(path)
    return created


def _remove_folders(folders: list[Path]) -> None:
    for path in reversed(folders):
        try:
            path.rmdir()  # only succeeds when empty: never removes anything of the user's
        except OSError:
            pass


def confined_path(folder: Path, file_name: str) -> Path:
    """``folder / file_name``, refused unless it is a plain name that stays in ``folder``: no
    separators, no ``..``, no absolute path, and no symbolic link at that place (a link could
    point a write or an import anywhere)."""
    path = Path(folder) / file_name
    plain = file_name not in ("", ".", "..") and Path(file_name).name == file_name
    if not plain or "\x00" in file_name or "\\" in file_name:
        raise make_error("OUTPUT_NOT_WRITABLE", f"{file_name!r} is not a plain file name.")
    if path.is_symlink() or path.resolve().parent != Path(folder).resolve():
        raise make_error(
            "OUTPUT_NOT_WRITABLE",
            f"'{path}' is a symbolic link or leads out of '{folder}': results are only "
            "written, and scripts only read, inside the output folder.",
        )
    return path


def refuse_aliases(targets: list[Path], inputs: list[Path]) -> None:
    """OUTPUT_IS_INPUT when a result would land on an input file: the same path once resolved
    (symbolic links followed), or another name of the same file (a hard link)."""
    for target in targets:
        for source in inputs:
            if _same_file(Path(target), Path(source)):
                raise make_error(
                    "OUTPUT_IS_INPUT",
                    f"'{target}' would replace the input '{Path(source).name}', which is "
                    "being read.",
                )


def _same_file(first: Path, second: Path) -> bool:
    try:
        if first.resolve() == second.resolve():
            return True
        return first.exists() and second.exists() and os.path.samefile(first, second)
    except (OSError, RuntimeError, ValueError):  # a link loop, a NUL byte: not one file
        return False


def check_targets(paths: list[Path], overwrite: bool) -> None:
    """Fail early when a result file exists and overwriting was not asked for."""
    try:
        _check_targets(paths, overwrite)
    except OSError as exc:
        raise make_error(
            "OUTPUT_NOT_WRITABLE", f"Cannot check the result files: {exc.strerror}."
        ) from None


def _check_targets(paths: list[Path], overwrite: bool) -> None:
    for path in paths:
        if path.is_dir():
            raise make_error("OUTPUT_IS_FILE", f"'{path}' is a folder where a result file must go.")
        if path.exists() and not overwrite:
            raise make_error("OUTPUT_EXISTS", f"'{path}' already exists.")
        if path.parent.exists() and not path.parent.is_dir():
            raise make_error("OUTPUT_IS_FILE", f"'{path.parent}' is a file, not a folder.")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _place_new(tmp: Path, final: Path) -> None:
    """Move ``tmp`` to ``final`` without ever replacing a file that appeared there meanwhile."""
    try:
        os.link(tmp, final)  # atomic and fails with FileExistsError if ``final`` exists
    except FileExistsError:
        raise
    except OSError:  # file systems without hard links
        if final.exists():
            raise FileExistsError(17, "File exists") from None
        os.replace(tmp, final)
    else:
        tmp.unlink()


def _set_aside(final: Path) -> Path:
    """Rename an existing result to a fresh hidden name beside it; returns that name."""
    handle, name = tempfile.mkstemp(prefix=f".{final.name[:40]}.", suffix=".old", dir=final.parent)
    os.close(handle)
    try:
        os.replace(final, name)
    except BaseException:
        Path(name).unlink(missing_ok=True)  # the placeholder only: ``final`` did not move
        raise
    return Path(name)


def _put_back(set_aside: list[tuple[Path, Path]]) -> None:
    """Return every set-aside result to its name (each tried, whatever the others do)."""
    for old, final in set_aside:
        try:
            os.replace(old, final)
        except OSError:
            pass  # the previous result stays under its hidden name rather than being lost


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived while results were staged: unwinds like Ctrl-C, so the staged
    files are removed and the previous results stay."""

    def __init__(self, number: int):
        super().__init__(number)
        self.number = number


def _raise_stopped(number: int, frame) -> None:
    raise Stopped(number)


_STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)


def _catch_stop_signals() -> dict:
    """Make SIGTERM/SIGHUP raise :class:`Stopped`; returns the handlers to restore. Outside the
    main thread (an embedding program) signals cannot be caught and nothing changes. Before any
    file is staged the default action (ending the process at once) leaves nothing behind."""
    previous = {}
    for number in _STOP_SIGNALS:
        try:
            previous[number] = signal.signal(number, _raise_stopped)
        except ValueError:
            break
    return previous


class AtomicOutputs:
    """Collects result files as temporaries, then publishes them all at once.

    Use as a context manager: on an exception every temporary is removed and nothing is published.
    """

    def __init__(self, overwrite: bool = False):
        self.overwrite = overwrite
        self._previous_handlers: dict = {}
        self._pending: list[tuple[Path, Path]] = []
        self._created: list[Path] = []

    def __enter__(self) -> AtomicOutputs:
        self._previous_handlers = _catch_stop_signals()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is not None:
                self.discard()
        finally:
            for number, handler in self._previous_handlers.items():
                signal.signal(number, handler)

    @contextmanager
    def open(self, target: Path) -> Iterator[BinaryIO]:
        """Open a temporary file that will become ``target`` when :meth:`publish` runs."""
        target = Path(target)
        prepare_folder(target.parent)
        self._created += _make_folders(target.parent)
        try:
            handle, tmp_name = tempfile.mkstemp(
                prefix=f".{target.stem[:40]}.", suffix=f".tmp{target.suffix}", dir=target.parent
            )
        except OSError as exc:
            raise make_error(
                "OUTPUT_NOT_WRITABLE", f"Cannot write in '{target.parent}': {exc.strerror}."
            ) from None
        tmp_path = Path(tmp_name)
        self._pending.append((tmp_path, target))
        try:
            with os.fdopen(handle, "wb") as stream:
                yield stream
        except OSError as exc:
            raise make_error(
                "OUTPUT_NOT_WRITABLE", f"Writing '{target}' failed: {exc.strerror}."
            ) from None

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
        """Move every staged file into place; returns the final paths.

        All or nothing: with ``overwrite``, the previous results are first set aside under
        hidden names and put back if any file cannot be placed (or the process is interrupted
        meanwhile), so a failure never leaves a mix of old and new files.
        """
        check_targets([final for _, final in self._pending], self.overwrite)
        published: list[Path] = []
        set_aside: list[tuple[Path, Path]] = []
        mode = 0o666 & ~_umask()  # mkstemp makes 0600 files; results get the usual permissions
        try:
            for tmp, final in self._pending:
                os.chmod(tmp, mode)
                if self.overwrite and os.path.lexists(final):
                    set_aside.append((_set_aside(final), final))
                _place_new(tmp, final)
                published.append(final)
        except BaseException as exc:
            failed = final
            for path in published:  # take back what this call put in place
                path.unlink(missing_ok=True)
            _put_back(set_aside)
            if not isinstance(exc, OSError):
                raise
            error = "OUTPUT_EXISTS" if isinstance(exc, FileExistsError) else "OUTPUT_NOT_WRITABLE"
            raise make_error(error, f"Cannot put '{failed}' in place: {exc.strerror}.") from None
        for old, _ in set_aside:
            old.unlink(missing_ok=True)
        self._pending.clear()
        self._created.clear()
        return published

    def discard(self) -> None:
        """Remove every staged temporary file."""
        for tmp, _ in self._pending:
            try:
                tmp.unlink()
            except FileNotFoundError:
                pass
        self._pending.clear()
        _remove_folders(self._created)
        self._created.clear()
