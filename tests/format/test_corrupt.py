"""Every corrupt fixture, and every lie a header can tell, gives a clean positioned error."""

from __future__ import annotations

import struct

import pytest

import kseg
from kseg.format import batch as v2
from kseg.format import errors as E
from kseg.format import legacy
from kseg.format.log import iter_entries
from kseg.format.offset_index import OffsetIndex
from kseg.format.record import Record


def _read_all(log):
    n = 0
    for b in kseg.read_batches(log):
        for _ in b.records():
            n += 1
    return n


def test_each_corrupt_fixture_reports_kind_position_and_file(corrupt_cases):
    names = {c.name for c in corrupt_cases}
    assert {
        "torn-tail",
        "garbage-tail",
        "zero-tail",
        "crc-flip",
        "lying-length",
        "index-past-end",
    } <= names
    for case in corrupt_cases:
        log = case.partition_dir / "00000000000000000000.log"
        if case.file != log:
            continue
        with pytest.raises(kseg.CorruptionError) as err:
            _read_all(log)
        e = err.value
        assert (e.kind, e.position) == (case.kind, case.position), case.name
        assert e.file == str(log)
        assert str(log) in str(e) and f"byte {case.position}" in str(e)


def test_entries_before_the_corruption_are_still_yielded(corrupt_cases):
    case = next(c for c in corrupt_cases if c.name == "crc-flip")
    seen = []
    with pytest.raises(kseg.CorruptionError):
        for b in kseg.read_batches(case.file):
            seen.append(b.position)
    assert seen and seen[-1] < case.position and max(seen) + 1 <= case.valid_bytes


def test_crc_error_carries_stored_and_computed(corrupt_cases):
    case = next(c for c in corrupt_cases if c.name == "crc-flip")
    with pytest.raises(kseg.CorruptionError) as err:
        _read_all(case.file)
    assert err.value.stored is not None and err.value.stored != err.value.computed
    assert "stored" in str(err.value) and err.value.field == "crc"


def test_without_validation_the_bad_crc_batch_is_still_readable(corrupt_cases):
    case = next(c for c in corrupt_cases if c.name == "crc-flip")
    bad = [b for b in kseg.read_batches(case.file, validate=False) if not b.crc_valid]
    assert [b.position for b in bad] == [case.position]


def test_index_past_end_is_visible_to_a_reader(corrupt_cases):
    case = next(c for c in corrupt_cases if c.name == "index-past-end")
    idx = OffsetIndex(case.file.read_bytes(), 0)
    assert idx.entry(len(idx) - 1).position > case.valid_bytes


def _batch(records=3, **kw):
    recs = [Record(b"k%d" % i, b"v" * 20, 1000 + i, [("h", b"x")], i) for i in range(records)]
    return bytearray(v2.build_batch(recs, 0, **kw))


def _refresh_crc(buf):
    from kseg.format.crc import crc32c

    struct.pack_into(">I", buf, v2.CRC_POS, crc32c(bytes(buf[v2.CRC_COVERAGE_START :])))
    return bytes(buf)


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        (
            lambda b: struct.pack_into(">i", b, v2.FIELD_POS["records_count"], 1_000_000_000),
            "declares 1000000000",
        ),
        (
            lambda b: struct.pack_into(">i", b, v2.FIELD_POS["records_count"], -1),
            "negative records count",
        ),
        (
            lambda b: struct.pack_into(">i", b, v2.FIELD_POS["records_count"], 2),
            "after the last of 2 records",
        ),
        (lambda b: b.__setitem__(v2.HEADER_SIZE, 0x7E), "fields end at 33 but its length says 64"),
        (lambda b: b.__setitem__(v2.HEADER_SIZE, 0x0F), "record length -8 does not fit"),
        (lambda b: b.__setitem__(v2.HEADER_SIZE + 4, 0x7E), "key length 63 exceeds"),
        (lambda b: b.__setitem__(v2.HEADER_SIZE + 4, 0x05), "invalid key length -3"),
    ],
)
def test_lying_record_fields_are_positioned_errors(patch, message):
    buf = _batch()
    patch(buf)
    batch = next(iter_entries(_refresh_crc(buf), validate=True))
    with pytest.raises(kseg.CorruptionError, match=message) as err:
        list(batch.records())
    assert err.value.position == 0 and err.value.field.startswith("records[")


