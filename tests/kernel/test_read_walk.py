"""The kernel's fused read and walk (``read_walk``: kseg.storage.mapped.ShadowMap.read_walk,
kernel_walk.walk_blocks): it reads the file into the buffer piece by piece and walks behind
each piece, so the CRC reads a batch while it is in the CPU's cache. Whatever the pieces, the
start, the window and the batches (valid, torn, lying, legacy, cut short), the buffer then holds
the file's bytes and the rows, stop and reason are exactly the plain ``walk``'s over the same
bytes; a read cut short (the file shrank) keeps what it walked and says "call again"."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kseg.format.batch import HEADER_SIZE, MIN_BATCH_LENGTH
from kseg.storage import kernel_walk, mapped
from kseg.storage.kernel_walk import ROW
from kseg.storage.mapped import FileShrankError

from .diff import v2_positions
from .test_differential import batches, make_segment, patched_segment, segments

LIMIT, OTHER = 1, 2  # walk.rs STOP_LIMIT, STOP_OTHER


def _cut_short(data: bytes, pos: int, avail: int) -> bool:
    """walk.rs cut_short: the entry at ``pos`` may be a plain batch not all read by ``avail``."""
    if avail - pos < HEADER_SIZE:
        return True
    length = int.from_bytes(data[pos + 8 : pos + 12], "big", signed=True)
    return data[pos + 16] == 2 and length >= MIN_BATCH_LENGTH and length + 12 > avail - pos


def _fused(k, path, data: bytes, read_from, read_to, walk_from, walk_end, max_batches, piece):
    """read_walk into a buffer whose [0, read_from) holds the file's bytes (read before) and
    whose rest holds junk (pages a window moved ahead): the result and the buffer after."""
    buf = bytearray(data[:read_from] + b"\xa5" * (len(data) - read_from))
    fd = os.open(path, os.O_RDONLY)
    try:
        got = k.read_walk(fd, buf, read_from, read_to, walk_from, walk_end, max_batches, piece)
    finally:
        os.close(fd)
    return got, bytes(buf)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    spec=batches,
    patches=st.lists(
        st.tuples(st.integers(0, 10**6), st.binary(min_size=1, max_size=3)), max_size=3
    ),
    cut=st.one_of(st.none(), st.integers(0, 10**6)),
    fix=st.booleans(),
    at=st.tuples(*[st.integers(0, 10**6)] * 4),
    from_a_batch=st.booleans(),
    whole=st.booleans(),
    max_batches=st.sampled_from([1, 2, 3, 1 << 30]),
    piece=st.sampled_from([1, 7, 61, 300, 4096, 1 << 20]),
)
def test_fused_walk_is_the_walk_over_the_bytes(
    tmp_path_factory, spec, patches, cut, fix, at, from_a_batch, whole, max_batches, piece, k
):
    data = patched_segment(spec, patches, cut, fix)
    path = tmp_path_factory.mktemp("rw") / "00000000000000000000.log"
    path.write_bytes(data)
    n = len(data) + 1
    starts = [0, *v2_positions(data)]
    # the walk starts where a walker asks: mostly at an entry, from inside what it reads
    walk_from = starts[at[0] % len(starts)] if from_a_batch else at[0] % n
    read_from = min(walk_from, at[1] % n)
    read_to = max(walk_from, at[2] % n)
    walk_end = len(data) if whole else at[3] % n
    (rows, stop, reason, read_end), buf = _fused(
        k, path, data, read_from, read_to, walk_from, walk_end, max_batches, piece
    )
    expected = k.walk(data, walk_from, min(walk_end, read_to), max_batches)
    if expected[2] == OTHER and read_to < walk_end and _cut_short(data, expected[1], read_to):
        # a plain batch that only ends past this read, inside the window: "call again" (the
        # next call reads on); the plain walk leaves it to the core
        expected = (*expected[:2], LIMIT)
    assert (rows, stop, reason) == expected
    if len(rows) == max_batches * ROW.size and reason == LIMIT:
        assert stop <= read_end <= read_to  # the rows are full: the read stops there too
    else:
        assert read_end == read_to
    assert buf[:read_end] == data[:read_end]
    assert buf[read_end:] == b"\xa5" * (len(data) - read_end)  # nothing past what was read


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spec=batches, short=st.integers(0, 10**6), piece=st.sampled_from([1, 50, 4096]))
def test_a_read_cut_short_keeps_what_it_walked(tmp_path_factory, spec, short, piece, k):
    """The file is shorter than the read asks (it shrank since the window was sized): the read
    ends at its end, the rows walked stand (a prefix of the walk over the whole), and the walk
    says "call again" from where it stopped, unless it had stopped before for its own reason."""
    data = make_segment(spec)
    cut = short % (len(data) + 1)
    path = tmp_path_factory.mktemp("rw") / "00000000000000000000.log"
    path.write_bytes(data[:cut])
    (rows, stop, reason, read_end), buf = _fused(
        k, path, data, 0, len(data), 0, len(data), 1 << 30, piece
    )
    assert read_end == cut and buf[:cut] == data[:cut]
    whole, _, _ = k.walk(data, 0, len(data), 1 << 30)
    assert whole.startswith(rows) and stop <= cut
    if cut < len(data):
        assert reason == LIMIT


def test_bad_arguments_are_errors_not_crashes(tmp_path, k):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(make_segment([([(b"k", b"v", [], 0)], 0, False, None, 0)]))
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(BufferError):
            k.read_walk(fd, bytes(100), 0, 100, 0, 100, 10, 4096)  # read-only
        with pytest.raises(ValueError):
            k.read_walk(-1, bytearray(100), 0, 100, 0, 100, 10, 4096)
        # a failing read (here: an fd open for writing only) reads nothing: the caller reads
        # again and reports what it finds
        bad = os.open(path, os.O_WRONLY)
        try:
            assert k.read_walk(bad, bytearray(100), 0, 100, 0, 100, 10, 4096)[1:] == (0, LIMIT, 0)
        finally:
            os.close(bad)
        # positions past the buffer are clamped to it
        got = k.read_walk(fd, bytearray(10), -5, 10**9, -5, 10**9, 10, 4096)
        assert got[3] == 10
    finally:
        os.close(fd)


@pytest.fixture
def small_windows(monkeypatch):
    """Windows of a few KiB read in pieces of 700 bytes: the fixtures' segments (1-6 KB) take
    several windows, and batches straddle pieces and windows."""
    monkeypatch.setattr(mapped, "FILL_STEP", 2 << 10)
    monkeypatch.setattr(mapped, "KEEP_BEHIND", 16 << 10)
    monkeypatch.setattr(mapped, "MOVE_BLOCK", 4 << 10)
    monkeypatch.setattr(mapped, "READ_PIECE", 700)
    monkeypatch.setattr(kernel_walk, "READ_WINDOW", 3000)


@pytest.mark.parametrize("rows", [2, 4096])
def test_walk_blocks_over_the_map_reads_through_the_kernel(
    tree, corrupt_cases, small_windows, monkeypatch, tmp_path, rows, k
):
    """Every segment of the fixture trees, window after window, rows a few at a time or many:
    the fused path is taken, and the blocks (and the error that ends a damaged walk) are
    exactly those of the walk over the file's bytes."""
    import kseg._kernel

    monkeypatch.setattr(kernel_walk, "CHUNK_BATCHES", rows)

    calls, full = [], []
    real = k.read_walk

    def spy(*args):
        calls.append(args[2:4])
        got = real(*args)
        full.append(got[3] < args[3])  # the rows filled up before the read's end
        return got

    monkeypatch.setattr(kseg._kernel, "read_walk", spy)

    def walked(buf):
        out = []
        try:
            out.extend(kernel_walk.walk_blocks(buf))
        except Exception as exc:  # noqa: BLE001 - the same error on both sides, compared below
            return b"".join(out), (type(exc), str(exc))
        return b"".join(out), None

    logs = segments(tree) + [_big_segment(tmp_path)]  # one long enough to recycle pages
    for case in corrupt_cases:
        logs += segments(case.partition_dir)
    stopped = 0
    for log in logs:
        expected = walked(log.read_bytes())
        with mapped.mapped(log) as buf:
            got = walked(buf)
        assert got == expected, log
        stopped += expected[1] is not None
    assert len(calls) > len(logs) and stopped > 0  # many windows, damaged walks among them
    assert any(full) == (rows < 10)


