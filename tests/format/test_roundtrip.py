"""Property-based parse/append symmetry for every magic and codec."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kseg.format import batch as v2
from kseg.format import compression, legacy
from kseg.format.log import iter_entries
from kseg.format.record import Record

TS = st.integers(min_value=0, max_value=2**62)
BYTES = st.one_of(st.none(), st.just(b""), st.binary(max_size=300))
HEADERS = st.lists(
    st.tuples(st.text(max_size=20), st.one_of(st.none(), st.binary(max_size=40))), max_size=4
)


@st.composite
def records(draw, *, headers=True, min_size=1):
    n = draw(st.integers(min_value=min_size, max_value=12))
    base_ts = draw(TS)
    offset = draw(st.integers(min_value=0, max_value=2**40))
    out = []
    for _ in range(n):
        ts = base_ts + draw(st.integers(min_value=-(2**31), max_value=2**31))
        out.append(
            Record(
                key=draw(BYTES),
                value=draw(BYTES),
                timestamp=max(ts, 0),
                headers=draw(HEADERS) if headers else [],
                offset=offset,
            )
        )
        offset += draw(st.integers(min_value=1, max_value=2**20))
    return out


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("codec", sorted(compression.CODEC_NAMES))
@SETTINGS
@given(recs=records(), epoch=st.integers(min_value=-1, max_value=2**31 - 1))
def test_v2_round_trip(codec, recs, epoch):
    data = v2.build_batch(recs, recs[0].offset, compression_id=codec, partition_leader_epoch=epoch)
    (batch,) = list(iter_entries(data, validate=True))
    assert batch.magic == 2 and batch.compression_id == codec
    assert batch.base_offset == recs[0].offset and batch.last_offset == recs[-1].offset
    assert batch.max_timestamp == max(r.timestamp for r in recs)
    assert batch.partition_leader_epoch == epoch
    got = list(batch.records())
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in got] == [
        (r.offset, r.timestamp, r.key, r.value, r.headers) for r in recs
    ]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [0, 1, 2, 3])
@SETTINGS
@given(recs=records(headers=False))
def test_legacy_round_trip(magic, codec, recs):
    data = legacy.build_entries(recs, magic, compression_id=codec)
    entries = list(iter_entries(data, validate=True))
    assert len(entries) == (1 if codec else len(recs))
    got = [r for e in entries for r in e.records()]
    want_ts = [r.timestamp if magic else -1 for r in recs]
    assert [(r.offset, r.timestamp, r.key, r.value) for r in got] == [
        (r.offset, ts, r.key, r.value) for r, ts in zip(recs, want_ts, strict=True)
    ]
    if codec:
        assert entries[0].offset == recs[-1].offset  # wrapper carries the LAST inner offset
        assert entries[0].base_offset == recs[0].offset


@SETTINGS
@given(
    recs=records(),
    pid=st.integers(min_value=0, max_value=2**63 - 1),
    seq=st.integers(min_value=0, max_value=2**31 - 1),
)
def test_producer_fields_and_sequence_wrap(recs, pid, seq):
    data = v2.build_batch(
        recs,
        recs[0].offset,
        producer_id=pid,
        producer_epoch=3,
        base_sequence=seq,
        transactional=True,
    )
    batch = v2.RecordBatch(data, 0)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (pid, 3, seq)
    assert batch.is_transactional and not batch.is_control
    expected_last = (seq + batch.last_offset_delta) % (2**31)
    assert batch.last_sequence == expected_last
    assert [r.sequence for r in batch.records()][-1] == expected_last


def test_log_append_time_overrides_record_timestamps():
    recs = [Record(b"k", b"v", 5, [], 0), Record(b"k", b"v", 6, [], 1)]
    batch = v2.RecordBatch(v2.build_batch(recs, 0, log_append_time=999), 0)
    assert batch.timestamp_type == "LogAppendTime" and batch.max_timestamp == 999
    assert [r.timestamp for r in batch.records()] == [999, 999]


def test_empty_batch_and_gaps():
    empty = v2.RecordBatch(v2.build_batch([], 10, last_offset=14), 0)
    assert (empty.records_count, empty.base_offset, empty.last_offset) == (0, 10, 14)
    assert list(empty.records()) == []
    gappy = [Record(b"a", b"1", 1, [], 20), Record(b"b", b"2", 2, [], 24)]
    batch = v2.RecordBatch(v2.build_batch(gappy, 15, last_offset=29), 0)
    assert batch.last_offset == 29 and [r.offset for r in batch.records()] == [20, 24]


def test_delete_horizon():
    recs = [Record(b"a", None, 100, [], 0)]
    batch = v2.RecordBatch(v2.build_batch(recs, 0, delete_horizon_ms=5000), 0)
    assert batch.delete_horizon_ms == 5000
    assert [r.timestamp for r in batch.records()] == [100]


def test_control_batch():
    from kseg.format import control

    rec = Record(control.end_txn_key(False), control.end_txn_value(7), 1, [], 3)
    batch = v2.RecordBatch(
        v2.build_batch([rec], 3, control=True, transactional=True, producer_id=9, producer_epoch=0),
        0,
    )
    ctl = batch.control_record()
    assert (ctl.type_name, ctl.coordinator_epoch, ctl.version) == ("ABORT", 7, 0)
    other = Record(control.KEY.pack(0, 2), b"\x00\x00", 1, [], 4)
    batch = v2.RecordBatch(v2.build_batch([other], 4, control=True), 0)
    assert batch.control_record().type_name == "LEADER_CHANGE"


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        (b"\x00\x00\x00", None, "key shorter than 4 bytes"),
        (None, None, "key shorter than 4 bytes"),
        (b"\xff\xff\x00\x01", b"\x00\x00\x00\x00\x00\x01", "negative version -1"),
        (b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x01", "shorter than 6 bytes (5 bytes)"),
        (b"\x00\x00\x00\x01", b"", "shorter than 6 bytes (0 bytes)"),
        (b"\x00\x00\x00\x01", None, "shorter than 6 bytes (null)"),
        (b"\x00\x00\x00\x00", b"\xff\xfe\x00\x00\x00\x01", "negative version -2"),
    ],
)
def test_unreadable_end_txn_marker_is_invalid_control(key, value, problem):
    # Kafka: ControlRecordType.parse / EndTransactionMarker.deserializeValue throw on these
    from kseg.format import control
    from kseg.format.errors import INVALID_CONTROL, CorruptionError

    with pytest.raises(CorruptionError) as err:
        control.parse_control(key, value)
    assert err.value.kind == INVALID_CONTROL and problem in str(err.value)


def test_newer_end_txn_marker_is_read_as_version_0():
    # Kafka: EndTransactionMarker.deserializeValue -- "Received end transaction marker value
    # version {}. Parsing as version 0"; bytes after the first 6 are not read.
    from kseg.format import control

    rec = Record(control.end_txn_key(True, 1), control.end_txn_value(7, 1) + b"xyzw", 1, [], 0)
    batch = v2.RecordBatch(v2.build_batch([rec], 0, control=True, transactional=True), 0)
    ctl = batch.control_record(end_txn=True)
    assert (ctl.type_name, ctl.coordinator_epoch, ctl.version, ctl.value_version) == (
        "COMMIT",
        7,
        1,
        1,
    )
    assert ctl.trailing_bytes == 4 and "value version 1" in ctl.unusual


@given(
    commit=st.booleans(),
    key_version=st.integers(0, 0x7FFF),
    value_version=st.integers(0, 0x7FFF),
    epoch=st.integers(-(2**31), 2**31 - 1),
    extra=st.binary(max_size=16),
)
def test_end_txn_marker_round_trip_any_non_negative_version(
    commit, key_version, value_version, epoch, extra
):
    """Kafka reads any non-negative key/value version as version 0 and ignores extra value bytes
    (ControlRecordType.parse, EndTransactionMarker.deserializeValue)."""
    from kseg.format import control

    ctl = control.end_txn_marker(
        control.end_txn_key(commit, key_version),
        control.end_txn_value(epoch, value_version) + extra,
    )
    assert (ctl.type_name, ctl.coordinator_epoch) == ("COMMIT" if commit else "ABORT", epoch)
    assert (ctl.version, ctl.value_version, ctl.trailing_bytes) == (
        key_version,
        value_version,
        len(extra),
    )
    assert (ctl.unusual is None) == (key_version == value_version == 0 and not extra)
