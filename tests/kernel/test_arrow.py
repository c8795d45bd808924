"""Records -> Arrow (kseg.spark.arrow.record_batches): the kernel path
(kseg.spark.kernel_arrow.spark_records) against the pure-Python decoder on every fixture, the
real broker data, and hypothesis-made segments with lies whose CRCs are made right again: equal
tables, the same warnings."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("pyarrow")

import kseg  # noqa: E402
from kseg.format.timestamps import MAX_MS, MIN_MS  # noqa: E402
from kseg.spark import planning  # noqa: E402
from kseg.spark.planning import Prune, Task  # noqa: E402

from .diff import arrow_run, check_arrow, kernel_arrow_rows  # noqa: E402
from .test_differential import batches, fix_crcs, make_segment, patched_segment  # noqa: E402


def tasks_of(*roots, max_bytes: int = planning.DEFAULT_MAX_BYTES) -> list[Task]:
    return planning.plan([str(r) for r in roots], Prune(), max_bytes)


def test_fixture_tree(tree, k):
    tasks = tasks_of(tree)
    assert len(tasks) >= 7
    decoded = sum(check_arrow(t) for t in tasks)
    assert decoded >= 1000  # the kernel decoded real batches, not only declined


def test_split_ranges_and_remote_reads(tree, k):
    """Tasks of a few KiB (start > 0), read as file:// URIs (a byte range in memory, shift > 0)."""
    tasks = tasks_of(tree / "orders-0", max_bytes=4096)
    assert any(t.start > 0 for t in tasks)
    remote = [Task(**{**t.to_dict(), "path": "file://" + t.path}) for t in tasks]
    assert sum(check_arrow(t) for t in tasks + remote) > 0


def test_corrupt_tree(corrupt_cases, k):
    decoded = warned = 0
    for case in corrupt_cases:
        for t in tasks_of(case.partition_dir):
            decoded += check_arrow(t, options=({}, {"include_control": True}))
            warned += bool(arrow_run(t, "rust")[1])
    assert decoded > 0 and warned >= len(corrupt_cases) // 2  # the cases reach the core's path


def test_real_broker_data(real_root, k):
    dirs = [d for d in sorted(real_root.iterdir()) if d.is_dir()]
    tasks = tasks_of(*dirs)
    assert tasks, "no segments under shared/real"
    assert (
        sum(
            check_arrow(t, options=({}, {"include_headers": True, "segment_columns": True}))
            for t in tasks
        )
        > 1000
    )


def test_window_and_chunk_edges(tree, k, monkeypatch):
    """Batches across the kernel's read windows go to the core; chunks of 7 rows stay 7."""
    from kseg.spark import arrow
    from kseg.storage import kernel_walk

    monkeypatch.setattr(kernel_walk, "WINDOW", 1500)
    monkeypatch.setattr(arrow, "ROWS_PER_BATCH", 7)
    tasks = tasks_of(tree / "orders-0", tree / "txn-0")
    assert sum(check_arrow(t) for t in tasks) > 0


def test_values_the_core_nulls(tmp_path, k):
    """Timestamps no date holds and offsets past 2^63-1: the core's nulls and warnings."""
    pdir = tmp_path / "odd-0"
    with kseg.LogWriter(pdir) as w:
        for i, ts in enumerate([1_700_000_000_000, MAX_MS + 1, MAX_MS, MIN_MS - 1, MIN_MS, -5]):
            w.append([kseg.Record(key=b"k%d" % i, value=b"v", timestamp=ts)] * 3)
    (t,) = tasks_of(pdir)
    check_arrow(t)
    table, err, _ = arrow_run(t, "rust")
    assert table.column("timestamp").null_count == 6 and "outside the years" in err


