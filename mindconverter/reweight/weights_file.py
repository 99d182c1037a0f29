"""Read a newer set of a model's weights: safetensors (no torch needed), a PyTorch state dict
(``.pt``/``.pth``/``.bin``, when torch is installed) or the initializers of an ONNX export."""

from __future__ import annotations

import importlib.util
import json
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np
from onnx import numpy_helper

from ..errors import make_error
from ..frontends.loading import check_model_path
from ..text import one_line

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


def read_safetensors(path: Path) -> Mapping[str, np.ndarray]:
    """Check the header against the format's rules (the safetensors library's: no duplicate
    names, byte ranges that tile the data buffer exactly) and read each tensor when it is asked
    for (bfloat16 included, which the safetensors package cannot give as numpy)."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < 8:
                raise _corrupt(path, "shorter than its header length.")
            length = int.from_bytes(_pread(handle, 8, 0, path), "little")
            if length > min(MAX_HEADER_BYTES, size - 8):
                raise _corrupt(path, "its header length is larger than the file.")
            text = _pread(handle, length, 8, path)
    except OSError as exc:
        raise make_error("FILE_UNREADABLE", f"Cannot read '{path}': {exc.strerror}.") from None
    try:
        header = json.loads(text, object_pairs_hook=_unique_names)
    except _DuplicateName as name:
        raise _corrupt(path, f"its header names {one_line(str(name), 80)} twice.") from None
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _corrupt(path, "its header is not JSON.") from None
    if not isinstance(header, dict):
        raise _corrupt(path, "its header is not a table of tensors.")
    header.pop("__metadata__", None)
    start = 8 + length
    entries = {name: _entry(path, name, info) for name, info in header.items()}
    _check_tiling(path, entries, size - start)
    return _SafetensorsTensors(path, start, size, entries)


class _DuplicateName(ValueError):
    """A JSON object names one key twice."""


def _unique_names(pairs: list[tuple[str, object]]) -> dict:
    table = dict(pairs)
    if len(table) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateName(repr(key))
            seen.add(key)
    return table


def _pread(handle, count: int, offset: int, path: Path) -> bytes:
    """``count`` bytes at ``offset``, read (not mapped: a file cut short under us then gives a
    short read, never SIGBUS); FILE_CHANGED when the file no longer holds them."""
    data = os.pread(handle.fileno(), count, offset)
    if len(data) != count:
        raise make_error("FILE_CHANGED", f"'{path.name}' became shorter while it was being read.")
    return data


@dataclass(frozen=True)
class _Entry:
    dtype: np.dtype
    shape: tuple[int, ...]
    begin: int
    end: int


def _entry(path: Path, name: str, info) -> _Entry:
    if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
        raise _corrupt(path, "a tensor entry has an unknown dtype or malformed fields.")
    shape, offsets = info["shape"], info["data_offsets"]
    if not (isinstance(info["dtype"], str) and info["dtype"] in _SAFETENSORS_DTYPES):
        raise _corrupt(path, "a tensor entry has an unknown dtype or malformed fields.")
    if not (isinstance(shape, list) and isinstance(offsets, list) and len(offsets) == 2):
        raise _corrupt(path, "a tensor entry has an unknown dtype or malformed fields.")
    if not all(type(v) is int for v in shape + offsets):
        raise _corrupt(path, "a tensor entry has an unknown dtype or malformed fields.")
    begin, end = offsets
    if min(shape, default=0) < 0 or not 0 <= begin <= end:
        raise _corrupt(
            path, f"tensor {one_line(repr(name), 80)}'s byte range lies outside the file."
        )
    dtype = np.dtype(_SAFETENSORS_DTYPES[info["dtype"]])
    if end - begin != math.prod(shape) * dtype.itemsize:  # Python ints: no overflow
        raise _corrupt(
            path, f"tensor {one_line(repr(name), 80)}'s byte range does not match its shape."
        )
    return _Entry(dtype, tuple(shape), begin, end)


def _check_tiling(path: Path, entries: dict[str, _Entry], data_size: int) -> None:
    """The byte ranges, in order, must follow each other and end where the file ends."""
    reached = 0
    for entry in sorted(entries.values(), key=lambda entry: (entry.begin, entry.end)):
        if entry.begin != reached:
            why = "overlap" if entry.begin < reached else "leave a gap"
            raise _corrupt(path, f"its tensors' byte ranges {why}.")
        reached = entry.end
    if reached > data_size:
        raise _corrupt(path, "a tensor's byte range lies outside the file.")
    if reached != data_size:
        raise _corrupt(path, "bytes after its last tensor belong to no tensor.")


class _SafetensorsTensors(Mapping):
    """Name -> array of a checked safetensors file, each read when asked for (the last one
    kept: a weight is looked at several times in a row)."""

    def __init__(self, path: Path, start: int, size: int, entries: dict[str, _Entry]):
        self._path, self._start, self._size, self._entries = path, start, size, entries
        self._last: tuple[str, np.ndarray] | None = None

    def __getitem__(self, name: str) -> np.ndarray:
        if self._last is not None and self._last[0] == name:
            return self._last[1]
        entry = self._entries[name]
        try:
            with open(self._path, "rb") as handle:
                if os.fstat(handle.fileno()).st_size != self._size:
                    raise make_error(
                        "FILE_CHANGED", f"'{self._path.name}' changed while it was being read."
                    )
                count = entry.end - entry.begin
                data = _pread(handle, count, self._start + entry.begin, self._path)
        except OSError as exc:
            raise make_error(
                "FILE_UNREADABLE", f"Cannot read '{self._path}': {exc.strerror}."
            ) from None
        array = np.frombuffer(data, entry.dtype.newbyteorder("<")).reshape(entry.shape)
        array = array.astype(entry.dtype, copy=False)
        self._last = (name, array)
        return array

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


def _read_onnx_initializers(path: Path) -> dict[str, np.ndarray]:
    """The main graph's initializers of an ONNX export (external data read from its folder);
    a tensor whose dims do not match its data is refused."""
    from ..frontends.loading import load_onnx, tensor_problem

    model = load_onnx(path)
    tensors = {}
    for init in model.graph.initializer:
        tensors[init.name] = _onnx_array(path, init, tensor_problem)
    for node in model.graph.node:  # constants the exporter wrote as nodes (masks, positions)
        if node.op_type == "Constant" and len(node.output) == 1 and node.attribute:
            if node.attribute[0].name == "value" and node.output[0] not in tensors:
                tensors[node.output[0]] = _onnx_array(path, node.attribute[0].t, tensor_problem)
    return tensors


def _onnx_array(path: Path, tensor, tensor_problem) -> np.ndarray:
    problem = tensor_problem(tensor)
    if problem:
        raise _corrupt(path, f"tensor {one_line(repr(tensor.name), 80)} {problem}")
    try:
        return numpy_helper.to_array(tensor)
    except (ValueError, TypeError, KeyError) as exc:
        raise _corrupt(path, f"tensor {one_line(repr(tensor.name), 80)} ({exc}).") from None


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
