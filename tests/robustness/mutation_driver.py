"""Runs ``mindconverter.cli.main`` on many command lines in one process, for the mutation fuzz test.

Usage: ``python mutation_driver.py JOBS.json`` where the file holds a list of
``{"id": ..., "argv": [...], "stdout": path, "stderr": path}``. For each job the driver writes
``{"start": id}`` then ``{"end": id, "code": ..., "import_error": ...}`` as JSON lines on its
own standard output, which stays free of anything else: while a job runs, file descriptors 1
and 2 (Python's and native libraries' output alike) go to the job's files. After a successful
conversion the generated script is imported and its network built with the checkpoint.

The parent watches the lines with a timeout per job, so a hang or a crash of this process is
pinned to the job that was running.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path


def _run(argv: list[str]) -> int | str:
    from mindconverter.cli import main

    try:
        return main(argv)
    except SystemExit as exc:  # main() should return, not exit
        return f"SystemExit({exc.code!r}) escaped main()"
    except BaseException:  # noqa: BLE001 - reported to the parent as a failure
        return "exception escaped main():\n" + traceback.format_exc()


def _check_outputs(folder: Path) -> str | None:
    """Import the generated script and build its network with the checkpoint."""
    from mindconverter.check.network import build_network

    try:
        script = next(p for p in folder.iterdir() if p.suffix == ".py")
        checkpoint = next(p for p in folder.iterdir() if p.suffix in (".ckpt", ".safetensors"))
        build_network(script, checkpoint)
    except BaseException:  # noqa: BLE001 - reported to the parent as a failure
        return traceback.format_exc()[-3000:]
    return None


def _redirected(stdout: str, stderr: str, work, *args):
    """``work(*args)`` with fds 1 and 2 (so sys.stdout/sys.stderr too) going to the files."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            return work(*args)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def main() -> None:
    os.environ.setdefault("GLOG_v", "3")
    control = os.fdopen(os.dup(1), "w", buffering=1)
    jobs = json.loads(Path(sys.argv[1]).read_text())
    for job in jobs:
        control.write(json.dumps({"start": job["id"]}) + "\n")
        code = _redirected(job["stdout"], job["stderr"], _run, job["argv"])
        import_error = None
        if code == 0:
            output = Path(job["argv"][job["argv"].index("--output") + 1])
            import_error = _redirected(
                job["stdout"] + ".import", job["stderr"] + ".import", _check_outputs, output
            )
        control.write(
            json.dumps({"end": job["id"], "code": code, "import_error": import_error}) + "\n"
        )
    control.close()


if __name__ == "__main__":
    main()
