"""The transaction replay and the read_committed rule against a plain model, on random
interleavings of transactional producers (data, COMMIT, ABORT, markers that close nothing),
plain and idempotent batches, and segment rolls, written with kseg's LogWriter."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kseg.fixtures.tree import FixedClock
from kseg.format.record import Record
from kseg.storage.segment import read_batches
from kseg.storage.txn_replay import replay_transactions
from kseg.storage.writer import LogWriter
from tests.isolation.model import ReadCommitted

PIDS = (11, 12, 13)
OP = st.tuples(
    st.sampled_from(["data", "data", "commit", "abort", "plain", "idem", "roll"]),
    st.sampled_from(PIDS),
    st.integers(1, 3),
)


def _write(pdir: Path, ops) -> dict:
    """Write ``ops``; return the model's answer, computed as the ops are applied."""
    model_open: dict[int, int] = {}
    aborted: list[tuple[int, int, int]] = []
    counts = {"committed": 0, "aborted": 0, "empty": 0}
    batches = []  # (first, last, pid, transactional, control)
    rolled_at = 0
    with LogWriter(pdir, clock=FixedClock()) as w:
        for kind, pid, n in ops:
            recs = [Record(b"k", b"v") for _ in range(n)]
            if kind == "roll":
                if w.next_offset > rolled_at:  # a segment holds at least one batch
                    rolled_at = w.next_offset
                    w.roll()
                continue
            if kind == "data":
                info = w.append(recs, producer_id=pid, producer_epoch=0, transactional=True)
                model_open.setdefault(pid, info.base_offset)
                batches.append((info.base_offset, info.last_offset, pid, True, False))
            elif kind in ("commit", "abort"):
                info = w.append_control(commit=kind == "commit", producer_id=pid, producer_epoch=0)
                first = model_open.pop(pid, None)
                if first is None:
                    counts["empty"] += 1
                elif kind == "commit":
                    counts["committed"] += 1
                else:
                    counts["aborted"] += 1
                    aborted.append((pid, first, info.base_offset))
                batches.append((info.base_offset, info.base_offset, pid, True, True))
            else:
                pid_ = 99 if kind == "idem" else -1
                info = w.append(recs, producer_id=pid_, producer_epoch=0 if pid_ > 0 else -1)
                batches.append((info.base_offset, info.last_offset, pid_, False, False))
        end = w.next_offset
    lso = min(model_open.values(), default=end)
    visible = [
        o
        for first, last, pid, txn, ctl in batches
        if not ctl
        and first < lso
        and not (txn and any(p == pid and f <= first <= e for p, f, e in aborted))
        for o in range(first, last + 1)
    ]
    return {"open": model_open, "ranges": sorted(aborted, key=lambda a: a[1]), "lso": lso,
            "end": end, "visible": visible, **counts}  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(ops=st.lists(OP, max_size=25), fetch=st.integers(0, 40))
# an ABORT ends its producer's place in the aborted set: its next transaction commits
@example(ops=[("data", 11, 2), ("abort", 11, 1), ("data", 11, 1), ("commit", 11, 1)], fetch=0)
# a one-record first batch of an aborted transaction (its first offset is its last)
@example(ops=[("data", 11, 1), ("data", 11, 2), ("abort", 11, 1)], fetch=0)
def test_replay_and_read_committed_match_the_model(ops, fetch):
    with tempfile.TemporaryDirectory() as tmp:
        pdir = Path(tmp) / "t-0"
        want = _write(pdir, ops)
        r = replay_transactions(pdir)
        assert {t.producer_id: t.first_offset for t in r.open} == want["open"]
        assert [(a.producer_id, a.first_offset, a.last_offset) for a in r.aborted_ranges] == (
            want["ranges"])  # fmt: skip
        assert (r.last_stable_offset, r.log_end_offset) == (want["lso"], want["end"])
        assert (r.committed, r.aborted, r.empty) == (
            want["committed"], want["aborted"], want["empty"])  # fmt: skip
        rc = ReadCommitted(r, fetch)
        kept = []
        for log in sorted(pdir.glob("*.log")):
            for b in read_batches(log):
                if b.last_offset < fetch:
                    continue
                ctl = b.control_record(end_txn=True) if b.is_control else None
                if rc.keeps(
                    b.producer_id, b.last_offset, b.attributes, ctl is not None and ctl.type == 0
                ):
                    kept.extend(x.offset for x in b.records() if x.offset >= fetch)
        assert kept == [o for o in want["visible"] if o >= fetch]
