"""Stage timings and progress bars: on a terminal only, never on a pipe or log file."""

from __future__ import annotations

import io
import time

from mindconverter.progress import SHOWN_STAGE_SECONDS, Progress, peak_memory_mb


def test_enabled_progress_shows_slow_stages_and_bars():
    stream = io.StringIO()
    progress = Progress(enabled=True, stream=stream)
    with progress.stage("quick"):
        pass
    with progress.stage("slow"):
        time.sleep(SHOWN_STAGE_SECONDS * 1.5)
    with progress.bar("write", 100) as advance:
        advance(60)
        advance(40)
    lines = stream.getvalue()
    assert "quick" not in lines
    assert "  slow ... " in lines and "  write ... " in lines


def test_disabled_progress_writes_nothing():
    stream = io.StringIO()
    progress = Progress(enabled=False, stream=stream)
    with progress.stage("slow"):
        time.sleep(SHOWN_STAGE_SECONDS * 1.5)
    with progress.bar("write", 10) as advance:
        advance(10)
    assert stream.getvalue() == ""


def test_a_pipe_is_not_a_terminal(monkeypatch):
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert not Progress.for_terminal().enabled
    assert peak_memory_mb() > 10
