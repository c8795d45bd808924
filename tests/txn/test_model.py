"""Property: random interleavings of transactional producers (data, COMMIT, ABORT, plain records,
segment rolls), written with LogWriter + append_control, then `kseg txn -f json` (the real
entry point), as of the end or of a random --at: open transactions, last stable offset and counts
equal a plain model computed here."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kseg.format.record import Record
from kseg.storage.writer import LogWriter
from tests.helpers import events, run_kseg

T0 = 1_700_000_000_000
PIDS = (11, 12, 13)
OPS = st.lists(
    st.tuples(
        st.sampled_from(("data", "data", "commit", "abort", "plain", "roll")),
        st.sampled_from(PIDS),
        st.integers(1, 3),
    ),
    min_size=1,
    max_size=25,
)


def _write(pdir: Path, ops) -> list[int]:
    """The log of ``ops`` (op i written at T0 + i seconds); returns each op's first offset."""
    starts = []
    seq = dict.fromkeys(PIDS, 0)
    with LogWriter(pdir, clock=lambda: T0, segment_bytes=1 << 20) as w:
        for i, (op, pid, n) in enumerate(ops):
            ts = T0 + i * 1000
            starts.append(w.next_offset)
            if op == "data":
                recs = [Record(b"k", b"v%d" % j, ts) for j in range(n)]
                w.append(recs, producer_id=pid, producer_epoch=0, base_sequence=seq[pid],
                         transactional=True)  # fmt: skip
                seq[pid] += n
            elif op in ("commit", "abort"):
                w.append_control(commit=op == "commit", producer_id=pid, producer_epoch=0,
                                 timestamp=ts)  # fmt: skip
            elif op == "plain":
                w.append([Record(b"p", b"x", ts) for _ in range(n)])
            elif w.segments and w.next_offset > int(Path(w.segments[-1]).stem):
                w.roll()  # the next batch starts a segment
        starts.append(w.next_offset)
    return starts


def _model(ops, starts, upto_op: int) -> dict:
    """Kafka's replay of the first ``upto_op`` ops, by hand."""
    open_: dict[int, list[int]] = {}  # pid -> [first offset, last offset, records]
    counts = {"committed": 0, "aborted": 0, "empty": 0}
    for i, (op, pid, n) in enumerate(ops[:upto_op]):
        first = starts[i]
        if op == "data":
            t = open_.setdefault(pid, [first, first, 0])
            t[1], t[2] = first + n - 1, t[2] + n
        elif op in ("commit", "abort"):
            if open_.pop(pid, None) is None:
                counts["empty"] += 1
            else:
                counts["committed" if op == "commit" else "aborted"] += 1
    end = starts[upto_op]
    lso = min((t[0] for t in open_.values()), default=end)
    opens = sorted((t[0], pid, t[1], t[2]) for pid, t in open_.items())
    return {"log_end_offset": end, "last_stable_offset": lso, "open": opens, **counts}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, cut=st.integers(0, 30))
def test_txn_equals_the_model(ops, cut):
    with tempfile.TemporaryDirectory() as tmp:
        pdir = Path(tmp) / "logs" / "t-0"
        starts = _write(pdir, ops)
        # --at T0 + cut seconds - 1ms: the ops written before op ``cut`` (0: none yet)
        upto_op = min(cut, len(ops))
        args = [] if cut >= len(ops) else ["--at", str(T0 + cut * 1000 - 1)]
        proc = run_kseg("txn", pdir.parent, "-f", "json", *args)
    evs = events(proc.stdout)
    assert proc.returncode == 0, proc.stderr  # no coordinator state: nothing judged hanging
    want = _model(ops, starts, upto_op)
    (part,) = [e for e in evs if e["type"] == "partition"]
    opens = [
        (e["first_offset"], e["producer_id"], e["last_offset"], e["records"])
        for e in evs
        if e["type"] == "open_transaction"
    ]
    got = {k: part[k] for k in ("log_end_offset", "last_stable_offset", "committed", "aborted",
                                "empty")}  # fmt: skip
    # an op that wrote nothing (a roll) before the cut: the log ends where the next one starts
    assert {**got, "open": opens} == want
    assert part["open"] == len(want["open"]) and part["hanging"] == 0
