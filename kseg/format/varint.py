"""Zig-zag varints as Kafka (and protobuf) write them: read, write and size are mirror images."""

from __future__ import annotations

from kseg.format.errors import INVALID_RECORD, CorruptionError

MAX_VARINT_BYTES = 10  # a varlong; a varint (int32) uses at most 5


def read_varint(buf, pos: int) -> tuple[int, int]:
    """Decode one zig-zag varint at ``pos``; return ``(value, next_pos)``."""
    result = 0
    shift = 0
    start = pos
    try:
        while True:
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                result &= 0xFFFFFFFFFFFFFFFF  # 64 bits, as Java's long keeps of a 10-byte varlong
                return (result >> 1) ^ -(result & 1), pos
            shift += 7
            if shift >= 7 * MAX_VARINT_BYTES:
                raise CorruptionError(
                    "varint longer than 10 bytes", kind=INVALID_RECORD, position=start
                )
    except IndexError:
        raise CorruptionError("truncated varint", kind=INVALID_RECORD, position=start) from None


def zigzag(value: int) -> int:
    return (value << 1) ^ (value >> 63)


def write_varint(out: bytearray, value: int) -> None:
    """Append the zig-zag varint encoding of ``value`` (a signed 64-bit integer)."""
    z = zigzag(value) & 0xFFFFFFFFFFFFFFFF
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)


def varint_size(value: int) -> int:
    z = zigzag(value) & 0xFFFFFFFFFFFFFFFF
    size = 1
    while z >= 0x80:
        z >>= 7
        size += 1
    return size
