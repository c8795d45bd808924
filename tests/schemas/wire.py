"""Bytes the Schema Registry tests build payloads from."""

from __future__ import annotations

from kseg.format.varint import write_varint


def varint(n: int) -> bytes:
    """A zig-zag varint, as Avro writes an int or a long (and a block count)."""
    out = bytearray()
    write_varint(out, n)
    return bytes(out)
