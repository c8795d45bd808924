"""--isolation read_committed beyond dump: the per-batch rule (kseg.storage.isolation.Committed)
equals Kafka's streamed consumer (tests.isolation.model.ReadCommitted) from any fetch offset;
seek's latest is the last stable offset and a time answer at or past it is none (ListOffsets
under READ_COMMITTED); stats counts what the consumer gets. Through the real `kseg`."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kseg.fixtures.transactions import T0 as PAY_T0
from kseg.fixtures.transactions import build_control_only, build_payments
from kseg.format.batch import ATTR_CONTROL
from kseg.format.record import Record
from kseg.storage.isolation import committed_for
from kseg.storage.partition import Partition
from kseg.storage.txn_replay import replay_transactions
from kseg.storage.writer import LogWriter
from tests.helpers import events, run_kseg
from tests.isolation.model import ReadCommitted, batches, consumer, write_partition
from tests.isolation.test_dump_isolation import STEP, dump


def _headers(pdir: Path) -> list[tuple]:
    """(pid, first, last, attrs, abort marker) of every batch, in log order."""
    out = []
    for seg in Partition(pdir).segments:
        with seg.mapped() as buf:
            for h in seg.walk_headers(buf):
                pos, _size, _m, first, last, _ts, _n, attrs, pid, _ok, _ple = h
                abort = False
                if attrs & ATTR_CONTROL:
                    from kseg.format.batch import RecordBatch

                    ctl = RecordBatch(buf, pos).control_record(end_txn=True)
                    abort = ctl is not None and ctl.type == 0
                out.append((pid, first, last, attrs, abort))
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STEP, min_size=1, max_size=25), st.integers(0, 30))
def test_committed_equals_the_streamed_consumer_from_any_fetch_offset(steps, fetch):
    with tempfile.TemporaryDirectory() as tmp:
        pdir = Path(tmp) / "t-0"
        write_partition(pdir, steps)
        committed = committed_for(pdir)
        replay = replay_transactions(pdir)
        assert committed.lso == replay.last_stable_offset
        for start in (None, fetch):
            rc = ReadCommitted(replay, start)
            for pid, _first, last, attrs, abort in _headers(pdir):
                if start is not None and last < start:
                    continue  # the consumer's fetch starts at the batch holding ``start``
                assert rc.keeps(pid, last, attrs, abort) == committed.keeps(pid, last, attrs)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("iso")
    expected = build_payments(root / "payments-0")
    build_control_only(root / "audit-0")
    return root, expected


def _json(*args, kernel: str = "rust") -> tuple[int, list[dict]]:
    proc = run_kseg(*args, "-f", "json", env={**os.environ, "KSEG_KERNEL": kernel})
    return proc.returncode, events(proc.stdout)


def test_seek_latest_is_the_last_stable_offset(root):
    root, exp = root
    rc, evs = _json("seek", root, "--time", "latest", "--isolation", "read_committed")
    assert rc == 0
    by = {e["topic"]: e["offset"] for e in evs}
    assert by == {"payments": exp["last_stable_offset"], "audit": 3}
    rc, evs = _json("seek", root / "payments-0", "--time", "latest")
    assert [e["offset"] for e in evs] == [exp["log_end_offset"]]  # unchanged by default


@pytest.mark.parametrize(
    ("minute", "committed", "uncommitted"),
    [(1, 13, 13), (11, None, 30), (-1, None, 36)],  # -1: max-timestamp
)
def test_seek_time_past_the_lso_is_no_offset(root, minute, committed, uncommitted):
    """As Partition.fetchOffsetForTimestamp: the answer stands only below the last stable offset
    (13: tx-span's first record; 30: tx-lost's, past the LSO 27; 36: the last plain record)."""
    root, _ = root
    t = "max-timestamp" if minute < 0 else str(PAY_T0 + minute * 60_000)
    pdir = root / "payments-0"
    rc, evs = _json("seek", pdir, "--time", t, "--isolation", "read_committed")
    assert rc == 0 and [e["offset"] for e in evs] == [committed]
    rc, evs = _json("seek", pdir, "--time", t)
    assert rc == 0 and [e["offset"] for e in evs] == [uncommitted]


def test_seek_reset_csv_fills_with_the_lso(root):
    root, exp = root
    proc = run_kseg(
        "seek", root / "payments-0", "--time", str(PAY_T0 + 11 * 60_000),
        "--isolation", "read_committed", "-f", "reset-csv",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().strip() == f"payments,0,{exp['last_stable_offset']}"


def test_seek_isolation_needs_time(root):
    root, _ = root
    proc = run_kseg("seek", root / "payments-0", "--offset", "3", "--isolation", "read_committed")
    assert proc.returncode == 16 and b"--isolation" in proc.stderr


@pytest.mark.parametrize("kernel", ["rust", "python"])
def test_stats_counts_what_the_consumer_gets(root, kernel):
    root, _ = root
    kept = consumer(batches(dump(root / "payments-0")))
    rc, evs = _json("stats", root, "--isolation", "read_committed", kernel=kernel)
    assert rc == 0
    parts = {e["topic"]: e for e in evs if e["type"] == "partition_stats"}
    assert parts["payments"]["records"] == sum(len(b["records"]) for b in kept) == 15
    assert parts["payments"]["batches"] == len(kept)
    assert parts["payments"]["control_share"] == 0.0
    assert parts["audit"]["records"] == parts["audit"]["batches"] == 0  # only control batches
    rc, plain = _json("stats", root, kernel=kernel)
    assert rc == 0
    assert {e["topic"]: e["records"] for e in plain if e["type"] == "partition_stats"} == {
        "payments": 30,
        "audit": 0,
    }


def test_dump_control_only_partition_shows_nothing(root):
    root, _ = root
    rc, evs = _json("dump", root / "audit-0", "--isolation", "read_committed")
    assert rc == 0
    assert not [e for e in evs if e["type"] in ("batch", "record", "control")]


def test_dump_from_time_reaches_past_a_skipped_abort(tmp_path):
    """A combination where a consumer state carried from the walk's start would be wrong: the
    time index skips the segment holding producer 5's ABORT; its next transaction, committed,
    is shown."""
    pdir = tmp_path / "t-0"
    now = [0]
    with LogWriter(pdir, clock=lambda: now[0], index_interval_bytes=1) as w:
        now[0] = 1000
        w.append([Record(b"aborted", b"v")], producer_id=5, producer_epoch=0, transactional=True)
        w.roll()
        now[0] = 2000
        w.append_control(commit=False, producer_id=5, producer_epoch=0)
        w.append([Record(b"old", b"v")])
        w.roll()
        now[0] = 3000
        w.append([Record(b"kept", b"v")], producer_id=5, producer_epoch=0, base_sequence=1,
                 transactional=True)  # fmt: skip
        w.append_control(commit=True, producer_id=5, producer_epoch=0)
    for kernel in ("rust", "python"):
        proc = run_kseg(
            "dump", pdir, "--isolation", "read_committed", "--from-time", "2500",
            "--format-string", "%k\\n", env={**os.environ, "KSEG_KERNEL": kernel},
        )  # fmt: skip
        assert proc.returncode == 0 and proc.stdout == b"kept\n", proc.stderr
    proc = run_kseg("dump", pdir, "--isolation", "read_committed", "--format-string", "%k\\n")
    assert proc.stdout == b"old\nkept\n"


@pytest.fixture
def damaged(tmp_path):
    """payments-0 with a byte of its fourth batch's records flipped (a CRC mismatch before tx-a's
    COMMIT): the replay stops there, with tx-a open, so the LSO is 0."""
    pdir = tmp_path / "payments-0"
    build_payments(pdir)
    log = sorted(pdir.glob("*.log"))[0]
    data = bytearray(log.read_bytes())
    data[300] ^= 0xFF
    log.write_bytes(bytes(data))
    return pdir


@pytest.mark.parametrize("args", [("-f", "json"), ("--count", "-f", "json")])
def test_dump_says_where_the_replay_stopped(damaged, args):
    """Damage stops the replay (as Kafka's recovery would truncate): one error event saying so
    (exit 4), and nothing shown from the LSO on; without --isolation the dump is as before."""
    proc = run_kseg("dump", damaged, "--isolation", "read_committed", *args)
    assert proc.returncode == 4
    evs = events(proc.stdout)
    errors = [e for e in evs if e["type"] == "error"]
    assert len(errors) == 1 and errors[0]["kind"] == "crc_mismatch"
    assert "transaction replay stops here" in errors[0]["message"]
    assert not [e for e in evs if e["type"] in ("record", "batch")]
    if "--count" in args:
        assert [e["matches"] for e in evs if e["type"] == "match_count"] == [0]
    assert run_kseg("dump", damaged, *args).returncode == 4


def test_seek_says_where_the_replay_stopped(damaged):
    rc, evs = _json("seek", damaged, "--time", "latest", "--isolation", "read_committed")
    assert rc == 4 and [e["offset"] for e in evs if e["type"] == "seek"] == [0]


@pytest.mark.parametrize("resync", [False, True])
def test_stats_says_where_the_replay_stopped(damaged, resync):
    """stats as dump: the replay stopped by damage is said (the LSO is at most there, so nothing
    past it is counted, also with --resync, which otherwise counts on after the damage)."""
    args = ("--resync",) if resync else ()
    proc = run_kseg("stats", damaged, "--isolation", "read_committed", *args)
    assert proc.returncode == 4
    assert b"transaction replay stops here" in proc.stderr
    assert b"nothing from here on is counted" in proc.stderr


def test_dump_a_root_replays_each_partition(root):
    """A root: each partition its own replay (payments: 15 records a read_committed consumer
    gets; audit: control batches only, none)."""
    root, _ = root
    rc, evs = _json("dump", root, "--isolation", "read_committed", "--count")
    assert rc == 0
    counts = {e["topic"]: e["matches"] for e in evs if e["type"] == "match_count"}
    assert counts == {"payments": 15, "audit": 0}
    assert [e["matches"] for e in evs if e["type"] == "match_total"] == [15]
