"""Issue 35, item 1: a record line longer than a part goes out of the kernel a part at a time
(JsonRecords.render's step/hpos), byte for byte the core's lines, whatever part size cuts it."""

from __future__ import annotations

import orjson
import pytest

from kseg.format.batch import HEADER_SIZE, RecordBatch, build_batch
from kseg.format.record import Record

from .diff import KERNEL_MODES, core_json

NAME = "f.log"


def headers_record(n: int, value: bytes | None, *, key: str = "h", offset: int = 0) -> Record:
    hs = [(f"{key}{i % 7}", None if value is None else value * (i % 3)) for i in range(n)]
    return Record(b"k", b"v" * 50, 1_700_000_000_000 + offset, hs)


BATCHES = {
    # (records, what cuts them)
    "empty headers": [Record(None, None, 1_700_000_000_000, [("", b"")] * 300)],
    "null values": [headers_record(200, None)],
    "binary values": [headers_record(120, b"\x00\xff\x01")],
    "invalid utf-8 keys": [
        Record(
            b"k",
            None,
            1_700_000_000_000,
            [(b"\xff\xfe\x80k" * (i % 4), b"\t\n") for i in range(90)],
        )
    ],
    "long value, few headers": [Record(b"k", b"\x01" * 3000, 1_700_000_000_000, [("a", b"b")] * 3)],
    "several records": [headers_record(n, b"xy", offset=n) for n in (0, 150, 1, 80, 0)],
    "no headers": [Record(b"k", b"v" * 400, 1_700_000_000_000 + i) for i in range(5)],
}


def batch_of(case: str) -> bytes:
    return build_batch([r._replace(offset=i) for i, r in enumerate(BATCHES[case])], 0)


def kernel_lines(k, buf: bytes, mode: str, max_out: int, limit: int | None = None) -> bytes:
    """JsonRecords.render called as kseg.dump.kernel_records calls it, until the batch is done:
    every part's text, joined."""
    batch = RecordBatch(buf, 0)
    lines = k.JsonRecords(orjson.dumps(NAME), mode, None, None, None, None)
    start, end = HEADER_SIZE, batch.size
    done, validated, step, hpos, left = 0, False, 0, 0, limit
    out = []
    calls = 0
    while start >= 0:
        got = lines.render(
            buf, start, end, batch.records_count, batch.base_offset, batch.base_timestamp,
            None, batch.base_sequence, done, validated, left, max_out, step, hpos,
        )  # fmt: skip
        assert got is not None
        text, start, done, emitted, _lo, _hi, step, hpos = got
        assert step == 0 or start >= 0  # a line that goes on is called again
        validated = True
        if left is not None:
            left -= emitted
        out.append(text)
        calls += 1
        assert calls < 100_000
    return b"".join(out)


@pytest.mark.parametrize("case", sorted(BATCHES))
@pytest.mark.parametrize("max_out", [1, 9, 64, 700, 1 << 22])
def test_long_lines_cut_anywhere_are_the_cores(k, case, max_out):
    buf = batch_of(case)
    for mode in KERNEL_MODES:
        expected = core_json(buf, 0, NAME, mode)
        assert expected is not None and expected.count(b"\n") == len(BATCHES[case])
        got = kernel_lines(k, buf, mode, max_out)
        assert got == expected, (case, mode, max_out)


@pytest.mark.parametrize("limit", [0, 1, 2])
def test_limit_reached_inside_a_long_line_finishes_it(k, limit):
    """--limit counts a record when its line begins: the last one shown is finished, then the
    batch ends."""
    buf = batch_of("several records")
    expected = core_json(buf, 0, NAME, "auto").splitlines(keepends=True)[:limit]
    assert kernel_lines(k, buf, "auto", 50, limit=limit) == b"".join(expected)


def test_a_part_never_holds_much_more_than_max_out(k):
    """However long a record's line, each part stops at a header once it holds max_out bytes."""
    buf = batch_of("empty headers")
    batch = RecordBatch(buf, 0)
    lines = k.JsonRecords(orjson.dumps(NAME), "auto", None, None, None, None)
    start, done, validated, step, hpos, sizes = HEADER_SIZE, 0, False, 0, 0, []
    while start >= 0:
        text, start, done, _e, _lo, _hi, step, hpos = lines.render(
            buf, start, batch.size, batch.records_count, batch.base_offset, batch.base_timestamp,
            None, batch.base_sequence, done, validated, None, 100, step, hpos,
        )  # fmt: skip
        validated = True
        sizes.append(len(text))
    assert len(sizes) > 10
    assert max(sizes) <= 100 + 900  # a part: max_out, plus the line's head or one header


# --- the kernel out of room: the core's path, or kseg's out-of-memory line -----------------------


class NoRoom:
    """kernel_json.json_records' object as a kernel that finds no room (its try_reserve failing:
    MemoryError): a run always; a batch's render on its first part, or (``later``) on the parts
    after it."""

    def __init__(self, inner, later: bool):
        self.inner, self.later = inner, later

    def render(self, *args):
        validated = args[9]
        if validated == self.later:
            raise MemoryError("kernel: out of memory")
        return self.inner.render(*args)

    def run(self, *args):
        raise MemoryError("kernel: out of memory")


@pytest.fixture
def partition(tmp_path):
    import kseg

    pdir = tmp_path / "t-0"
    with kseg.LogWriter(pdir, clock=lambda: 1_700_000_000_000) as w:
        for codec in ("none", "gzip"):
            for i in range(3):
                recs = [headers_record(20 * i, b"v", offset=j) for j in range(4)]
                w.append(recs, compression=codec)
    return next(pdir.glob("*.log"))


def no_room(monkeypatch, later: bool) -> None:
    from kseg.dump import kernel_json

    real = kernel_json.json_records

    def wrapped(*args, **kw):
        inner = real(*args, **kw)
        return None if inner is None else NoRoom(inner, later)

    monkeypatch.setattr(kernel_json, "json_records", wrapped)
    monkeypatch.setattr(kernel_json, "JSON_PART", 300)  # several parts per batch


def test_no_room_for_a_run_or_a_first_part_is_the_cores_path(k, monkeypatch, partition):
    from .diff import dump_run

    expected = dump_run(partition, "python", "auto")
    no_room(monkeypatch, later=False)
    assert dump_run(partition, "rust", "auto") == expected
    assert expected.count(b'{"type":"record"') == 24


def test_no_room_for_a_later_part_is_out_of_memory(k, monkeypatch, partition):
    """Lines of the batch are out: the core cannot take it over, so it is kseg's out-of-memory
    error (one line, exit 8), as the core's own MemoryError is."""
    from .diff import dump_run

    no_room(monkeypatch, later=True)
    with pytest.raises(MemoryError):
        dump_run(partition, "rust", "auto")