def _big_segment(tmp_path, batches: int = 200) -> Path:
    """~200 KB of ~1 KB batches: many windows of small_windows, pages moved ahead."""
    data = b"".join(
        make_segment([([(b"k%d" % i, bytes([i % 251]) * 900, [], i)], i, False, None, 0)])
        for i in range(batches)
    )
    log = tmp_path / "big" / "00000000000000000000.log"
    log.parent.mkdir(exist_ok=True)
    log.write_bytes(data)
    return log


def test_a_read_the_kernel_leaves_short_is_finished_by_the_map(
    tmp_path, small_windows, monkeypatch, k
):
    """The kernel's read stops short (a signal, EIO, a file that shrank and grew back): the
    map reads the rest itself, and the walk goes on exactly as over the bytes."""
    import kseg._kernel

    real = k.read_walk
    short = []

    def half(fd, buf, read_from, read_to, *rest):
        mid = read_from + (read_to - read_from) // 2
        got = real(fd, buf, read_from, mid, *rest)
        short.append(got[3] < read_to)
        return got

    monkeypatch.setattr(kseg._kernel, "read_walk", half)
    log = _big_segment(tmp_path)
    expected = b"".join(kernel_walk.walk_blocks(log.read_bytes()))
    with mapped.mapped(log) as buf:
        assert b"".join(kernel_walk.walk_blocks(buf)) == expected
    assert sum(short) > 10


def test_a_file_cut_during_the_fused_read_names_the_byte(tmp_path, small_windows, k):
    log = _big_segment(tmp_path)
    with mapped.mapped(log) as buf:
        blocks = kernel_walk.walk_blocks(buf)
        next(blocks)
        cut = buf.hi + 5000
        os.truncate(log, cut)
        with pytest.raises(FileShrankError) as exc:
            for _ in blocks:
                pass
        assert exc.value.position == cut
