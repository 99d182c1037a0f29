"""Weights by reference: large initializers live outside the ONNX proto the passes edit.

A :class:`WeightStore` maps an initializer's name to where its bytes are: a range of a file
(the ``.onnx`` file itself or an external-data file, read through a memory map only when the
values are needed) or an array already in memory. The initializer stays in the model with its
name, type and dims, marked as external data held by the store (:data:`STORE_LOCATION`), so
shape inference, onnxoptimizer and every pass see a graph without weight bytes.

Arrays from a file are read-only views of a fresh memory map: the pages are the file's (no copy)
and are let go when the array is dropped or :func:`release_pages` is called. A mapped file cut
short under the process would end it with SIGBUS, which Python cannot catch: each file's size,
time and inode are noted when a range of it is first held, checked again before every mapping,
and the checkpoint writer reads the bytes of a mapped weight with ``pread`` (:func:`stable_chunks`),
where a file that changed gives a short read and the FILE_CHANGED error, never a fault.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..errors import make_error
from .half_precision import FLOAT_TYPES

# external_data location that marks an initializer whose bytes the WeightStore holds.
STORE_LOCATION = "<mindconverter weight store>"

# Initializers larger than this many bytes are held by reference. Smaller ones (shape vectors,
# scales, the values shape inference propagates) stay in the proto.
FLOAT_BYTES_LIMIT = 1024
# Integer tensors stay in the proto up to this size (shape inference may propagate their values).
INTEGER_BYTES_LIMIT = 64 << 10

_INTEGERS = {
    onnx.TensorProto.UINT8,
    onnx.TensorProto.INT8,
    onnx.TensorProto.UINT16,
    onnx.TensorProto.INT16,
    onnx.TensorProto.INT32,
    onnx.TensorProto.INT64,
    onnx.TensorProto.UINT32,
    onnx.TensorProto.UINT64,
    onnx.TensorProto.BOOL,
}


@dataclass(frozen=True)
class FileRange:
    """A tensor's little-endian bytes at ``offset`` of ``path``."""

    path: Path
    offset: int
    nbytes: int


def element_dtype(data_type: int) -> np.dtype | None:
    """The numpy dtype whose bytes are the ONNX type's raw bytes, for the types held by reference."""
    if data_type not in FLOAT_TYPES and data_type not in _INTEGERS:
        return None
    return np.dtype(helper.tensor_dtype_to_np_dtype(data_type))


def element_count(tensor: onnx.TensorProto) -> int:
    count = 1
    for dim in tensor.dims:
        count *= int(dim)
    return count


def worth_holding(tensor: onnx.TensorProto, nbytes: int) -> bool:
    """Whether a tensor of this type and byte size is held by reference (else kept in the proto)."""
    dtype = element_dtype(tensor.data_type)
    if dtype is None or any(d < 0 for d in tensor.dims):
        return False
    if nbytes != element_count(tensor) * dtype.itemsize:
        return False  # malformed: left in the proto for validation to report
    limit = FLOAT_BYTES_LIMIT if tensor.data_type in FLOAT_TYPES else INTEGER_BYTES_LIMIT
    return nbytes > limit


def worth_holding_array(array: np.ndarray) -> bool:
    """Whether a computed array is held by reference (see :func:`worth_holding`)."""
    try:
        data_type = helper.np_dtype_to_tensor_dtype(array.dtype)
    except (KeyError, TypeError, ValueError):
        return False
    header = onnx.TensorProto(data_type=data_type, dims=array.shape)
    return worth_holding(header, array.nbytes)


def mark_held(tensor: onnx.TensorProto) -> None:
    """Make ``tensor`` a header (name, type, dims) whose bytes the store holds."""
    for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data"):
        tensor.ClearField(field)
    for field in ("uint64_data", "string_data", "external_data"):
        tensor.ClearField(field)
    tensor.data_location = onnx.TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", STORE_LOCATION


def is_held(tensor: onnx.TensorProto) -> bool:
    """Whether ``tensor`` is a header whose bytes a WeightStore holds."""
    return tensor.data_location == onnx.TensorProto.EXTERNAL and any(
        entry.key == "location" and entry.value == STORE_LOCATION for entry in tensor.external_data
    )


def file_identity(path: Path) -> tuple[int, int, int, int]:
    """(device, inode, size, modification time) of a file: a change of any means it changed."""
    status = os.stat(path)
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns


def _changed(path: Path) -> Exception:
    return make_error(
        "FILE_CHANGED", f"'{Path(path).name}' changed (truncated or rewritten) while it was read."
    )


class _FileMap(mmap.mmap):
    """A read-only memory map that knows which file range it shows (for :func:`stable_chunks`)."""

    path: Path
    file_offset: int
    identity: tuple[int, int, int, int]


