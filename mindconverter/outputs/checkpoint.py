"""Writing MindSpore checkpoints without importing MindSpore: ``.ckpt``, and safetensors for
checkpoints past the 2 GB a ``.ckpt`` can hold.

A MindSpore checkpoint is the protobuf message ``Checkpoint { repeated Value value = 1; }`` with
``Value { required string tag = 1; TensorProto tensor = 2; }`` and ``TensorProto { repeated int64
dims = 1; required string tensor_type = 2; required bytes tensor_content = 3; }`` (MindSpore's
``checkpoint.proto``). We declare that schema with protobuf's descriptor API and stream the file:
a repeated field on the wire is a sequence of (field key, length, message) records, so each
parameter is written on its own, its bytes straight from the array, and no copy of all the
weights is ever held.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import BinaryIO

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool

from ..graph.weight_store import release_pages, stable_chunks
from ..text import one_line

try:  # protobuf >= 4.21
    from google.protobuf.message_factory import GetMessageClass as _message_class
except ImportError:  # pragma: no cover - older protobuf
    from google.protobuf.message_factory import MessageFactory

    def _message_class(descriptor):
        return MessageFactory().GetPrototype(descriptor)


TENSOR_TYPES = {
    "float16": "Float16",
    "bfloat16": "BFloat16",
    "float32": "Float32",
    "float64": "Float64",
    "int8": "Int8",
    "int16": "Int16",
    "int32": "Int32",
    "int64": "Int64",
    "uint8": "UInt8",
    "uint16": "UInt16",
    "uint32": "UInt32",
    "uint64": "UInt64",
    "bool": "Bool",
}


def _schema() -> descriptor_pb2.FileDescriptorProto:
    fdp = descriptor_pb2.FileDescriptorProto(
        name="mindconverter_checkpoint.proto", package="", syntax="proto2"
    )
    F = descriptor_pb2.FieldDescriptorProto
    tensor = fdp.message_type.add(name="TensorProto")
    tensor.field.add(name="dims", number=1, label=F.LABEL_REPEATED, type=F.TYPE_INT64)
    tensor.field.add(name="tensor_type", number=2, label=F.LABEL_REQUIRED, type=F.TYPE_STRING)
    tensor.field.add(name="tensor_content", number=3, label=F.LABEL_REQUIRED, type=F.TYPE_BYTES)
    checkpoint = fdp.message_type.add(name="Checkpoint")
    value = checkpoint.nested_type.add(name="Value")
    value.field.add(name="tag", number=1, label=F.LABEL_REQUIRED, type=F.TYPE_STRING)
    value.field.add(
        name="tensor",
        number=2,
        label=F.LABEL_OPTIONAL,
        type=F.TYPE_MESSAGE,
        type_name=".TensorProto",
    )
    checkpoint.field.add(
        name="value",
        number=1,
        label=F.LABEL_REPEATED,
        type=F.TYPE_MESSAGE,
        type_name=".Checkpoint.Value",
    )
    return fdp


def message_classes():
    """The (Checkpoint, Checkpoint.Value) message classes, in a private descriptor pool."""
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_schema())
    checkpoint = _message_class(pool.FindMessageTypeByName("Checkpoint"))
    value = _message_class(pool.FindMessageTypeByName("Checkpoint.Value"))
    return checkpoint, value


def tensor_type_name(dtype: np.dtype) -> str:
    """MindSpore's checkpoint type string for a numpy dtype (``Float32``...)."""
    name = np.dtype(dtype).name
    if name not in TENSOR_TYPES:
        from ..errors import make_error

        raise make_error(
            "UNSUPPORTED_DTYPE",
            f"A weight has dtype {name}, which a MindSpore checkpoint cannot store.",
        )
    return TENSOR_TYPES[name]


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        byte = number & 0x7F
        number >>= 7
        if number:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


_VALUE_FIELD_KEY = bytes([(1 << 3) | 2])  # Checkpoint.value: field 1, length-delimited
_TAG_KEY = bytes([(1 << 3) | 2])  # Value.tag: field 1
_TENSOR_KEY = bytes([(2 << 3) | 2])  # Value.tensor: field 2
_DIM_KEY = bytes([(1 << 3) | 0])  # TensorProto.dims: field 1, varint (proto2: not packed)
_TYPE_KEY = bytes([(2 << 3) | 2])  # TensorProto.tensor_type: field 2
_CONTENT_KEY = bytes([(3 << 3) | 2])  # TensorProto.tensor_content: field 3


def _length_delimited(key: bytes, body_length: int) -> bytes:
    return key + _varint(body_length)


def _little_endian_bytes(array: np.ndarray) -> np.ndarray:
    """The array's values as a flat uint8 view, little-endian and contiguous (a copy only when
    the array is not laid out that way already, e.g. a transposed weight)."""
    if array.dtype.byteorder == ">" or (array.dtype.byteorder == "=" and not _LITTLE):
        array = array.astype(array.dtype.newbyteorder("<"))
    array = np.ascontiguousarray(array).reshape(-1)
    return array.view(np.uint8)


_LITTLE = np.little_endian


