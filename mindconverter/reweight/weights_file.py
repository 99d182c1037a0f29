"""Read a newer set of a model's weights: safetensors (no torch needed), a PyTorch state dict
(``.pt``/``.pth``/``.bin``, when torch is installed) or the initializers of an ONNX export."""

from __future__ import annotations

import importlib.util
import json
import mmap
from collections.abc import Mapping
from pathlib import Path

import ml_dtypes
import numpy as np
from onnx import numpy_helper

from ..errors import make_error
from ..frontends.loading import check_model_path

WEIGHT_SUFFIXES = (".safetensors", ".pt", ".pth", ".bin", ".onnx")
_SAFETENSORS_DTYPES = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "BF16": ml_dtypes.bfloat16,
    "I64": np.int64,
    "I32": np.int32,
    "I16": np.int16,
    "I8": np.int8,
    "U64": np.uint64,
    "U32": np.uint32,
    "U16": np.uint16,
    "U8": np.uint8,
    "BOOL": np.bool_,
}
MAX_HEADER_BYTES = 100 << 20  # the safetensors format's own limit


def read_weights(path: str | Path) -> Mapping[str, np.ndarray]:
    """Tensor name -> array for every tensor in the file (read-only where memory-mapped)."""
    path = check_model_path(path, WEIGHT_SUFFIXES)
    suffix = path.suffix.lower()
    if suffix == ".safetensors":
        return read_safetensors(path)
    if suffix == ".onnx":
        return _read_onnx_initializers(path)
    return _read_torch_state(path)


def _corrupt(path: Path, why: str):
    return make_error("FILE_CORRUPT", f"'{path.name}' is not a readable weights file: {why}")


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Parse the header and map each tensor's bytes (bfloat16 included, which the safetensors
    package cannot give as numpy)."""
    with open(path, "rb") as handle:
        data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    size = len(data)
    if size < 8:
        raise _corrupt(path, "shorter than its header length.")
    length = int.from_bytes(data[:8], "little")
    if length > min(MAX_HEADER_BYTES, size - 8):
        raise _corrupt(path, "its header length is larger than the file.")
    try:
        header = json.loads(bytes(data[8 : 8 + length]))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise _corrupt(path, "its header is not JSON.") from None
    if not isinstance(header, dict):
        raise _corrupt(path, "its header is not a table of tensors.")
    start = 8 + length
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        tensors[name] = _tensor_view(path, data, start, name, info)
    return tensors


def _tensor_view(path: Path, data, start: int, name: str, info) -> np.ndarray:
    try:
        dtype = np.dtype(_SAFETENSORS_DTYPES[info["dtype"]])
        shape = tuple(int(d) for d in info["shape"])
        begin, end = (int(v) for v in info["data_offsets"])
    except (KeyError, TypeError, ValueError):
        raise _corrupt(path, "a tensor entry has an unknown dtype or malformed fields.") from None
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if min(shape, default=0) < 0 or not 0 <= begin <= end <= len(data) - start:
        raise _corrupt(path, "a tensor's byte range lies outside the file.")
    if end - begin != count * dtype.itemsize:
        raise _corrupt(path, "a tensor's byte range does not match its shape.")
    return np.frombuffer(data, dtype, count, start + begin).reshape(shape)


def _read_onnx_initializers(path: Path) -> dict[str, np.ndarray]:
    """The main graph's initializers of an ONNX export (external data read from its folder)."""
    from ..frontends.loading import load_onnx

    model = load_onnx(path)
    tensors = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    for node in model.graph.node:  # constants the exporter wrote as nodes (masks, positions)
        if node.op_type == "Constant" and len(node.output) == 1 and node.attribute:
            if node.attribute[0].name == "value":
                tensors.setdefault(node.output[0], numpy_helper.to_array(node.attribute[0].t))
    return tensors


def _read_torch_state(path: Path) -> dict[str, np.ndarray]:
    """A state dict saved by torch.save (weights only: nothing in the file is executed)."""
    if importlib.util.find_spec("torch") is None:
        raise make_error(
            "WEIGHTS_UNREADABLE",
            f"Reading '{path.name}' needs PyTorch; save the state dict as safetensors "
            "(safetensors.torch.save_file) to re-convert without it.",
        )
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - torch raises many kinds
        raise _corrupt(path, f"torch.load refused it ({type(exc).__name__}).") from None
    if isinstance(state, Mapping) and isinstance(state.get("state_dict"), Mapping):
        state = state["state_dict"]
    if not isinstance(state, Mapping):
        raise make_error("WEIGHTS_UNREADABLE", f"'{path.name}' does not hold a state dict.")
    tensors = {}
    for name, value in state.items():
        if isinstance(value, torch.Tensor):
            if value.dtype == torch.bfloat16:
                array = value.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
            else:
                array = value.detach().numpy()
            tensors[str(name)] = array
    return tensors


__all__ = ["WEIGHT_SUFFIXES", "read_safetensors", "read_weights"]
