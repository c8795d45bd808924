"""The Confluent wire format of a Schema Registry client's keys and values: read and written.

    magic byte 0 | schema id (int32, big-endian) | [Protobuf: message indexes] | payload

A Protobuf frame names the message type inside the schema's file by its indexes (the path
through the file's message types and their nested types), written as a zig-zag varint count
then that many zig-zag varints; the common case, the file's first message ``[0]``, is written
as the single byte 0 (Confluent's MessageIndexes). Avro and JSON Schema payloads follow the
five bytes directly.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kseg.format.errors import INVALID_RECORD, CorruptionError
from kseg.format.varint import read_varint, write_varint

MAGIC = 0
HEADER_SIZE = 5  # magic + schema id
_ID = struct.Struct(">i")


class Frame(NamedTuple):
    schema_id: int
    start: int  # where what follows the 5-byte header begins


def is_framed(data: bytes | None) -> bool:
    """Does ``data`` begin as a framed value does (its magic byte is 0)? A value that does not is
    not the Schema Registry's (a plain string key, say); one that does but is too short to hold
    the header is a truncated frame (``read_frame`` says so)."""
    return bool(data) and data[0] == MAGIC


def read_frame(data: bytes) -> Frame:
    """The frame header of a value whose magic byte is 0; CorruptionError when it is cut short."""
    if len(data) < HEADER_SIZE:
        raise CorruptionError(
            f"truncated frame: {len(data)} bytes, the header alone is {HEADER_SIZE}",
            kind=INVALID_RECORD,
            position=len(data),
            field="schema_id",
        )
    return Frame(_ID.unpack_from(data, 1)[0], HEADER_SIZE)


def write_frame(schema_id: int, payload: bytes, indexes: list[int] | None = None) -> bytes:
    """A framed value: the header, the message indexes (Protobuf: pass ``indexes``), the payload."""
    out = bytearray(b"\x00")
    out += _ID.pack(schema_id)
    if indexes is not None:
        out += write_indexes(indexes)
    return bytes(out + payload)


def read_indexes(data: bytes, pos: int) -> tuple[list[int], int]:
    """A Protobuf frame's message indexes at ``pos``: (indexes, where the payload starts). A
    count read from the bytes is checked against the bytes left before anything is made of it
    (each index takes at least one byte)."""
    count, at = read_varint(data, pos)
    if count == 0:
        return [0], at
    if count < 0 or count > len(data) - at:
        raise CorruptionError(
            f"message index count {count} with {len(data) - at} bytes left",
            kind=INVALID_RECORD,
            position=pos,
            field="message_indexes",
        )
    out = []
    for _ in range(count):
        index, at = read_varint(data, at)
        if index < 0:
            raise CorruptionError(
                f"negative message index {index}",
                kind=INVALID_RECORD,
                position=at,
                field="message_indexes",
            )
        out.append(index)
    return out, at


def write_indexes(indexes: list[int]) -> bytes:
    """Message indexes as Confluent writes them: ``[0]`` as the one byte 0."""
    out = bytearray()
    if list(indexes) == [0]:
        write_varint(out, 0)
        return bytes(out)
    write_varint(out, len(indexes))
    for i in indexes:
        write_varint(out, i)
    return bytes(out)
