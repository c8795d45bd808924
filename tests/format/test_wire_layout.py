"""Every wire structure is one field list; the positions derived from it are Kafka's, the magic
table picks the right reader, and each read/write pair round-trips."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kseg.format import batch, entry, legacy, magic
from kseg.format import offset_index as oi
from kseg.format import producer_snapshot as ps
from kseg.format import time_index as ti
from kseg.format import txn_index as tx
from kseg.format.crc import crc32, crc32c
from kseg.format.index import Index

i16 = st.integers(-(2**15), 2**15 - 1)
i32 = st.integers(-(2**31), 2**31 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)
blob = st.none() | st.binary(max_size=64)


def test_positions_are_kafkas():
    # Kafka: Records.LOG_OVERHEAD, MAGIC_OFFSET, HEADER_SIZE_UP_TO_MAGIC
    assert (entry.LOG_OVERHEAD, entry.MAGIC_POS, entry.HEADER_SIZE_UP_TO_MAGIC) == (12, 16, 17)
    # DefaultRecordBatch: CRC_OFFSET 17, ATTRIBUTES_OFFSET 21, RECORD_BATCH_OVERHEAD 61
    assert (batch.CRC_POS, batch.CRC_COVERAGE_START, batch.HEADER_SIZE) == (17, 21, 61)
    # LegacyRecord: CRC_OFFSET 12 (after the log overhead), MAGIC_OFFSET 16, KEY_SIZE_OFFSET
    assert (legacy.CRC_POS, legacy.MAGIC_POS) == (12, 16)
    assert legacy.KEY_LENGTH_POS == {0: 18, 1: 26}
    assert legacy.RECORD_OVERHEAD == {0: 14, 1: 22}  # RECORD_OVERHEAD_V0/V1
    assert (oi.ENTRY_SIZE, ti.ENTRY_SIZE, tx.ENTRY_SIZE) == (8, 12, 34)
    assert (ps.HEADER.size, ps.CRC_POS, ps.COUNT_POS, ps.ENTRY_SIZE) == (10, 2, 6, 46)
    # the snapshot entry's field list names ProducerEntry's fields, in order
    names = ps.ProducerEntry._fields
    assert names == tuple(n for n, _ in ps.ENTRY_FIELDS)


@pytest.mark.parametrize("m", range(-128, 128))
def test_magic_table_follows_kafkas_reading_rule(m):
    fmt = magic.format_of(m)
    if m >= 2:
        assert fmt is magic.V2 and fmt.reader is batch.RecordBatch and fmt.crc is crc32c
    else:
        assert fmt.reader is legacy.LegacyEntry and fmt.crc is crc32
        assert fmt is (magic.V1 if m == 1 else magic.V0)
    assert magic.FORMAT_BY_BYTE[m & 0xFF] is fmt
    assert magic.READER_BY_BYTE[m & 0xFF] is fmt.reader


@given(
    st.sampled_from([0, 1]),
    st.integers(0, 2**62),
    st.integers(0, 0x07) | st.just(0x08),
    i64,
    blob,
    blob,
)
def test_legacy_message_round_trip(m, offset, attributes, timestamp, key, value):
    data = legacy.encode_message(offset, m, attributes, timestamp, key, value)
    e = legacy.LegacyEntry(data, 0)
    assert (e.offset, e.magic, e.attributes, e.size) == (offset, m, attributes, len(data))
    assert e.timestamp == (timestamp if m == 1 else -1)
    assert e.message_size == legacy.RECORD_OVERHEAD[m] + len(key or b"") + len(value or b"")
    assert e.crc_valid and e.compute_crc() == magic.FORMATS[m].crc(
        data[magic.FORMATS[m].crc_coverage_start :]
    )
    assert e.key_value() == (key, value)


def _index_round_trip(cls, pairs, base, pad):
    data = _encoder(cls)(pairs, base)
    idx = cls(data + bytes(pad * cls.ENTRY_SIZE), base)
    assert (
        isinstance(idx, Index)
        and len(idx) == len(pairs)
        and idx.padded_bytes == pad * cls.ENTRY_SIZE
    )
    assert list(idx) == pairs and [idx.entry(n) for n in range(len(idx))] == pairs
    return idx


def _encoder(cls):
    return oi.encode_entries if cls is oi.OffsetIndex else ti.encode_entries


@given(
    st.lists(st.integers(1, 10_000), max_size=40, unique=True),
    st.integers(0, 2**40),
    st.integers(0, 8),
)
def test_time_index_round_trip_and_lookup_match_a_linear_scan(deltas, base, pad):
    offsets = sorted(deltas)
    pairs = [ti.TimestampOffset(1_700_000_000_000 + 3 * o, base + o) for o in offsets]
    idx = _index_round_trip(ti.TimeIndex, pairs, base, pad)
    idx.sanity_check()
    for target in range(1_700_000_000_000 - 5, 1_700_000_000_000 + 30_010, 997):
        want = [p for p in pairs if p.timestamp <= target]
        assert idx.lookup(target) == (want[-1] if want else ti.TimestampOffset(-1, base))


@given(st.lists(st.integers(1, 10_000), max_size=40, unique=True), st.integers(0, 2**40))
def test_offset_index_round_trip(deltas, base):
    pairs = [oi.OffsetPosition(base + o, 40 * o) for o in sorted(deltas)]
    _index_round_trip(oi.OffsetIndex, pairs, base, 0).sanity_check()


@pytest.mark.parametrize("cls", [oi.OffsetIndex, ti.TimeIndex])
def test_index_sanity_check_names_the_file_and_position(cls):
    from kseg.format.errors import CorruptionError

    with pytest.raises(CorruptionError) as err:
        cls(bytes(cls.ENTRY_SIZE * 3 + 1), 0).sanity_check()
    assert err.value.position == cls.ENTRY_SIZE * 3
    assert f"{cls.FILE_NAME} file size {cls.ENTRY_SIZE * 3 + 1} is not a multiple" in str(err.value)


@given(st.lists(st.tuples(i64, i64, i64, i64), max_size=20))
def test_txn_index_round_trip(rows):
    entries = [tx.AbortedTxn(*r) for r in rows]
    data = tx.encode_entries(entries)
    assert len(data) == len(entries) * tx.ENTRY_SIZE
    assert list(tx.read_entries(data)) == entries


@given(st.lists(st.tuples(i64, i16, i32, i64, i32, i64, i32, i64), max_size=20))
def test_producer_snapshot_round_trip(rows):
    entries = [ps.ProducerEntry(*r) for r in rows]
    snap = ps.read_snapshot(ps.encode_snapshot(entries))
    assert snap.version == ps.VERSION and snap.entries == entries
