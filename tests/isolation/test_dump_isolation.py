"""`kseg dump --isolation read_committed`: the records equal the read_uncommitted dump filtered
by hand with the plain model of Kafka's fetch path (tests/isolation/model.py), whatever the
interleaving of transactional producers (commit, abort, open at the end, a second ABORT,
idempotent and plain batches, several segments, compressed batches) and whatever
--from-offset/--to-offset/--from-time/--limit/--key/--count are combined with it.

Hypothesis drives the library entry the CLI calls (DumpRun rendered as JSON Lines by
kseg.render.show_dump, as `-f json` does); fixed cases go through the real `kseg`, under both
kernels."""

from __future__ import annotations

import io
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kseg.dump.options import DumpOptions, search_options
from kseg.dump.run import DumpRun
from kseg.fixtures.transactions import build_payments
from kseg.render import show_dump
from kseg.render.dump_json import JSON_LINES
from tests.helpers import events, run_kseg
from tests.isolation.model import T0, TXN_PIDS, batches, consumer, replay, write_partition

STEP = st.one_of(
    st.tuples(
        st.just("txn"),
        st.sampled_from(TXN_PIDS),
        st.integers(1, 3),
        st.sampled_from([None, "gzip"]),
    ),
    st.tuples(st.just("end"), st.sampled_from(TXN_PIDS), st.booleans()),
    st.tuples(st.just("idem"), st.integers(1, 2)),
    st.tuples(st.just("plain"), st.integers(1, 2), st.sampled_from([None, "gzip"])),
    st.just(("roll",)),
)
OPTIONS = st.fixed_dictionaries(
    {
        "from_offset": st.none() | st.integers(0, 40),
        "to_offset": st.none() | st.integers(0, 40),
        "from_time": st.none() | st.integers(0, 30).map(lambda k: T0 + 1000 * k),
        "limit": st.none() | st.integers(1, 8),
        "key": st.none() | st.sampled_from(["^x", "y"]),
        "count": st.booleans(),
    }
)


def dump(pdir: Path, **kw) -> list[dict]:
    """The library entry `kseg dump -f json` runs (``count``: the --count events)."""
    key = kw.pop("key", None)
    filt, _ = search_options([key] if key else None, None, None, None, None, None)
    count = kw.pop("count", False)
    opts = DumpOptions(
        json_lines=None if count else JSON_LINES, record_filter=filt, count=count, **kw
    )
    run = DumpRun([pdir], opts)
    if count:
        return [ev for chunk in run.chunks() for ev in chunk]
    out = io.BytesIO()
    show_dump(run.chunks(), "json", out)
    return events(out.getvalue())


def expected(plain: list[dict], o: dict) -> list[tuple[int, str]]:
    """The model's records, the selectors applied by hand (README: dump's Selection)."""
    out = []
    for b in consumer(batches(plain)):
        for r in b["records"]:
            if o["from_offset"] is not None and r["offset"] < o["from_offset"]:
                continue
            if o["to_offset"] is not None and r["offset"] > o["to_offset"]:
                continue
            if o["from_time"] is not None and r["timestamp"] < o["from_time"]:
                continue
            if o["key"] is not None and not re.search(o["key"], r["key"]):
                continue
            out.append((r["offset"], r["key"]))
    return out if o["limit"] is None else out[: o["limit"]]


def check(steps: list[tuple], o: dict) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        pdir = Path(tmp) / "t-0"
        write_partition(pdir, steps)
        plain = dump(pdir)
        assert not [e for e in plain if e["type"] == "error"]
        want = expected(plain, o)
        got = dump(pdir, isolation="read_committed", **o)
        assert not [e for e in got if e["type"] == "error"]
        if o["count"]:
            assert [e["matches"] for e in got if e["type"] == "match_count"] == [len(want)]
            return
        assert [(e["offset"], e["key"]) for e in got if e["type"] == "record"] == want
        assert not [e for e in got if e["type"] == "control"]
        kept = {b["base_offset"] for b in consumer(batches(plain))}
        assert {e["base_offset"] for e in got if e["type"] == "batch"} <= kept


