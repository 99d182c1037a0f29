"""Keep native libraries' log lines (absl, oneDNN, glog) off the user's terminal.

TensorFlow's C++ runtime writes to file descriptor 2 directly, before and regardless of Python's
logging settings, so silencing it means pointing that descriptor elsewhere for a while.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator


@contextlib.contextmanager
def captured_native_stderr() -> Iterator[None]:
    """Send what native code writes to stderr into a discarded temporary file while inside.

    Python-level output is flushed first, so nothing of ours is lost or reordered; errors are
    raised as exceptions and printed by the caller after the descriptor is restored.
    """
    try:
        saved = os.dup(2)
    except OSError:  # no stderr at all: nothing to keep clean
        yield
        return
    sys.stderr.flush()
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
