"""The Confluent wire format (kseg.format.confluent_wire) against Confluent's own client code
(confluent_kafka.schema_registry.common.serde.SchemaId): the same bytes both ways."""

from __future__ import annotations

import io

import pytest
from confluent_kafka.schema_registry.common.serde import SchemaId
from hypothesis import given
from hypothesis import strategies as st

from kseg.format.confluent_wire import (
    is_framed,
    read_frame,
    read_indexes,
    write_frame,
    write_indexes,
)
from kseg.format.errors import CorruptionError

ids = st.integers(0, (1 << 31) - 1)
indexes = st.lists(st.integers(0, 1 << 20), min_size=1, max_size=6)


@given(ids, st.binary(max_size=40))
def test_frames_match_confluents_prefix(sid, payload):
    ours = write_frame(sid, payload)
    assert ours == SchemaId("AVRO", sid).id_to_bytes() + payload
    assert is_framed(ours) and read_frame(ours) == (sid, 5)


@given(ids, indexes, st.binary(max_size=20))
def test_message_indexes_match_confluents(sid, idx, payload):
    ours = write_frame(sid, payload, idx)
    theirs = SchemaId("PROTOBUF", sid, message_indexes=idx).id_to_bytes() + payload
    assert ours == theirs  # [0] is the one byte 0 in both
    parsed = SchemaId("PROTOBUF")
    rest = parsed.from_bytes(io.BytesIO(ours))
    assert parsed.id == sid and (parsed.message_indexes or [0]) == idx and rest.read() == payload
    got, start = read_indexes(ours, 5)
    assert got == idx and ours[start:] == payload


def test_zero_byte_is_the_first_message():
    assert write_indexes([0]) == b"\x00"
    assert read_indexes(b"\x00", 0) == ([0], 1)
    assert read_indexes(b"\x02\x02", 0) == ([1], 2)  # Value in struct.proto, as Confluent writes


@pytest.mark.parametrize(
    "data, why",
    [
        (b"\x7f\x7f\x7f\x7f\x0f", "count"),  # a count far beyond the bytes left
        (b"\x01", "count"),  # negative count (zig-zag 1 = -1)
        (b"\x04\x02", "count 2 with 1 bytes left"),  # two indexes promised, one there
        (b"\x02\x01", "negative"),
    ],
)
def test_message_indexes_are_checked_before_use(data, why):
    with pytest.raises(CorruptionError, match=why):
        read_indexes(data, 0)


def test_frames_that_are_not_whole():
    assert not is_framed(None) and not is_framed(b"") and not is_framed(b"x\x00\x00\x00\x01")
    with pytest.raises(CorruptionError, match="truncated frame: 3 bytes"):
        read_frame(b"\x00\x00\x01")