PROGRAM = [
    ("txn", 11, 2, None),
    ("txn", 12, 1, "gzip"),
    ("plain", 1, None),
    ("end", 12, False),  # 12 aborted
    ("roll",),
    ("txn", 12, 1, None),  # 12 again: committed
    ("end", 12, False),
    ("end", 12, False),  # a second ABORT: closes nothing
    ("idem", 2),
    ("end", 11, True),
    ("txn", 13, 2, None),  # open at the end: the LSO
    ("plain", 2, None),
]
# aborted plain batches between kept ones, in one run of the kernel's (no control or compressed
# batch between them): the run must stop before each
RUN = [
    ("txn", 11, 1, None),
    ("txn", 12, 2, None),
    ("plain", 1, None),
    ("txn", 12, 1, None),
    ("idem", 1),
    ("end", 12, False),
    ("end", 11, True),
]
NO_OPTIONS = dict(
    from_offset=None, to_offset=None, from_time=None, limit=None, key=None, count=False
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(STEP, min_size=1, max_size=20), st.booleans(), OPTIONS)
@example(PROGRAM, False, NO_OPTIONS)
@example(RUN, False, NO_OPTIONS)
@example(RUN, False, {**NO_OPTIONS, "limit": 2})
@example(PROGRAM, False, {**NO_OPTIONS, "from_offset": 4})  # mid-partition, past an ABORT
@example(PROGRAM, False, {**NO_OPTIONS, "from_time": T0 + 5000, "key": "^x"})
@example(PROGRAM, False, {**NO_OPTIONS, "count": True, "to_offset": 9})
def test_read_committed_dump_is_the_consumers_view(steps, close_all, o):
    """``close_all``: every transaction ends (randomly committed or aborted): no LSO before the
    end."""
    if close_all:
        steps = steps + [("end", pid, (len(steps) + pid) % 2 == 0) for pid in TXN_PIDS]
    check(steps, o)


def test_the_model_agrees_with_the_lead_replay(tmp_path):
    """The model's replay is kseg.storage.txn_replay's on the fixtures' payments partition."""
    from kseg.storage.txn_replay import replay_transactions

    exp = build_payments(tmp_path / "payments-0")
    lso, aborted = replay(batches(dump(tmp_path / "payments-0")))
    assert (
        lso
        == exp["last_stable_offset"]
        == replay_transactions(tmp_path / "payments-0").last_stable_offset
    )
    assert aborted == exp["aborted_ranges"]


@pytest.fixture(scope="module")
def payments(tmp_path_factory):
    root = tmp_path_factory.mktemp("iso")
    build_payments(root / "payments-0")
    return root / "payments-0"


def _cli(*args, kernel: str = "rust") -> bytes:
    import os

    proc = run_kseg("dump", *args, env={**os.environ, "KSEG_KERNEL": kernel})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("-f", "json"),
        ("-f", "text"),
        ("-f", "table"),
        ("-f", "json", "--batches-only"),
        ("-f", "json", "--key", "^(a|b|to)-"),
        ("-f", "json", "--from-offset", "5", "--limit", "4"),
        ("--count",),
        ("--format-string", "%o %k\\n"),
    ],
)
def test_cli_read_committed_both_kernels(payments, args):
    """The real `kseg`: the Rust kernel's paths and the pure Python ones print the same bytes;
    the payments fixture's aborted transactions (tx-b, tx-timeout), its control batches and
    everything from tx-dead's first offset (the LSO) are left out."""
    rust = _cli(payments, "--isolation", "read_committed", *args)
    assert rust == _cli(payments, "--isolation", "read_committed", *args, kernel="python")
    text = rust.decode()
    for gone in ("b-k", "to-k", "dead-k", "lost-k", "live-k"):
        assert gone not in text
    if "--count" in args:
        assert "15 matches" in text


def test_cli_default_is_read_uncommitted(payments):
    """Without --isolation (or with read_uncommitted) the dump is today's, byte for byte."""
    plain = _cli(payments, "-f", "json")
    assert _cli(payments, "-f", "json", "--isolation", "read_uncommitted") == plain
    assert b'"control_type":"ABORT"' in plain and b"dead-k0" in plain


def test_a_loose_segment_is_replayed_alone(payments, tmp_path):
    """A .log outside any partition dir: its own transactions decide (the first segment of
    payments-0 holds tx-b's ABORT: its records are left out; tx-span, committed in the second
    segment, is open in this one alone: the LSO is its first offset)."""
    import shutil

    loose = tmp_path / "00000000000000000000.log"
    shutil.copy(payments / loose.name, loose)
    out = _cli(loose, "--isolation", "read_committed", "--format-string", "%k\\n").split()
    assert out == [b"a-k0", b"a-k1", b"plain-k0", b"plain-k1", b"plain-k2", b"a-k0", b"idem-k0",
                   b"idem-k1"]  # fmt: skip


def test_a_file_inside_a_partition_uses_the_partition(payments):
    """The second segment given alone: the LSO is the partition's (tx-dead's first offset)."""
    second = sorted(payments.glob("*.log"))[1]
    out = _cli(second, "--isolation", "read_committed", "--format-string", "%k\\n").split()
    assert out == [b"span-k0", b"span-k1", b"v2-k0", b"v2-k0", b"v2-k1"]
