"""MindIR for deployment: the converted network exported with ``mindspore.export``."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..errors import make_error


def example_inputs(network, specs: list[tuple[tuple, np.dtype]]) -> list:
    """What the network is exported for: the inputs its script declares with their dynamic
    dimensions (``dynamic_inputs()``), else tensors of the conversion's static shapes."""
    import mindspore as ms

    declare = getattr(sys.modules.get(type(network).__module__), "dynamic_inputs", None)
    if declare is not None:
        return list(declare())
    return [ms.Tensor(np.zeros(shape, dtype)) for shape, dtype in specs]


def export_mindir(
    script: Path, checkpoint: Path, specs: list[tuple[tuple, np.dtype]], stream: BinaryIO
) -> None:
    """Build the network from ``script`` and ``checkpoint``, export it as MindIR and copy the
    file into ``stream``. ``specs`` are the inputs' example shapes and dtypes."""
    os.environ.setdefault("GLOG_v", "3")  # MindSpore's own warnings would fill stderr
    import mindspore as ms

    from ..verify import build_network

    with tempfile.TemporaryDirectory(prefix="mindconverter-mindir-") as folder:
        stem = Path(folder) / "network"
        try:
            network = build_network(script, checkpoint)
            ms.export(
                network, *example_inputs(network, specs), file_name=str(stem), file_format="MINDIR"
            )
        except Exception as exc:  # noqa: BLE001 - MindSpore's compiler raises anything
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise make_error("MINDIR_FAILED", f"mindspore.export failed: {first}") from None
        with open(stem.with_suffix(".mindir"), "rb") as exported:
            shutil.copyfileobj(exported, stream)