class WeightStore:
    """Where the bytes of every initializer held by reference are, by name."""

    def __init__(self) -> None:
        self._places: dict[str, FileRange | np.ndarray] = {}
        self._headers: dict[str, tuple[np.dtype, tuple[int, ...]]] = {}
        self._identities: dict[Path, tuple[int, int, int, int]] = {}

    @property
    def files(self) -> list[Path]:
        """The files whose ranges are held (the model, its external data)."""
        return list(self._identities)

    def note_file(self, path: Path) -> None:
        """Remember ``path``'s identity as it is now (once): later reads check it is unchanged."""
        if path not in self._identities:
            try:
                self._identities[path] = file_identity(path)
            except OSError:
                raise _changed(path) from None

    def __contains__(self, name: object) -> bool:
        return name in self._places

    def __len__(self) -> int:
        return len(self._places)

    def check_unchanged(self) -> None:
        """FILE_CHANGED when a file read by reference changed since it was first held: the
        weights read from it may be a mix of old and new bytes."""
        for path, identity in self._identities.items():
            try:
                now = file_identity(path)
            except OSError:
                raise _changed(path) from None
            if now != identity:
                raise _changed(path)

    def add_range(self, tensor: onnx.TensorProto, place: FileRange) -> None:
        """Hold ``tensor`` (a header) by a file range."""
        self.note_file(place.path)
        self._places[tensor.name] = place
        dims = tuple(int(d) for d in tensor.dims)
        dtype = element_dtype(tensor.data_type)
        if dtype is None:
            raise ValueError(f"tensors of ONNX type {tensor.data_type} are not held by reference")
        self._headers[tensor.name] = (dtype, dims)

    def put(self, name: str, array: np.ndarray) -> onnx.TensorProto:
        """Hold ``array`` in memory under ``name``; returns its header initializer."""
        array = np.asarray(array)
        header = numpy_helper.from_array(array.reshape(-1)[:0], name)
        del header.dims[:]
        header.dims.extend(array.shape)
        mark_held(header)
        self._places[name] = array
        self._headers[name] = (array.dtype, tuple(array.shape))
        return header

    def array(self, name: str) -> np.ndarray:
        """The values of ``name``: a read-only view, not a copy."""
        place = self._places[name]
        if isinstance(place, np.ndarray):
            return place
        dtype, shape = self._headers[name]
        if place.nbytes == 0:
            return np.zeros(shape, dtype)
        identity = self._identities.get(place.path)
        try:
            with open(place.path, "rb") as file:
                status = os.fstat(file.fileno())
                now = (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)
                if (
                    identity is not None
                    and now != identity
                    or status.st_size < place.offset + place.nbytes
                ):
                    raise _changed(place.path)
                start = place.offset - place.offset % mmap.ALLOCATIONGRANULARITY
                mapped = _FileMap(
                    file.fileno(),
                    place.offset + place.nbytes - start,
                    access=mmap.ACCESS_READ,
                    offset=start,
                )
        except OSError:
            raise _changed(place.path) from None
        mapped.path, mapped.file_offset, mapped.identity = place.path, start, now
        flat = np.frombuffer(
            mapped,
            dtype.newbyteorder("<"),
            count=place.nbytes // dtype.itemsize,
            offset=place.offset - start,
        )
        return flat.reshape(shape)

    def nbytes(self) -> int:
        """Bytes held (by reference or in memory)."""
        total = 0
        for place in self._places.values():
            total += place.nbytes
        return total


def release_pages(array: np.ndarray) -> None:
    """Let the memory-mapped pages under ``array`` go (they are re-read from the file if used)."""
    base = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    if isinstance(base, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        try:
            base.madvise(mmap.MADV_DONTNEED)
        except (OSError, ValueError):
            pass


CHUNK_BYTES = 16 << 20


def stable_chunks(content: np.ndarray) -> Iterator[memoryview | bytes]:
    """The bytes of a flat uint8 array, in pieces; when they are a memory-mapped file's, read
    with ``pread`` from the file instead (checked unchanged first): a file truncated meanwhile
    gives FILE_CHANGED, where touching the mapped pages would kill the process (SIGBUS)."""
    base = _map_of(content)
    if base is None or not content.flags.c_contiguous:
        yield memoryview(content.data)
        return
    at = content.__array_interface__["data"][0] - np.frombuffer(base, np.uint8).ctypes.data
    try:
        with open(base.path, "rb") as file:
            status = os.fstat(file.fileno())
            if (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns) != base.identity:
                raise _changed(base.path)
            for begin in range(0, content.nbytes, CHUNK_BYTES):
                count = min(CHUNK_BYTES, content.nbytes - begin)
                piece = os.pread(file.fileno(), count, base.file_offset + at + begin)
                if len(piece) != count:
                    raise _changed(base.path)
                yield piece
    except OSError:
        raise _changed(base.path) from None


def _map_of(array: np.ndarray) -> _FileMap | None:
    base = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    return base if isinstance(base, _FileMap) else None


def hold_large_initializers(model: onnx.ModelProto, store: WeightStore) -> None:
    """Move the bytes of the main graph's large initializers from ``model`` into ``store``."""
    for tensor in model.graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL or tensor.HasField("segment"):
            continue
        dtype = element_dtype(tensor.data_type)
        if dtype is None:
            continue
        if tensor.raw_data:
            nbytes = len(tensor.raw_data)
        else:
            nbytes = element_count(tensor) * dtype.itemsize
            field = helper.tensor_dtype_to_field(tensor.data_type)
            if len(getattr(tensor, field)) != element_count(tensor):
                continue
        if not worth_holding(tensor, nbytes):
            continue
        store.put(tensor.name, numpy_helper.to_array(tensor))
        mark_held(tensor)


def weights_as_inputs(
    model: onnx.ModelProto, store: WeightStore
) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A copy of ``model`` whose initializers held by ``store`` are graph inputs, and their
    values to feed (views of the held buffers): the model onnxruntime loads stays small."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = copy.graph
    declared = {inp.name for inp in graph.input}
    kept, weights = [], {}
    for init in graph.initializer:
        if not is_held(init):
            kept.append(init)
            continue
        weights[init.name] = store.array(init.name)
        if init.name not in declared:
            graph.input.append(
                onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims))
            )
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return copy, weights
