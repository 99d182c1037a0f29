"""How a long conversion tells the user where it is: stage lines with timings and progress bars
on stderr, only when stderr is a terminal (a pipe or log file gets nothing)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import TextIO

# Stages quicker than this are not worth a line.
SHOWN_STAGE_SECONDS = 0.05


class Progress:
    """Stage timings and progress bars for one conversion; silent unless ``enabled``."""

    def __init__(self, enabled: bool = False, stream: TextIO | None = None):
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr

    @classmethod
    def for_terminal(cls, quiet: bool = False) -> Progress:
        """Enabled when stderr is a terminal and the user did not ask for quiet."""
        stream = sys.stderr
        return cls(enabled=not quiet and _is_terminal(stream), stream=stream)

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time a stage and print ``name ... 1.23s`` when it ends (unless it took no time)."""
        started = time.perf_counter()
        yield
        seconds = time.perf_counter() - started
        if self.enabled and seconds >= SHOWN_STAGE_SECONDS:
            print(f"  {name} ... {seconds:.2f}s", file=self.stream)

    @contextlib.contextmanager
    def bar(self, name: str, total: int, unit: str = "B") -> Iterator[Callable[[int], None]]:
        """A progress bar over ``total`` units; yields the function that advances it."""
        if not self.enabled:
            yield lambda amount: None
            return
        from tqdm import tqdm

        started = time.perf_counter()
        with tqdm(
            total=total,
            desc=f"  {name}",
            unit=unit,
            unit_scale=unit == "B",
            unit_divisor=1024 if unit == "B" else 1000,
            file=self.stream,
            leave=False,
            dynamic_ncols=True,
        ) as shown:
            yield shown.update
        print(f"  {name} ... {time.perf_counter() - started:.2f}s", file=self.stream)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def peak_memory_mb() -> float:
    """The process's peak resident memory so far, in MB (0 where the platform does not say)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return 0.0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform != "darwin" else peak / (1024 * 1024)
