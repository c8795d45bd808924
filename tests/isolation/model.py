"""Writing random transactional partitions, and the plain model of what a read_committed
consumer gets, computed from the read_uncommitted JSON dump of everything.

The model is Kafka's, written out plainly (not kseg's code):
- the broker's replay (ProducerStateManager): a transactional data batch opens its producer's
  transaction if none is open; an end marker closes it (COMMIT or ABORT), an ABORT that closed
  one gives an aborted transaction (producer id, first offset, marker offset); a marker that
  closes nothing changes nothing. The last stable offset: the first offset of the earliest
  open transaction, else the log end.
- the consumer (clients' CompletedFetch, one fetch from the log start, up to the LSO): aborted
  transactions sorted by first offset; for each batch with a producer id, those with first
  offset <= the batch's last offset add their producer id to a set; an ABORT control batch
  removes its producer id; a transactional batch whose producer id is in the set is skipped;
  control batches are never returned.
"""

from __future__ import annotations

from pathlib import Path

from kseg.format import batch as v2
from kseg.format.record import Record
from kseg.storage.writer import LogWriter

T0 = 1_700_000_000_000
TXN_PIDS = (11, 12, 13)
IDEMPOTENT = 70


def write_partition(pdir: Path, steps: list[tuple]) -> None:
    """``steps``: ("txn", pid, n, codec), ("end", pid, commit), ("idem", n), ("plain", n,
    codec), ("roll",). Record timestamps: T0 + 1000 * step number; keys x/y/z + a number."""
    seq: dict[int, int] = {}
    now = [T0]

    def clock() -> int:
        return now[0]

    with LogWriter(pdir, clock=clock, index_interval_bytes=64, segment_bytes=1 << 20) as w:
        rolled_at = 0  # a segment rolled with nothing in it would have its successor's name
        for i, step in enumerate(steps):
            now[0] = T0 + 1000 * i
            kind = step[0]
            if kind == "roll":
                if w.next_offset > rolled_at:
                    w.roll()
                    rolled_at = w.next_offset
            elif kind == "end":
                _, pid, commit = step
                w.append_control(commit=commit, producer_id=pid, producer_epoch=0)
            else:
                n = step[2] if kind == "txn" else step[1]
                pid = step[1] if kind == "txn" else IDEMPOTENT if kind == "idem" else -1
                codec = step[3] if kind == "txn" else step[2] if kind == "plain" else None
                recs = [Record(f"{'xyz'[(i + j) % 3]}{i}-{j}".encode(), b"v") for j in range(n)]
                kw = {}
                if pid >= 0:
                    kw = dict(producer_id=pid, producer_epoch=0, base_sequence=seq.get(pid, 0))
                    seq[pid] = seq.get(pid, 0) + n
                w.append(recs, transactional=kind == "txn", compression=codec, **kw)


def batches(plain: list[dict]) -> list[dict]:
    """The dump's batches, each with its records (``records``: record events) and, for a
    control batch, its control type."""
    out: list[dict] = []
    for e in plain:
        if e["type"] == "batch":
            out.append({**e, "records": [], "control_type": None})
        elif e["type"] == "record":
            out[-1]["records"].append(e)
        elif e["type"] == "control":
            out[-1]["control_type"] = e["control_type"]
    return out


def replay(bs: list[dict]) -> tuple[int, list[tuple[int, int, int]]]:
    """(last stable offset, aborted transactions) by the broker's rule."""
    ongoing: dict[int, int] = {}
    aborted = []
    end = 0
    for b in bs:
        end = b["last_offset"] + 1
        pid = b["producer_id"]
        if pid < 0:
            continue
        if b["is_control"]:
            first = ongoing.pop(pid, None)
            if first is not None and b["control_type"] == "ABORT":
                aborted.append((pid, first, b["base_offset"]))
        elif b["is_transactional"]:
            ongoing.setdefault(pid, b["base_offset"])
    return min(ongoing.values(), default=end), aborted


def consumer(bs: list[dict]) -> list[dict]:
    """The batches a read_committed consumer returns records of, fetching from the start."""
    lso, aborted = replay(bs)
    queue = sorted(aborted, key=lambda a: a[1])
    ids: set[int] = set()
    kept = []
    for b in bs:
        if b["last_offset"] >= lso:
            break
        pid = b["producer_id"]
        if pid >= 0:
            while queue and queue[0][1] <= b["last_offset"]:
                ids.add(queue.pop(0)[0])
            if b["is_control"] and b["control_type"] == "ABORT":
                ids.discard(pid)
                continue
            if b["is_transactional"] and pid in ids:
                continue
        if not b["is_control"]:
            kept.append(b)
    return kept


class ReadCommitted:
    """The streamed reference model the library's stateless per-batch rule
    (kseg.storage.isolation.Committed) is tested against; only tests use it. Kafka's consumer
    under READ_COMMITTED (clients' CompletedFetch): aborted transactions by first offset; before each batch with a producer id, those whose first offset is at or below
    its last offset add their producer id to the aborted set; an ABORT marker removes its
    producer id; control batches are never returned, nor a transactional batch of a producer in
    the set; nothing at or past the last stable offset (the fetch's upper bound).

    ``fetch_offset``: where the walk starts. As the broker sends only aborted transactions whose
    last offset is at or past the fetch offset, earlier ones are left out. Call ``keeps`` for every
    batch from there in log order, also those that are not shown."""

    __slots__ = ("lso", "_ranges", "_next", "_set")

    def __init__(self, replay, fetch_offset: int | None = None) -> None:
        self.lso = replay.last_stable_offset
        r = replay.aborted_ranges
        start = fetch_offset if fetch_offset is not None else replay.log_start_offset
        # the broker's choice, then the consumer's order (by first offset)
        self._ranges = [(r.first[i], r.pid[i]) for i in range(len(r)) if r.last[i] >= start]
        self._next = 0
        self._set: set[int] = set()

    def keeps(
        self, producer_id: int, last_offset: int, attributes: int, abort_marker: bool = False
    ) -> bool:
        """Whether a read_committed consumer returns the batch (``abort_marker``: a control
        batch holding an ABORT marker). Its first offset at or past the LSO: never."""
        if producer_id >= 0:
            ranges, i = self._ranges, self._next
            while i < len(ranges) and ranges[i][0] <= last_offset:
                self._set.add(ranges[i][1])
                i += 1
            self._next = i
        if attributes & v2.ATTR_CONTROL:
            if abort_marker:
                self._set.discard(producer_id)
            return False
        if last_offset >= self.lso:
            return False
        return not (attributes & v2.ATTR_TRANSACTIONAL and producer_id in self._set)
