"""Cheap checks on TensorFlow's saved formats before TensorFlow reads them (no TensorFlow needed).

A file that is not what its suffix says gets FILE_CORRUPT here, so TensorFlow, Keras and the
TFLite interpreter only ever see a SavedModel folder, a Keras zip, an HDF5 file or a TFLite
flatbuffer that is plausibly one. The bounds keep hostile files from making the loaders do
unbounded work: a ``.keras`` zip whose contents would inflate past a sane ratio, a TFLite model
declaring tensors no device holds, a SavedModel folder with links to files outside it or
operations that read or write files, print, or run Python.
"""

from __future__ import annotations

import math
import os
import zipfile
from pathlib import Path

from ..errors import make_error

SAVED_MODEL_FILE = "saved_model.pb"
KERAS_SUFFIXES = (".keras", ".h5", ".hdf5")
TFLITE_SUFFIX = ".tflite"
TF_SAVED_SUFFIXES = (*KERAS_SUFFIXES, TFLITE_SUFFIX)

_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
# HDF5 puts its signature at 0 or, after a user block, at 512, 1024, 2048, ...
_HDF5_OFFSETS = (0, 512, 1024, 2048, 4096)
_TFLITE_IDENTIFIER = b"TFL3"
# A .keras zip may inflate to this multiple of its size (plus a fixed allowance) at most.
MAX_ZIP_RATIO = 100
ZIP_ALLOWANCE = 64 << 20
MAX_ZIP_ENTRIES = 10_000
# No TFLite tensor (and not all of them together) may declare more elements than this (a
# flatbuffer is under 2 GB; its weights and activations are far fewer).
MAX_TFLITE_ELEMENTS = 1 << 31
# A SavedModel folder with more entries than this is not walked (and not loaded).
MAX_FOLDER_ENTRIES = 100_000
# Operations that touch files, the terminal or Python: no model needs them to compute its outputs.
UNSAFE_TF_OPS = frozenset(
    {
        "ReadFile",
        "WriteFile",
        "MatchingFiles",
        "ImmutableConst",
        "Print",
        "PrintV2",
        "PyFunc",
        "PyFuncStateless",
        "EagerPyFunc",
        "DebugIdentity",
        "DebugIdentityV2",
        "DebugIdentityV3",
        "TextLineDataset",
        "TFRecordDataset",
        "FixedLengthRecordDataset",
        "ReaderReadV2",
        "WholeFileReaderV2",
    }
)


def is_saved_model_folder(path: Path) -> bool:
    """Whether ``path`` is a folder holding a ``saved_model.pb`` (a TensorFlow SavedModel)."""
    return path.is_dir() and (path / SAVED_MODEL_FILE).is_file()


def check_tf_saved_path(path: Path) -> None:
    """FILE_CORRUPT unless ``path`` looks like the format its suffix (or folder) names."""
    if path.is_dir():
        _check_folder_links(path)
        return
    suffix = path.suffix.lower()
    if suffix == ".keras":
        _check_keras_zip(path)
    elif suffix in KERAS_SUFFIXES:
        _check_hdf5(path)
    elif suffix == TFLITE_SUFFIX:
        _check_tflite_header(path)


def _head(path: Path, size: int) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(size)
    except OSError as exc:
        raise make_error("FILE_UNREADABLE", f"Cannot read '{path}': {exc.strerror}.") from None


def _check_folder_links(folder: Path) -> None:
    """Refuse a SavedModel folder that is too large to walk or links to files outside it."""
    base = folder.resolve()
    count = 0
    for root, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            count += 1
            if count > MAX_FOLDER_ENTRIES:
                raise make_error(
                    "FILE_CORRUPT",
                    f"'{folder.name}' holds over {MAX_FOLDER_ENTRIES} entries; not a SavedModel.",
                )
            entry = Path(root) / name
            if entry.is_symlink() and base not in entry.resolve().parents:
                raise make_error(
                    "FILE_CORRUPT",
                    f"SavedModel '{folder.name}': '{entry.relative_to(folder)}' links outside "
                    "the folder; copy the real files in.",
                )