def _refuse_second(name: str, named) -> None:
    """Refuse a second record under one name: MindSpore's loader aborts the whole process on a
    checkpoint that holds one (a set of names seen is kept by the caller)."""
    if name in named:
        from ..errors import make_error

        raise make_error("DUPLICATE_PARAMETER", f"Two weights are named '{one_line(name, 120)}'.")
    if isinstance(named, set):
        named.add(name)


def write_checkpoint(
    stream: BinaryIO,
    parameters: Iterable[tuple[str, np.ndarray]],
    progress: Callable[[int], None] | None = None,
) -> int:
    """Write ``(name, array)`` pairs as a MindSpore checkpoint; returns the bytes written.

    Each record's header is encoded here (as protobuf would: fields in number order) and the
    tensor's bytes are written straight from the array's memory, one tensor at a time; pages of
    memory-mapped weights are let go once written. ``progress`` gets each record's size.
    """
    written = 0
    named: set[str] = set()
    for name, array in parameters:
        _refuse_second(name, named)
        array = np.asarray(array)
        type_name = tensor_type_name(array.dtype).encode()
        content = _little_endian_bytes(array)
        tag = name.encode()
        tensor_header = b"".join(_DIM_KEY + _varint(int(d)) for d in array.shape)
        tensor_header += _length_delimited(_TYPE_KEY, len(type_name)) + type_name
        tensor_header += _length_delimited(_CONTENT_KEY, content.nbytes)
        tensor_length = len(tensor_header) + content.nbytes
        value_header = _length_delimited(_TAG_KEY, len(tag)) + tag
        value_header += _length_delimited(_TENSOR_KEY, tensor_length) + tensor_header
        value_length = len(value_header) + content.nbytes
        record_header = _length_delimited(_VALUE_FIELD_KEY, value_length) + value_header
        stream.write(record_header)
        for piece in stable_chunks(content):
            stream.write(piece)
        size = len(record_header) + content.nbytes
        written += size
        del content
        release_pages(array)
        if progress is not None:
            progress(size)
    return written


# MindSpore reads a .ckpt as one protobuf message, which cannot exceed 2 GB; bigger checkpoints
# are written in the safetensors format, which ``ms.load_checkpoint(..., format="safetensors")``
# reads.
CKPT_SIZE_LIMIT = (1 << 31) - 1
_RECORD_OVERHEAD = 64  # bytes of a record beyond its name and tensor content, at most

SAFETENSORS_DTYPES = {
    "float16": "F16",
    "bfloat16": "BF16",
    "float32": "F32",
    "float64": "F64",
    "int8": "I8",
    "int16": "I16",
    "int32": "I32",
    "int64": "I64",
    "uint8": "U8",
    "uint16": "U16",
    "uint32": "U32",
    "uint64": "U64",
    "bool": "BOOL",
}


def fits_ckpt(parameters: Sequence[tuple[str, np.ndarray]]) -> bool:
    """Whether these parameters fit a ``.ckpt`` file MindSpore can read (under 2 GB)."""
    size = sum(
        np.asarray(array).nbytes + len(name.encode()) + _RECORD_OVERHEAD
        for name, array in parameters
    )
    return size <= CKPT_SIZE_LIMIT


def write_safetensors(
    stream: BinaryIO,
    parameters: Sequence[tuple[str, np.ndarray]],
    progress: Callable[[int], None] | None = None,
) -> int:
    """Write the parameters as a safetensors file, streamed: the JSON header (dtype, shape and
    byte range of each tensor, in order) first, then each tensor's bytes straight from memory."""
    header: dict[str, dict] = {}
    offset = 0
    for name, array in parameters:
        _refuse_second(name, header)
        array = np.asarray(array)
        dtype = SAFETENSORS_DTYPES.get(array.dtype.name)
        if dtype is None:
            tensor_type_name(array.dtype)  # raises UNSUPPORTED_DTYPE
        header[name] = {
            "dtype": dtype,
            "shape": [int(d) for d in array.shape],
            "data_offsets": [offset, offset + array.nbytes],
        }
        offset += array.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    stream.write(len(text).to_bytes(8, "little"))
    stream.write(text)
    written = 8 + len(text)
    for _, array in parameters:
        array = np.asarray(array)
        content = _little_endian_bytes(array)
        for piece in stable_chunks(content):
            stream.write(piece)
        written += content.nbytes
        del content
        release_pages(array)
        if progress is not None:
            progress(array.nbytes)
    return written


def read_checkpoint(data: bytes) -> dict[str, np.ndarray]:
    """Parse checkpoint bytes back into arrays (used by tests and --verify without MindSpore)."""
    checkpoint_class, _ = message_classes()
    message = checkpoint_class()
    message.ParseFromString(data)
    reverse = {v: k for k, v in TENSOR_TYPES.items()}
    result = {}
    for value in message.value:
        dtype = np.dtype(reverse[value.tensor.tensor_type]).newbyteorder("<")
        array = np.frombuffer(value.tensor.tensor_content, dtype=dtype)
        result[value.tag] = array.reshape(tuple(value.tensor.dims)).astype(dtype.newbyteorder("="))
    return result
