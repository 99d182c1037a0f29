"""MindIR for deployment: the converted network exported with ``mindspore.export``."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ..errors import make_error
from ..text import one_line

# An input's example: its shape, its dtype and the value every element takes.
InputSpec = tuple[tuple, np.dtype, int]


def _example_tensors(specs: list[InputSpec]) -> list:
    import mindspore as ms

    return [ms.Tensor(np.full(shape, fill, dtype)) for shape, dtype, fill in specs]


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return one_line(text.splitlines()[0] if text else type(exc).__name__, 200)


def _export_checked(network, inputs: list, stem: Path, specs) -> None:
    """Export for ``inputs`` and run the loaded MindIR once at the example shapes: MindSpore
    writes some dynamic-shape graphs it cannot run after loading (a BatchNorm's checks)."""
    import mindspore as ms

    ms.export(network, *inputs, file_name=str(stem), file_format="MINDIR")
    ms.nn.GraphCell(ms.load(str(stem.with_suffix(".mindir"))))(*_example_tensors(specs))


def export_mindir(
    build_network: Callable[[], Any], specs: list[InputSpec], stream: BinaryIO
) -> str:
    """Build the network (``build_network()``: the script's ``MindSporeModel`` with its
    checkpoint), export it as MindIR and copy the file into ``stream``. ``specs`` are the
    inputs' example shapes, dtypes and values. Exports with the script's ``dynamic_inputs()`` when it
    has them and the result runs, else with the example shapes; returns how (a phrase for the
    report)."""
    os.environ.setdefault("GLOG_v", "3")  # MindSpore's own warnings would fill stderr
    with tempfile.TemporaryDirectory(prefix="mindconverter-mindir-") as folder:
        stem = Path(folder) / "network"
        try:
            network = build_network()
        except Exception as exc:  # noqa: BLE001 - MindSpore raises anything
            raise make_error(
                "MINDIR_FAILED", f"the network does not build: {_first_line(exc)}"
            ) from None
        declare = getattr(sys.modules.get(type(network).__module__), "dynamic_inputs", None)
        how = "fixed input shapes"
        try:
            if declare is None:
                raise LookupError("no dynamic dimensions")
            _export_checked(network, list(declare()), stem, specs)
            how = "dynamic dimensions kept"
        except LookupError:
            pass
        except Exception as exc:  # noqa: BLE001 - MindSpore's compiler raises anything
            how = (
                f"fixed input shapes: MindSpore cannot run its dynamic export ({_first_line(exc)})"
            )
        if how.startswith("fixed"):
            try:
                _export_checked(network, _example_tensors(specs), stem, specs)
            except Exception as exc:  # noqa: BLE001
                raise make_error(
                    "MINDIR_FAILED", f"mindspore.export failed: {_first_line(exc)}"
                ) from None
        with open(stem.with_suffix(".mindir"), "rb") as exported:
            shutil.copyfileobj(exported, stream)
    return how
