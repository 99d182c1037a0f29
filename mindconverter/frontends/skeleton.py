"""Read an ONNX file's graph without its weight bytes.

The protobuf wire format is walked directly (ModelProto.graph -> GraphProto.initializer ->
TensorProto.raw_data): each large initializer's ``raw_data`` is cut out and remembered as a
range of the file, so the parsed model holds headers (name, type, dims) and the weights stay in
the file, read through a memory map when a stage needs them. External-data tensors are recorded
the same way (their ``location``/``offset``/``length``) without being read.

Anything unusual on the wire (a field repeated where the last one wins, a group, a truncated
length) makes :func:`split_weights` return None; the caller then parses the file the ordinary way.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass

import onnx

from ..graph.weight_store import FileRange, mark_held, worth_holding

_MODEL_GRAPH = 7
_GRAPH_INITIALIZER = 5
_TENSOR_RAW_DATA = 9
_TENSOR_LOCATION = 14
_LENGTH_DELIMITED = 2


class WireError(ValueError):
    """The bytes do not follow the layout this reader handles."""


@dataclass
class SplitModel:
    """The model without weight bytes, and where each held initializer's bytes are."""

    model: onnx.ModelProto
    ranges: dict[str, FileRange]


def _varint(buf, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise WireError("bad varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _encode_varint(number: int) -> bytes:
    out = bytearray()
    while True:
        byte = number & 0x7F
        number >>= 7
        out.append(byte | 0x80 if number else byte)
        if not number:
            return bytes(out)


def _fields(buf, start: int, end: int):
    """(field number, wire type, field start, value start, field end) of each field in a message."""
    pos = start
    while pos < end:
        field_start = pos
        key, pos = _varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        value_start = pos
        if wire == 0:
            _, pos = _varint(buf, pos, end)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == _LENGTH_DELIMITED:
            length, value_start = _varint(buf, pos, end)
            pos = value_start + length
        else:
            raise WireError("groups are not read by reference")
        if pos > end or number == 0:
            raise WireError("truncated field")
        yield number, wire, field_start, value_start, pos


def _message(number: int, body: bytes) -> bytes:
    return _encode_varint((number << 3) | _LENGTH_DELIMITED) + _encode_varint(len(body)) + body


# Files up to this size are read rather than mapped while their structure is parsed: a mapped
# file truncated meanwhile would end the process with SIGBUS, a read one only reads short.
READ_WHOLE_BYTES = 64 << 20


def split_weights(path) -> SplitModel | None:
    """Parse ``path`` with large initializers' bytes left in the file (None: parse it normally)."""
    with open(path, "rb") as file:
        try:
            if os.fstat(file.fileno()).st_size <= READ_WHOLE_BYTES:
                return _split(file.read(), path)  # a file cut short meanwhile reads short
            buf = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError, WireError):
            return None
    try:
        return _split(buf, path)
    except WireError:
        return None
    finally:
        buf.close()


def _split(buf, path) -> SplitModel | None:
    ranges: dict[str, FileRange] = {}
    parts = []
    graphs = 0
    for number, wire, start, value, end in _fields(buf, 0, len(buf)):
        if number == _MODEL_GRAPH and wire == _LENGTH_DELIMITED:
            graphs += 1
            parts.append(_message(_MODEL_GRAPH, _split_graph(buf, value, end, path, ranges)))
        else:
            parts.append(bytes(buf[start:end]))
    if graphs != 1:
        return None  # no graph, or several to merge: the ordinary parser decides
    model = onnx.ModelProto()
    try:
        model.ParseFromString(b"".join(parts))
    except Exception:  # noqa: BLE001 - protobuf's DecodeError and friends
        return None
    return SplitModel(model, ranges)


def _split_graph(buf, start: int, end: int, path, ranges: dict[str, FileRange]) -> bytes:
    parts = []
    for number, wire, field_start, value, field_end in _fields(buf, start, end):
        if number == _GRAPH_INITIALIZER and wire == _LENGTH_DELIMITED:
            parts.append(_split_tensor(buf, field_start, value, field_end, path, ranges))
        else:
            parts.append(bytes(buf[field_start:field_end]))
    return b"".join(parts)


def _split_tensor(buf, field_start, start, end, path, ranges) -> bytes:
    """The initializer's bytes, or a header without its raw_data when that is worth holding."""
    raw = None
    located = False
    header_parts = []
    for number, wire, field_begin, value, field_end in _fields(buf, start, end):
        if number == _TENSOR_RAW_DATA and wire == _LENGTH_DELIMITED:
            if raw is not None:
                raise WireError("raw_data given twice")
            raw = (value, field_end)
        else:
            located |= number == _TENSOR_LOCATION
            header_parts.append(bytes(buf[field_begin:field_end]))
    if raw is None or located:  # no bytes here, or external data (read by the loader)
        return bytes(buf[field_start:end])
    header = onnx.TensorProto()
    try:
        header.ParseFromString(b"".join(header_parts))
    except Exception:  # noqa: BLE001
        raise WireError("tensor header does not parse") from None
    nbytes = raw[1] - raw[0]
    if not header.name or header.name in ranges or not worth_holding(header, nbytes):
        return bytes(buf[field_start:end])
    mark_held(header)
    ranges[header.name] = FileRange(path, raw[0], nbytes)
    return _message(_GRAPH_INITIALIZER, header.SerializeToString())
