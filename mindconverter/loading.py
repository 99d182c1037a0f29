"""Stage 1: read a model file into an in-memory ``onnx.ModelProto``.

The input file is only ever opened for reading and nothing is written beside it.
"""

from __future__ import annotations

from pathlib import Path

import onnx
from google.protobuf.message import DecodeError
from onnx import external_data_helper

from .errors import make_error

MIN_OPSET = 7
SUPPORTED_SUFFIXES = (".onnx", ".pb")


def check_model_path(path: str | Path) -> Path:
    """Check the model path exists, is a non-empty file with a known suffix."""
    path = Path(path)
    if not path.exists():
        raise make_error("FILE_NOT_FOUND", f"No such file: '{path}'.")
    if path.is_dir():
        raise make_error("FILE_IS_DIRECTORY", f"'{path}' is a directory.")
    if path.stat().st_size == 0:
        raise make_error("FILE_EMPTY", f"'{path}' is empty (0 bytes).")
    if path.suffix.lower() not in SUPPORTED_SUFFIXES:
        raise make_error(
            "UNKNOWN_SUFFIX", f"'{path.name}' has suffix '{path.suffix}'; expected .onnx or .pb."
        )
    return path


def load_onnx(path: Path) -> onnx.ModelProto:
    """Parse an ONNX file, including tensors kept in external data files."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise make_error("FILE_CORRUPT", f"Cannot read '{path}': {exc.strerror}.") from None
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeWarning, ValueError) as exc:
        raise make_error("FILE_CORRUPT", f"'{path.name}' is not a valid ONNX protobuf ({exc}).") from None
    del data
    if not model.HasField("graph") or not model.opset_import:
        raise make_error("FILE_CORRUPT", f"'{path.name}' parses but holds no ONNX graph or opset.")
    _load_external_data(model, path.parent)
    return model


def _load_external_data(model: onnx.ModelProto, base_dir: Path) -> None:
    """Read every externally stored tensor into the in-memory model, refusing paths outside."""
    base = base_dir.resolve()
    for tensor in external_data_helper._get_all_tensors(model):  # onnx's own tensor walker
        if not external_data_helper.uses_external_data(tensor):
            continue
        info = {entry.key: entry.value for entry in tensor.external_data}
        location = info.get("location", "")
        target = (base / location).resolve()
        if not location or base not in target.parents and target != base:
            raise make_error(
                "EXTERNAL_DATA_MISSING",
                f"Tensor '{tensor.name}' points outside the model folder ('{location}').",
            )
        if not target.is_file():
            raise make_error(
                "EXTERNAL_DATA_MISSING", f"Tensor '{tensor.name}' needs '{location}', which is missing."
            )
        try:
            external_data_helper.load_external_data_for_tensor(tensor, str(base))
        except (OSError, ValueError) as exc:
            raise make_error(
                "EXTERNAL_DATA_MISSING", f"Tensor '{tensor.name}' cannot be read from '{location}' ({exc})."
            ) from None
        offset = int(info.get("offset", 0) or 0)
        length = info.get("length")
        if length is not None and len(tensor.raw_data) != int(length):
            raise make_error(
                "EXTERNAL_DATA_MISSING",
                f"Tensor '{tensor.name}' expects {length} bytes at offset {offset} of '{location}', "
                f"which is shorter.",
            )
        del tensor.external_data[:]
        tensor.data_location = onnx.TensorProto.DEFAULT


def default_opset(model: onnx.ModelProto) -> int:
    """The opset version of the default ONNX domain."""
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    raise make_error("OPSET_UNSUPPORTED", "The model imports no default-domain ONNX opset.")


def check_opset(model: onnx.ModelProto) -> int:
    """Check the default-domain opset is one we convert; returns it."""
    version = default_opset(model)
    newest = onnx.defs.onnx_opset_version()
    if version < MIN_OPSET:
        raise make_error(
            "OPSET_UNSUPPORTED", f"The model uses opset {version}; the oldest supported is {MIN_OPSET}."
        )
    if version > newest:
        raise make_error(
            "OPSET_UNSUPPORTED",
            f"The model uses opset {version}; the installed onnx {onnx.__version__} knows up to {newest}.",
        )
    return version


def load_model(path: str | Path) -> onnx.ModelProto:
    """Check and load a model file into an ``onnx.ModelProto`` (TensorFlow .pb goes via tf2onnx)."""
    path = check_model_path(path)
    if path.suffix.lower() == ".pb":
        raise make_error(
            "TF_STACK_MISSING", "TensorFlow .pb conversion is not available in this version yet."
        )
    model = load_onnx(path)
    check_opset(model)
    return model
