"""Issue 33: a walk's read window reuses the pages it has passed (storage.mapped.ShadowMap moves
them to where the next read lands instead of releasing them and faulting new ones in), and
every guarantee of the window holds: the bytes are the file's, a file cut between two windows
is a FileShrankError naming the byte, what lies past the read or behind the window reads as
zeros, never stale bytes."""

from __future__ import annotations

import os
import sys

import pytest

from kseg import LogWriter, Record
from kseg.fixtures.tree import FixedClock
from kseg.format.log import walk_headers
from kseg.storage import mapped
from kseg.storage.mapped import FileShrankError, ShadowMap

STEP = 16 << 10
LINUX = sys.platform.startswith("linux")


@pytest.fixture
def small_steps(monkeypatch):
    monkeypatch.setattr(mapped, "FILL_STEP", STEP)
    monkeypatch.setattr(mapped, "KEEP_BEHIND", 4 * STEP)
    monkeypatch.setattr(mapped, "MOVE_BLOCK", 8 << 10)
    moved = []
    real = ShadowMap._recycle

    def spy(self, lo, upto, target):
        start = real(self, lo, upto, target)  # where the window starts after the move
        moved.append(start - lo)
        return start

    monkeypatch.setattr(ShadowMap, "_recycle", spy)
    return moved


def _segment(tmp_path, batches: int = 120, value: int = 3000):
    with LogWriter(tmp_path / "t-0", clock=FixedClock()) as w:
        for i in range(batches):
            info = w.append([Record(key=b"k%d" % i, value=bytes([i % 251]) * value)])
    return info.segment


def _walk_window_by_window(buf, size: int, step: int = 5000):
    """Ensure [pos, pos + step) window after window, comparing each with the file's bytes."""
    with open(buf.path, "rb") as f:
        data = f.read()
    pos = 0
    while pos < size:
        end = min(size, pos + step)
        buf.ensure(pos, end)
        assert buf[pos:end] == data[pos:end]
        pos = end
    return data


def test_a_long_walk_moves_its_passed_pages_ahead_and_reads_the_file(tmp_path, small_steps):
    log = _segment(tmp_path)
    size = log.stat().st_size
    assert size > 20 * STEP
    with mapped.mapped(log) as buf:
        _walk_window_by_window(buf, size)
        assert buf.hi == size and buf.hi - buf.lo <= 6 * STEP  # bounded window
        assert buf[: buf.lo].count(0) == buf.lo  # passed pages read as zeros, mapped
    if LINUX:
        assert sum(small_steps) > size // 2  # most of the window's memory was reused


def test_walk_headers_over_a_reused_window_is_the_walk_over_the_bytes(tmp_path, small_steps):
    log = _segment(tmp_path)
    with mapped.mapped(log) as buf:
        rows = list(walk_headers(buf))
    assert rows == list(walk_headers(log.read_bytes()))
    assert len(rows) == 120


def test_a_file_cut_between_windows_names_the_byte_and_leaves_no_old_bytes(tmp_path, small_steps):
    log = _segment(tmp_path)
    size = log.stat().st_size
    with mapped.mapped(log) as buf:
        pos = 0
        while pos < size // 2:
            pos = buf.ensure(pos, pos + 5000)
        cut = buf.hi + STEP + 123  # inside the next fill, which lands in moved pages
        os.truncate(log, cut)
        with pytest.raises(FileShrankError) as exc:
            while True:
                pos = buf.ensure(pos, pos + 5000)
        assert exc.value.position == cut
        assert buf.hi <= cut
        tail = buf[cut : min(size, cut + 6 * STEP)]
        assert tail.count(0) == len(tail)  # not the bytes the moved pages held before


def test_a_file_grown_between_windows_is_read_to_its_size_at_open(tmp_path, small_steps):
    log = _segment(tmp_path)
    size = log.stat().st_size
    with mapped.mapped(log) as buf:
        pos = 0
        while pos < size // 2:
            pos = buf.ensure(pos, pos + 5000)
        with open(log, "ab") as f:
            f.write(b"\xff" * (3 * STEP))
        assert buf.ensure(pos, size + 3 * STEP) == size
        assert len(buf) == size
        with open(log, "rb") as f:
            assert buf[pos:size] == f.read()[pos:size]


def test_a_jump_back_after_moved_pages_reads_the_file_again(tmp_path, small_steps):
    log = _segment(tmp_path)
    size = log.stat().st_size
    with mapped.mapped(log) as buf:
        data = _walk_window_by_window(buf, size)
        buf.ensure(100, 9000)
        assert buf[100:9000] == data[100:9000]
        _walk_window_by_window(buf, size)


def test_two_walks_interleaved_keep_their_own_bytes(tmp_path, small_steps):
    a = _segment(tmp_path / "a")
    b = _segment(tmp_path / "b", value=2500)
    with mapped.mapped(a) as ma, mapped.mapped(b) as mb:
        da, db = a.read_bytes(), b.read_bytes()
        pa = pb = 0
        while pa < len(da) or pb < len(db):
            if pa < len(da):
                pa = ma.ensure(pa, min(len(da), pa + 7000))
                assert ma[ma.lo : pa] == da[ma.lo : pa]
            if pb < len(db):
                pb = mb.ensure(pb, min(len(db), pb + 3000))
                assert mb[mb.lo : pb] == db[mb.lo : pb]
    assert sum(small_steps) > 0 or not LINUX


def test_without_mremap_the_passed_pages_are_released_as_before(tmp_path, small_steps, monkeypatch):
    monkeypatch.setattr(mapped, "_mremap", False)
    log = _segment(tmp_path)
    size = log.stat().st_size
    with mapped.mapped(log) as buf:
        _walk_window_by_window(buf, size)
        assert buf.hi - buf.lo <= 6 * STEP
    assert not any(small_steps)
