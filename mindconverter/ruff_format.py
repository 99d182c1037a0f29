"""Formatting generated Python with ruff (a dependency), called as its binary."""

from __future__ import annotations

import functools
import shutil
import subprocess
import threading

_FINDING = threading.Lock()  # sysconfig fills its variables lazily and not thread-safely


@functools.cache
def ruff_binary() -> str | None:
    """The ruff executable installed with this package, else the one on ``PATH`` (found once
    per process, under a lock: conversions may run in several threads).

    The installed binary is found even when the environment is not activated, which spares a
    Python interpreter start (``python -m ruff``) on every conversion."""
    with _FINDING:
        try:
            from ruff.__main__ import find_ruff_bin

            return find_ruff_bin()
        except (ImportError, FileNotFoundError, TypeError):
            return shutil.which("ruff")


def ruff_format(code: str, line_length: int, timeout: float = 120) -> str | None:
    """``code`` formatted by ``ruff format`` with its defaults and ``line_length``; ``None`` when
    ruff is missing, fails or returns nothing."""
    binary = ruff_binary()
    if binary is None:
        return None
    try:
        done = subprocess.run(
            [binary, "format", "--isolated", "--line-length", str(line_length), "-"],
            input=code.encode("utf-8"),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    text = done.stdout.decode("utf-8")
    return text if done.returncode == 0 and text.strip() else None