def _check_keras_zip(path: Path) -> None:
    """A ``.keras`` file is a zip holding ``config.json``, within the inflation bounds."""
    if not zipfile.is_zipfile(path):
        if _head(path, 8) == _HDF5_SIGNATURE:
            raise make_error(
                "FILE_CORRUPT", f"'{path.name}' is an HDF5 file, not a zip: rename it to .h5."
            )
        raise make_error("FILE_CORRUPT", f"'{path.name}' is not a Keras zip archive.")
    try:
        with zipfile.ZipFile(path) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise make_error("FILE_CORRUPT", f"'{path.name}' is a damaged zip ({exc}).") from None
    names = {entry.filename for entry in entries}
    escaping = [n for n in names if n.startswith(("/", "\\")) or ".." in Path(n).parts]
    if escaping:
        raise make_error(
            "FILE_CORRUPT", f"'{path.name}' holds entries with paths outside the archive."
        )
    if "config.json" not in names:
        raise make_error("FILE_CORRUPT", f"'{path.name}' holds no Keras config.json.")
    inflated = sum(entry.file_size for entry in entries)
    limit = MAX_ZIP_RATIO * path.stat().st_size + ZIP_ALLOWANCE
    if len(entries) > MAX_ZIP_ENTRIES or inflated > limit:
        raise make_error(
            "FILE_CORRUPT",
            f"'{path.name}' would inflate to {inflated} bytes in {len(entries)} entries; "
            "refused as a zip bomb.",
        )


def _check_hdf5(path: Path) -> None:
    head = _head(path, _HDF5_OFFSETS[-1] + len(_HDF5_SIGNATURE))
    if any(head[at : at + 8] == _HDF5_SIGNATURE for at in _HDF5_OFFSETS):
        return
    hint = " It is a zip: a Keras 3 file, rename it to .keras." if head[:2] == b"PK" else ""
    raise make_error("FILE_CORRUPT", f"'{path.name}' is not an HDF5 file.{hint}")


def _check_tflite_header(path: Path) -> None:
    head = _head(path, 8)
    if len(head) < 8 or head[4:8] != _TFLITE_IDENTIFIER:
        raise make_error(
            "FILE_CORRUPT", f"'{path.name}' is not a TFLite flatbuffer (no 'TFL3' identifier)."
        )


def check_tflite_tensors(path: Path, model_class) -> None:
    """Walk the flatbuffer with tf2onnx's TFLite ``Model`` class: FILE_CORRUPT when it does
    not parse, ABSURD_DIMENSION when it declares tensors too large to allocate (checked before
    TFLite's interpreter allocates them)."""
    for dims, total in _tflite_tensor_dims(path, model_class):
        if math.prod(max(d, 1) for d in dims) > MAX_TFLITE_ELEMENTS or total > MAX_TFLITE_ELEMENTS:
            raise make_error(
                "ABSURD_DIMENSION",
                f"'{path.name}': a tensor declares dims {dims}, too large to allocate.",
            )


def _tflite_tensor_dims(path: Path, model_class) -> list[tuple[list[int], int]]:
    """Each tensor's dims with the running element total, read from the flatbuffer."""
    try:
        data = bytearray(path.read_bytes())
    except OSError as exc:
        raise make_error("FILE_UNREADABLE", f"Cannot read '{path}': {exc.strerror}.") from None
    result, total = [], 0
    try:
        model = model_class.GetRootAsModel(data, 0)
        for index in range(model.SubgraphsLength()):
            graph = model.Subgraphs(index)
            for tensor_index in range(graph.TensorsLength()):
                tensor = graph.Tensors(tensor_index)
                dims = [int(tensor.Shape(axis)) for axis in range(tensor.ShapeLength())]
                total += math.prod(max(d, 1) for d in dims)
                result.append((dims, total))
                if total > MAX_TFLITE_ELEMENTS:
                    return result
    except Exception as exc:  # noqa: BLE001 - struct.error, IndexError... from a damaged buffer
        raise make_error(
            "FILE_CORRUPT", f"'{path.name}' is a damaged TFLite flatbuffer ({type(exc).__name__})."
        ) from None
    return result


def unsafe_ops_in(saved_model) -> list[str]:
    """The unsafe operation types used anywhere in a parsed ``SavedModel`` proto (sorted)."""
    found = set()
    for meta_graph in saved_model.meta_graphs:
        graph = meta_graph.graph_def
        found.update(node.op for node in graph.node if node.op in UNSAFE_TF_OPS)
        for function in graph.library.function:
            found.update(node.op for node in function.node_def if node.op in UNSAFE_TF_OPS)
    return sorted(found)


__all__ = [
    "KERAS_SUFFIXES",
    "SAVED_MODEL_FILE",
    "TFLITE_SUFFIX",
    "TF_SAVED_SUFFIXES",
    "check_tf_saved_path",
    "check_tflite_tensors",
    "is_saved_model_folder",
    "unsafe_ops_in",
]