def test_zero_copy_buffers(k):
    """The data buffers pyarrow gets are the kernel's own memory (no copy on the way)."""
    from kseg.format.batch import build_batch
    from kseg.format.record import Record

    data = b"".join(build_batch([Record(b"k%d" % i, b"v" * i, 5, [], i)], i) for i in range(50))
    r = k.Records(False, False, False, None, None, None, None, 0, MIN_MS, MAX_MS, [b"none"])
    stop, reason = r.walk(data, 0, len(data), 1 << 30)
    assert (stop, reason) == (len(data), 0) and r.rows > 0
    out = r.take()
    valid, offsets, values, nulls = out["value"]
    import pyarrow as pa

    from kseg.spark.kernel_arrow import _binary

    arr = _binary(pa, pa.binary(), out["value"])
    assert (
        arr.buffers()[2].address == values.address and arr.buffers()[1].address == offsets.address
    )
    assert out["rows"] == 50 and valid is None and nulls == 0
    assert arr.to_pylist() == [b"v" * i for i in range(50)]
    assert r.rows == 0  # take() starts a new chunk


def test_hostile_counts_are_not_trusted(k):
    """A records count of 2^31-1 in a tiny batch: nothing allocated for it, the core's turn."""
    from kseg.format.batch import build_batch
    from kseg.format.record import Record

    buf = bytearray(build_batch([Record(b"k", b"v", 5, [], 0)], 0))
    buf[57:61] = (2**31 - 1).to_bytes(4, "big")
    fix_crcs(buf)
    r = k.Records(True, True, True, None, None, None, None, 0, MIN_MS, MAX_MS, [b"none"])
    assert r.walk(bytes(buf), 0, len(buf), 8192) == (0, 2) and r.rows == 0
    assert r.decompressed(bytes(buf), 0, bytes(buf[61:])) is False
    assert r.walk(bytes(buf), -9, 10**12, 8192) == (0, 2)


def write_partition(root: Path, buf: bytes) -> Task:
    pdir = root / "fuzz-0"
    pdir.mkdir(parents=True, exist_ok=True)
    log = pdir / "00000000000000000000.log"
    log.write_bytes(buf)
    return Task(str(log), "fuzz", 0, 0, 0, len(buf))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spec=batches)
def test_fuzz_valid_segments(spec, k, tmp_path):
    buf = make_segment(spec)
    t = write_partition(tmp_path, buf)
    check_arrow(t)
    assert kernel_arrow_rows(t) == arrow_run(t, "python")[0].num_rows  # all the kernel's


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    spec=batches,
    patches=st.lists(
        st.tuples(st.integers(0, 10**6), st.binary(min_size=1, max_size=3)), max_size=4
    ),
    cut=st.one_of(st.none(), st.integers(0, 10**6)),
    fix=st.booleans(),
)
def test_fuzz_mutated_segments(spec, patches, cut, fix, k, tmp_path):
    check_arrow(write_partition(tmp_path, patched_segment(spec, patches, cut, fix)))


def test_timestamp_sums_wrap_like_java(tmp_path, k):
    """baseTimestamp + delta is a Java long sum: 2^63-1 + (2^63-1) is -2 on both paths."""
    from kseg.format.batch import build_batch
    from kseg.format.record import Record

    top = (1 << 63) - 1
    recs = [Record(b"a", b"v", 0, [], 0), Record(b"b", b"v", top, [], 1)]
    buf = bytearray(build_batch(recs, 0, base_timestamp=0, max_timestamp=top))
    buf[27:35] = top.to_bytes(8, "big", signed=True)  # base timestamp: record a is 2^63-1
    fix_crcs(buf)
    t = write_partition(tmp_path, bytes(buf))
    opts = {"to_time": 10**13}  # drops record a (a null with a warning otherwise)
    assert check_arrow(t, options=(opts,)) == 1  # the kernel decoded record b itself
    table = arrow_run(t, "rust", **opts)[0]
    assert table.column("key").to_pylist() == [b"b"]
    assert table.column("timestamp").cast("int64").to_pylist() == [-2000]