def test_lying_header_count_is_refused_without_looping():
    recs = [Record(b"k", b"v", 1, [("a", b"b")], 0)]
    buf = bytearray(v2.build_batch(recs, 0))
    # header count varint sits right before the header key length; find it via the record layout
    idx = bytes(buf).rindex(b"\x02\x02a")  # count=1 (zigzag 2), key length 1 (2), 'a'
    buf[idx] = 0x7E  # 63 headers in a 10-byte record
    batch = next(iter_entries(_refresh_crc(buf), validate=True))
    with pytest.raises(kseg.CorruptionError, match="invalid header count 63"):
        list(batch.records())


def test_truncated_buffers_never_raise_anything_but_corruption():
    data = bytes(_batch(5, compression_id=1)) + legacy.build_entries(
        [Record(b"a", b"b", 5, [], 10), Record(b"c", b"d", 6, [], 11)], 1, compression_id=2
    )
    for cut in range(len(data)):
        try:
            for e in iter_entries(data[:cut], validate=True):
                list(e.records())
        except kseg.CorruptionError as exc:
            assert exc.position is not None
            assert exc.kind in (E.TORN_TAIL, E.INVALID_SIZE, E.ZERO_FILLED_TAIL)


def test_random_byte_flips_never_escape_as_other_exceptions():
    import random

    rnd = random.Random(7)
    base = bytes(_batch(6, compression_id=3)) + bytes(_batch(4, compression_id=4))
    base += legacy.build_entries([Record(b"a", b"b" * 30, 5, [], 10)] * 1, 0, compression_id=1)
    for _ in range(600):
        buf = bytearray(base)
        for _ in range(rnd.randint(1, 4)):
            buf[rnd.randrange(len(buf))] = rnd.randrange(256)
        try:
            for e in iter_entries(bytes(buf), validate=False):
                try:
                    e.validate()
                except kseg.CorruptionError:
                    pass
                list(e.records())
        except kseg.CorruptionError as exc:
            assert exc.position is not None


def test_magic_is_read_as_kafka_reads_it():
    """Kafka: FileLogInputStream.FileChannelRecordBatch -- a (signed) magic >= 2 is a v2 batch,
    below 2 a legacy message. The v2 magic byte lies outside the CRC, so magic 7 still validates;
    a negative magic (a legacy message of unknown magic) is corruption."""
    buf = _batch()
    buf[16] = 7
    (entry,) = iter_entries(bytes(buf), validate=True)
    assert isinstance(entry, kseg.RecordBatch) and entry.magic == 7 and entry.crc_valid
    buf[16] = 0x80  # -128 as a Java byte
    with pytest.raises(kseg.CorruptionError) as err:
        list(iter_entries(bytes(buf)))
    assert err.value.kind == E.INVALID_MAGIC and err.value.position == 0


def test_walkers_release_only_pages_behind_the_current_entry():
    """Long walks unmap what they passed (bounded resident memory); never the current entry."""
    import mmap

    from kseg.format.log import _Behind, iter_entries, walk_headers

    data = b"".join(bytes(_batch(40)) for _ in range(400))

    class Advised(bytes):
        calls: list = []

        def madvise(self, flag, start, length):
            assert flag == mmap.MADV_DONTNEED and start % 4096 == 0 and length > 0
            self.calls.append((start, start + length))

    buf = Advised(data)
    old_step = _Behind.STEP
    _Behind.STEP = 64 << 10  # small steps so a 1 MB buffer exercises it
    try:
        positions = []
        for e in iter_entries(buf):
            if Advised.calls:
                assert Advised.calls[-1][1] <= e.position  # nothing at or after the entry
            positions.append(e.position)
        n_iter = len(Advised.calls)
        assert n_iter > 5 and Advised.calls[0][0] == 0
        assert all(
            a[1] == b[0] for a, b in zip(Advised.calls, Advised.calls[1:], strict=False)
        )  # contiguous
        Advised.calls.clear()
        assert [h[0] for h in walk_headers(buf)] == positions
        assert len(Advised.calls) == n_iter
    finally:
        _Behind.STEP = old_step
