"""--isolation read_committed: which batches a read_committed consumer is handed, per partition.

Kafka's fetch path under READ_COMMITTED: the broker reads nothing at or past the last stable
offset and sends the aborted transactions the fetched range overlaps; the consumer
(clients' CompletedFetch.nextFetchedRecord) sorts them by first offset and, for each batch with a
producer id, adds the producer ids of those that begin at or before the batch's last offset
(consumeAbortedTransactionsUpTo), removes the producer id at an ABORT control batch, and skips a
transactional batch whose producer id is in that set (isBatchAborted); control records are
never returned. Each fetch response starts that set afresh (the broker sends the aborted
transactions with last offset >= the fetch offset).

``Committed.keeps`` is that rule per batch, whatever batches were walked before it: a
transactional batch of producer P is aborted when the aborted transaction of P that begins
last at or before the batch's last offset ends (its ABORT marker) after it. A producer's
aborted transactions never overlap (an ABORT closes the one open), so this is the set the
consumer holds at that batch, from any fetch offset before it: a dump may start at an index
entry, skip segments (--from-offset/--from-time) or skip damage (--resync) and still decide each
batch as a consumer fetching it would.

Offline the high watermark is unknown: the last stable offset is the first offset of the
earliest open transaction, else the log end (kseg.storage.txn_replay).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from pathlib import Path

from kseg.format.batch import ATTR_CONTROL, ATTR_TRANSACTIONAL, MAGIC

READ_UNCOMMITTED = "read_uncommitted"
READ_COMMITTED = "read_committed"
ISOLATIONS = (READ_UNCOMMITTED, READ_COMMITTED)


class Committed:
    """A partition as a read_committed consumer sees it: ``keeps`` per batch, ``lso``."""

    __slots__ = ("lso", "_firsts", "_lasts", "aborted", "error")

    def __init__(self, lso: int, aborted: Iterable = (), error=None) -> None:
        """``aborted``: (producer id, first offset, last offset, ...) of every aborted
        transaction (kseg.storage.txn_replay's AbortedRanges, or `.txnindex` entries); the last
        offset is its ABORT marker's. ``error``: where the replay stopped (a CorruptionError:
        Kafka's recovery would truncate there, so the LSO is at most there), or None."""
        self.lso = lso
        self.error = error
        by_pid: dict[int, list[tuple[int, int]]] = {}
        n = 0
        for a in aborted:
            by_pid.setdefault(a[0], []).append((a[1], a[2]))
            n += 1
        self.aborted = n
        self._firsts: dict[int, list[int]] = {}
        self._lasts: dict[int, list[int]] = {}
        for pid, spans in by_pid.items():
            spans.sort()
            self._firsts[pid] = [f for f, _ in spans]
            self._lasts[pid] = [last for _, last in spans]

    def keeps(self, producer_id: int, last_offset: int, attributes: int) -> bool:
        """Whether a read_committed consumer is handed this batch's records (``attributes``: a
        v2 batch's; 0 for a legacy message)."""
        if attributes & ATTR_CONTROL or last_offset >= self.lso:
            return False
        if not attributes & ATTR_TRANSACTIONAL:
            return True
        firsts = self._firsts.get(producer_id)
        if firsts is None:
            return True
        i = bisect_right(firsts, last_offset) - 1
        return i < 0 or self._lasts[producer_id][i] <= last_offset

    def keeps_entry(self, entry) -> bool:
        """``keeps`` for a top-level entry (kseg.format.batch.RecordBatch or a legacy message)."""
        attrs = getattr(entry, "attributes", None)
        if attrs is None:
            return entry.last_offset < self.lso  # a legacy message
        return self.keeps_row(entry.magic, entry.producer_id, entry.last_offset, attrs)

    def keeps_row(self, magic: int, producer_id: int, last_offset: int, attributes: int) -> bool:
        """``keeps`` for any magic, as a header walk's row gives it: a legacy message (magic 0/1)
        has no producer and no transaction, only the LSO bounds it."""
        if magic < MAGIC:
            return last_offset < self.lso
        return self.keeps(producer_id, last_offset, attributes)

    def to_data(self) -> tuple:
        """Plain data (pickled to Spark's executors): ``from_data`` makes it again."""
        spans = tuple(
            (pid, f, last)
            for pid, firsts in self._firsts.items()
            for f, last in zip(firsts, self._lasts[pid], strict=True)
        )
        return (self.lso, spans)

    @classmethod
    def from_data(cls, data) -> Committed:
        lso, spans = data
        return cls(lso, spans)


def replay_stopped(what: str | None = None) -> str:
    """What a read_committed command adds to the error where the replay stopped (``what``: shown,
    counted; None: an answer, as seek's, not a walk): the LSO is at most there."""
    said = " (read_committed: the transaction replay stops here, as Kafka's recovery would"
    return f"{said})" if what is None else f"{said}; nothing from here on is {what})"


def committed_for(path: Path, *, loose: bool = False) -> Committed:
    """The read_committed view of a partition dir (one replay of its transactions), or with
    ``loose`` of one segment file replayed alone (a file outside any partition dir)."""
    from kseg.storage.txn_replay import replay_file, replay_transactions

    replay = replay_file(path) if loose else replay_transactions(path)
    return Committed(replay.last_stable_offset, replay.aborted_ranges, replay.error)
