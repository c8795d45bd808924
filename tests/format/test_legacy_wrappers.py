"""Legacy (magic 0/1) compressed wrappers as Kafka's own reader judges them
(clients/.../record/AbstractLegacyRecordBatch.DeepRecordsIterator, LegacyRecord):

- a wrapper holding no inner message is invalid ("Found invalid compressed record set with no
  inner records");
- inner messages need not carry the wrapper's magic (the iterator is built with
  ensureMatchingMagic=false): magic-0 messages in a magic-1 wrapper are read, with no timestamp
  (LegacyRecord.timestamp() is -1 for magic 0) and offsets relative to the wrapper's;
- zstd is for v2 batches only: a magic 0/1 wrapper with codec 4 is refused before decompressing;
- a magic-1 wrapper whose offset is below its last inner offset is refused, unless it is 0.

kafka-python's legacy reader is the independent second opinion where it can read the input (it
parses inner messages with the wrapper's magic, so it cannot read a mixed wrapper; the real
Kafka's DumpLogSegments can: tests/verify/test_legacy_wrappers_broker.py).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record import MemoryRecords

from kseg.format import compression as codecs
from kseg.format import legacy
from kseg.format.errors import INVALID_RECORD, CorruptionError
from kseg.format.log import iter_entries
from kseg.format.record import CREATE_TIME, NO_TIMESTAMP_TYPE, Record

TS = 1_700_000_000_000


def _recs(n: int, first: int = 100) -> list[Record]:
    return [Record(b"k%d" % i, b"value %d" % i, TS + i, [], first + i) for i in range(n)]


def _entry(data: bytes) -> legacy.LegacyEntry:
    (entry,) = list(iter_entries(data, validate=True))
    return entry


def _kafka_python(data: bytes) -> list[tuple]:
    mr = MemoryRecords(data)
    out = []
    while mr.has_next():
        out.extend((r.offset, r.timestamp, r.key, r.value) for r in mr.next_batch())
    return out


@pytest.mark.parametrize("codec", [codecs.GZIP, codecs.SNAPPY, codecs.LZ4])
def test_a_magic1_wrapper_holding_magic0_messages_is_read(codec):
    data = legacy.build_entries(_recs(3), 1, compression_id=codec, inner_magic=0)
    entry = _entry(data)
    entry.check_wrapper()
    assert (entry.records_count, entry.base_offset) == (3, 100)
    got = [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value) for r in entry.records()]
    # magic 0 carries no timestamp, whatever the wrapper says; offsets are relative to the wrapper
    assert got == [(100 + i, -1, NO_TIMESTAMP_TYPE, b"k%d" % i, b"value %d" % i) for i in range(3)]
    assert entry.timestamp_type == CREATE_TIME and entry.max_timestamp == TS + 2


def test_magic1_messages_in_a_log_append_time_wrapper_take_its_time_magic0_ones_do_not():
    inner = legacy.encode_message(0, 0, 0, -1, b"a", b"0") + legacy.encode_message(
        1, 1, 0, TS, b"b", b"1"
    )
    wrapper = legacy.encode_message(
        51, 1, codecs.GZIP | legacy.ATTR_TIMESTAMP_TYPE, TS + 99, None, codecs.compress(1, inner)
    )
    got = [(r.offset, r.timestamp, r.timestamp_type) for r in _entry(wrapper).records()]
    assert got == [(50, -1, NO_TIMESTAMP_TYPE), (51, TS + 99, "LogAppendTime")]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [codecs.GZIP, codecs.SNAPPY, codecs.LZ4])
def test_a_wrapper_holding_no_message_is_invalid(magic, codec):
    data = legacy.build_entries([], magic, compression_id=codec, wrapper_offset=7)
    entry = _entry(data)  # size and CRC-32 are fine: what Kafka's recovery checks
    for check in (entry.check_wrapper, entry.inner_summary, lambda: list(entry.records())):
        with pytest.raises(CorruptionError, match="holds no messages") as e:
            check()
        assert (e.value.kind, e.value.position, e.value.offset) == (INVALID_RECORD, 0, 7)
    # kafka-python never gets a record out of it: it fails (magic 1 has no last inner offset to
    # place relative offsets by: IndexError; its snappy reader wants a block) or, for magic 0,
    # yields nothing without a word, where Kafka's reader refuses the wrapper
    try:
        got = _kafka_python(data)
    except Exception as exc:  # noqa: BLE001 - any refusal agrees
        assert magic == 1 or codec == codecs.SNAPPY, exc
        got = []
    assert got == []


@pytest.mark.parametrize("magic", [0, 1])
def test_a_zstd_wrapper_is_invalid(magic):
    data = legacy.build_entries(_recs(2), magic, compression_id=codecs.ZSTD, allow_zstd=True)
    entry = _entry(data)
    for check in (entry.check_wrapper, entry.inner_summary, lambda: list(entry.records())):
        with pytest.raises(CorruptionError, match="zstd only in v2") as e:
            check()
        assert e.value.field == "attributes"
    from kafka.errors import UnsupportedCodecError

    with pytest.raises(UnsupportedCodecError):  # kafka-python refuses it too
        _kafka_python(data)
    with pytest.raises(ValueError, match="zstd needs magic 2"):
        legacy.build_entries(_recs(2), magic, compression_id=codecs.ZSTD)


def test_a_magic1_wrapper_offset_below_its_last_inner_offset_is_invalid_unless_zero():
    inner = b"".join(legacy.encode_message(i, 1, 0, TS, None, b"v") for i in range(3))
    payload = codecs.compress(codecs.GZIP, inner)
    bad = _entry(legacy.encode_message(1, 1, codecs.GZIP, TS, None, payload))
    with pytest.raises(CorruptionError, match="below its last inner offset 2"):
        bad.inner_summary()
    zero = _entry(legacy.encode_message(0, 1, codecs.GZIP, TS, None, payload))
    assert [r.offset for r in zero.records()] == [0, 1, 2]  # librdkafka's producer-side sets


def test_check_wrapper_judges_the_first_message_as_the_full_scan_does():
    # a first inner message too short for ITS magic (magic 1 needs 22 bytes after the size)
    short = legacy.encode_message(0, 0, 0, -1, None, b"")  # 14: fine for magic 0
    as_v1 = bytearray(short)
    as_v1[16] = 1  # the same bytes read as magic 1: too short
    payload = codecs.compress(codecs.GZIP, bytes(as_v1))
    entry = _entry(legacy.encode_message(0, 1, codecs.GZIP, TS, None, payload))
    with pytest.raises(CorruptionError) as quick:
        entry.check_wrapper()
    with pytest.raises(CorruptionError) as full:
        _entry(legacy.encode_message(0, 1, codecs.GZIP, TS, None, payload)).inner_summary()
    assert quick.value.message == full.value.message
    assert "invalid size 14" in quick.value.message


def test_kafka_python_reads_the_valid_shapes_as_kseg_does():
    for magic in (0, 1):
        for codec in (codecs.GZIP, codecs.SNAPPY, codecs.LZ4):
            data = legacy.build_entries(_recs(4), magic, compression_id=codec)
            ours = [
                (r.offset, r.timestamp if magic else None, r.key, r.value)
                for r in _entry(data).records()
            ]
            theirs = [(o, t if magic else None, k, v) for o, t, k, v in _kafka_python(data)]
            assert ours == theirs


def test_decompress_head_is_a_prefix_of_the_whole():
    data = bytes(range(256)) * 40
    gz = codecs.compress(codecs.GZIP, data)
    assert codecs.decompress_head(codecs.GZIP, gz, 12) == data[:12]
    assert codecs.decompress_head(codecs.GZIP, gz, 1 << 20) == data
    two = gz + codecs.compress(codecs.GZIP, b"tail")  # two gzip members
    assert codecs.decompress_head(codecs.GZIP, two, len(data) + 2) == data + b"ta"
    empty_first = codecs.compress(codecs.GZIP, b"") + gz
    assert codecs.decompress_head(codecs.GZIP, empty_first, 5) == data[:5]
    for codec in (codecs.SNAPPY, codecs.LZ4):
        assert codecs.decompress_head(codec, codecs.compress(codec, data), 30) == data[:30]


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(0, 6),
    wrapper_magic=st.sampled_from([0, 1]),
    inner_magic=st.sampled_from([0, 1]),
    codec=st.sampled_from([codecs.GZIP, codecs.SNAPPY, codecs.LZ4, codecs.ZSTD]),
)
def test_check_wrapper_never_passes_a_wrapper_the_full_scan_refuses(
    n, wrapper_magic, inner_magic, codec
):
    """The header-level probe (plain verify, dump --batches-only) and the full scan (dump,
    --deep, stats, seek) agree on every wrapper shape: valid iff it holds a message and is not
    zstd."""
    recs = _recs(n)
    data = legacy.build_entries(
        recs,
        wrapper_magic,
        compression_id=codec,
        inner_magic=inner_magic,
        wrapper_offset=None if n else 5,
        allow_zstd=True,
    )
    entry = _entry(data)
    valid = n > 0 and codec != codecs.ZSTD
    for check in (entry.check_wrapper, entry.inner_summary):
        if valid:
            check()
        else:
            with pytest.raises(CorruptionError):
                check()
    if valid:
        assert [r.offset for r in _entry(data).records()] == [r.offset for r in recs]
