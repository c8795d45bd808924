"""Index files, txnindex, producer snapshots and checkpoint text files."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kseg.format import checkpoint as cp
from kseg.format import offset_index as oi
from kseg.format import producer_snapshot as ps
from kseg.format import time_index as ti
from kseg.format import txn_index as tx
from kseg.format.errors import CRC_MISMATCH, INVALID_FILE, INVALID_INDEX, CorruptionError


def _offset_index(pairs, base=100, pad=0):
    data = oi.encode_entries([oi.OffsetPosition(o, p) for o, p in pairs], base)
    return oi.OffsetIndex(data + bytes(pad), base)


def test_offset_index_lookup_and_padding():
    idx = _offset_index([(110, 4200), (130, 9000), (131, 13000)], pad=8 * 1000)
    assert len(idx) == 3 and idx.padded_bytes == 8000
    assert idx.lookup(99) == oi.OffsetPosition(100, 0)
    assert idx.lookup(100) == oi.OffsetPosition(100, 0)
    assert idx.lookup(110) == oi.OffsetPosition(110, 4200)
    assert idx.lookup(129) == oi.OffsetPosition(110, 4200)
    assert idx.lookup(10**9) == oi.OffsetPosition(131, 13000)
    assert list(idx) == [
        oi.OffsetPosition(110, 4200),
        oi.OffsetPosition(130, 9000),
        oi.OffsetPosition(131, 13000),
    ]


@given(
    st.lists(st.integers(min_value=1, max_value=1000), min_size=0, max_size=60, unique=True),
    st.integers(0, 50),
)
def test_offset_index_lookup_matches_linear_scan(deltas, pad):
    offsets = sorted(deltas)
    pairs = [(100 + o, o * 10) for o in offsets]
    idx = _offset_index(pairs, pad=8 * pad)
    assert len(idx) == len(pairs)
    for target in range(95, 1105, 7):
        want = [p for p in pairs if p[0] <= target]
        expect = oi.OffsetPosition(*want[-1]) if want else oi.OffsetPosition(100, 0)
        assert idx.lookup(target) == expect


def test_preallocated_empty_index_has_no_entries():
    idx = oi.OffsetIndex(bytes(oi.DEFAULT_MAX_INDEX_SIZE), 0)
    assert len(idx) == 0 and idx.lookup(5) == oi.OffsetPosition(0, 0)
    t = ti.TimeIndex(bytes(ti.DEFAULT_MAX_INDEX_SIZE), 0)
    assert len(t) == 0 and t.lookup(5) == ti.TimestampOffset(-1, 0)


def test_offset_index_sanity():
    with pytest.raises(CorruptionError) as err:
        oi.OffsetIndex(b"\x00" * 12, 0).sanity_check()
    assert err.value.kind == INVALID_INDEX and err.value.position == 8
    bad = oi.OffsetIndex(oi.ENTRY.pack(-5, 10), 100)
    with pytest.raises(CorruptionError, match="below the base offset"):
        bad.sanity_check()


def test_time_index_lookup_and_sanity():
    entries = [
        ti.TimestampOffset(1000, 105),
        ti.TimestampOffset(2000, 110),
        ti.TimestampOffset(3000, 110),
    ]
    idx = ti.TimeIndex(ti.encode_entries(entries, 100) + bytes(120), 100)
    assert len(idx) == 3
    assert idx.lookup(999) == ti.TimestampOffset(-1, 100)
    assert idx.lookup(2500) == entries[1]
    assert idx.last_entry() == entries[2]
    idx.sanity_check()
    backwards = ti.TimeIndex(ti.encode_entries(entries[::-1], 100), 100)
    with pytest.raises(CorruptionError, match="below the first"):
        backwards.sanity_check()
    with pytest.raises(CorruptionError, match="multiple of 12"):
        ti.TimeIndex(bytes(13), 0).sanity_check()


def test_txn_index_round_trip_and_errors():
    entries = [tx.AbortedTxn(7, 10, 20, 10), tx.AbortedTxn(9, 15, 40, 41)]
    data = tx.encode_entries(entries)
    assert len(data) == 68 and list(tx.read_entries(data)) == entries
    with pytest.raises(CorruptionError) as err:
        list(tx.read_entries(data[:-1]))
    assert err.value.position == 34
    bad = bytearray(data)
    bad[35] = 3  # version of entry 2
    with pytest.raises(CorruptionError) as err:
        list(tx.read_entries(bytes(bad)))
    assert err.value.position == 34 and "version 3" in str(err.value)


def test_producer_snapshot_round_trip_and_crc():
    entries = [
        ps.ProducerEntry(7, 1, 41, 100, 4, 1_700_000_000_000, 3, 90),
        ps.ProducerEntry(8, 0, 9, 120, 0, 5, -1),
    ]
    data = ps.encode_snapshot(entries)
    snap = ps.read_snapshot(data)
    assert snap.entries == entries and snap.version == 1
    assert ps.read_snapshot(ps.encode_snapshot([])).entries == []
    flipped = bytearray(data)
    flipped[20] ^= 1
    with pytest.raises(CorruptionError) as err:
        ps.read_snapshot(bytes(flipped))
    assert err.value.kind == CRC_MISMATCH
    with pytest.raises(CorruptionError, match="shorter than"):
        ps.read_snapshot(data[:5])


def test_offset_checkpoint_round_trip_and_errors():
    entries = [cp.TopicPartitionOffset("a-b.c", 3, 100), cp.TopicPartitionOffset("x", 0, 0)]
    data = cp.encode_offset_checkpoint(entries)
    assert data == b"0\n2\na-b.c 3 100\nx 0 0\n"
    assert cp.read_offset_checkpoint(data) == entries
    with pytest.raises(CorruptionError) as err:
        cp.read_offset_checkpoint(b"0\n2\na 1 5\n")
    assert err.value.kind == INVALID_FILE and "declares 2" in str(err.value)
    with pytest.raises(CorruptionError) as err:
        cp.read_offset_checkpoint(b"0\n1\na one 5\n")
    assert err.value.position == 4
    with pytest.raises(CorruptionError, match="version"):
        cp.read_offset_checkpoint(b"1\n0\n")


def test_leader_epoch_and_metadata():
    epochs = [cp.EpochEntry(0, 0), cp.EpochEntry(3, 500)]
    assert cp.read_leader_epoch_checkpoint(cp.encode_leader_epoch_checkpoint(epochs)) == epochs
    meta = cp.read_partition_metadata(cp.encode_partition_metadata(bytes(range(16))))
    assert meta["version"] == 0 and meta["topic_uuid"] == "00010203-0405-0607-0809-0a0b0c0d0e0f"
    assert cp.read_properties(b"#c\nversion=0\nbroker.id=1\n") == {"version": "0", "broker.id": "1"}
    assert cp.read_clean_shutdown(b'{"version":0,"brokerEpoch":5}') == {
        "version": 0,
        "brokerEpoch": 5,
    }


def test_real_checkpoint_files_parse(real_root):
    for path in real_root.rglob("*-checkpoint"):
        data = path.read_bytes()
        if path.name == "leader-epoch-checkpoint":
            assert cp.read_leader_epoch_checkpoint(data)
        elif data:
            cp.read_offset_checkpoint(data)
    for path in real_root.rglob("*.snapshot"):
        ps.read_snapshot(path.read_bytes())
    for path in real_root.rglob("partition.metadata"):
        assert "topic_uuid" in cp.read_partition_metadata(path.read_bytes())
