"""Warnings raised while converting belong to the conversion that raised them, in threads too."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path

import pytest

from mindconverter.conversion.notes import warnings_as_notes

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _warn_repeatedly(label: str, notes: list[str], start: threading.Barrier) -> None:
    with warnings_as_notes(notes):
        start.wait()
        for index in range(50):
            warnings.warn(f"{label} {index}", UserWarning, stacklevel=1)


def test_two_threads_keep_their_own_warnings():
    start = threading.Barrier(2)
    first, second = [], []
    warnings.simplefilter("always")  # pytest's own filters would hide these
    threads = [
        threading.Thread(target=_warn_repeatedly, args=("first", first, start)),
        threading.Thread(target=_warn_repeatedly, args=("second", second, start)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    warnings.resetwarnings()
    assert first and all("first" in note for note in first)
    assert second and all("second" in note for note in second)


def test_warnings_outside_a_conversion_are_left_alone():
    notes = []
    with warnings_as_notes(notes):
        pass
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("the host program's own", UserWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["the host program's own"] and notes == []


@pytest.mark.slow
def test_verifying_conversions_in_threads_never_kill_the_host(tmp_path):
    """MindSpore aborts when two threads run networks at once: verification is serialised, so
    a host program converting in threads survives and gets a verified result from each."""
    program = textwrap.dedent(
        f"""
        import threading
        from mindconverter import convert

        results, errors = {{}}, []

        def run(name, fixture, shape):
            try:
                results[name] = convert({str(FIXTURES)!r} + "/" + fixture, shape=shape,
                    output={str(tmp_path)!r} + "/" + name, verify=True)
            except Exception as exc:
                errors.append(repr(exc))

        threads = [
            threading.Thread(target=run, args=(f"{{kind}}{{i}}", f"tiny_{{kind}}_torchscript.onnx",
                shape)) for i in range(2) for kind, shape in (("lstm", "2,7"), ("gpt", "2,8"))
        ]
        for t in threads: t.start()
        for t in threads: t.join()
        assert not errors, errors
        assert all(r.verification["ok"] for r in results.values()), results
        print("verified", len(results))
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "verified 4" in run.stdout
