"""Writing MindSpore ``.ckpt`` files without importing MindSpore.

A MindSpore checkpoint is the protobuf message ``Checkpoint { repeated Value value = 1; }`` with
``Value { required string tag = 1; TensorProto tensor = 2; }`` and ``TensorProto { repeated int64
dims = 1; required string tensor_type = 2; required bytes tensor_content = 3; }`` (MindSpore's
``checkpoint.proto``). We declare that schema with protobuf's descriptor API and stream the file:
a repeated field on the wire is a sequence of (field key, length, message) records, so each
parameter is serialised and written on its own and no second copy of all weights is held.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import BinaryIO

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool

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


_VALUE_FIELD_KEY = bytes([(1 << 3) | 2])  # field 1, wire type 2 (length-delimited)


def write_checkpoint(stream: BinaryIO, parameters: Iterable[tuple[str, np.ndarray]]) -> int:
    """Write ``(name, array)`` pairs as a MindSpore checkpoint; returns the bytes written."""
    _, value_class = message_classes()
    written = 0
    for name, array in parameters:
        array = np.asarray(array)
        record = value_class(tag=name)
        record.tensor.dims.extend(int(d) for d in array.shape)
        record.tensor.tensor_type = tensor_type_name(array.dtype)
        record.tensor.tensor_content = (
            np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
        )
        payload = record.SerializeToString()
        stream.write(_VALUE_FIELD_KEY)
        stream.write(_varint(len(payload)))
        stream.write(payload)
        written += len(_VALUE_FIELD_KEY) + len(_varint(len(payload))) + len(payload)
        del record, payload
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
