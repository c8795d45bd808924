"""Streaming checks of existing `.index`/`.timeindex` files against the log, by Kafka's real rules.

Fed one valid batch at a time (merge-join: memory stays bounded). Valid, besides what recovery
writes (FORMATS.md section 5):
- offset index entry (O, P): P is a batch boundary and O is the last offset of a batch in
  [P, next entry's P): a live append indexes (largest offset of the append, its start);
- time index entry (T, O): O lies in batch B, T is B's max timestamp and strictly greater than
  every timestamp before B (live leaders name the record carrying T, recovery the batch's last
  offset); T strictly increasing, O non-decreasing;
- a trimmed (inactive) time index ends with the segment's max timestamp: Kafka takes a segment's
  max timestamp from it, and a short one makes ListOffsets skip the segment. Except an empty
  one (TIME_RULE_EMPTIED): Kafka itself rolls a segment so after a follower's truncation removed
  every entry while the segment's max was not loaded (LogSegment.truncateTo re-reads the max
  only when it is known; seen on a real 4.1 broker's follower). Its lookups skip the segment
  all the same, which the rule's label says.
"""

from __future__ import annotations

from typing import NamedTuple

from kseg.format.errors import CorruptionError
from kseg.format.kafka_version import OFFSET_RULE_FIRST
from kseg.format.offset_index import ENTRY_SIZE as OFFSET_ENTRY_SIZE
from kseg.format.offset_index import OffsetIndex
from kseg.format.time_index import ENTRY_SIZE as TIME_ENTRY_SIZE
from kseg.format.time_index import TimeIndex
from kseg.format.timestamps import with_iso
from kseg.format.txn_index import ENTRY_SIZE as TXN_ENTRY_SIZE
from kseg.format.txn_index import AbortedTxn
from kseg.format.txn_index import read_entries as read_txn_entries

IDENTICAL, EQUIVALENT, WRONG, MISSING = "identical", "equivalent", "wrong", "missing"
# an inactive time index with no entry, as a follower's truncation leaves it (module docstring)
TIME_RULE_EMPTIED = "follower truncation"
EMPTIED_MESSAGE = (
    "no entry, as Kafka rolls a segment after a follower's truncation emptied its time index: "
    "timestamp lookups skip this segment (kseg index rebuild writes its max timestamp)"
)
_NEVER = 1 << 62


class IndexStatus(NamedTuple):
    status: str
    entries: int
    rebuilt_entries: int
    padded_bytes: int = 0
    first_difference: dict | None = None  # {"entry", "position" (byte in the index), "message"}
    rule: str | None = (
        None  # equivalent: the Kafka release rule that wrote these bytes ("0.11-2.7")
    )

    def to_dict(self) -> dict:
        return {
            "status": self.status,
            "entries": self.entries,
            "rebuilt_entries": self.rebuilt_entries,
            "padded_bytes": self.padded_bytes,
            "first_difference": self.first_difference,
            "rule": self.rule,
        }


def txn_index_status(
    existing: bytes | None, chosen: list[AbortedTxn], others: dict[str, list[AbortedTxn]]
) -> IndexStatus:
    """A `.txnindex` (None: no file) against the entries the chosen Kafka release's rule writes
    (``chosen``) and those other releases' rules write (``others``, by rule label: a file one
    of them wrote is ``equivalent`` and names that rule). Kafka writes no file for a segment
    without aborted transactions, so no file where none is expected is ``identical``."""
    if existing is None:
        return IndexStatus(MISSING if chosen else IDENTICAL, 0, len(chosen))
    # no more entries are read than any rule writes: a file that holds more is wrong anyway
    longest = max([len(chosen), *map(len, others.values())])
    entries = []
    try:
        for e in read_txn_entries(existing):
            if len(entries) == longest:
                n = len(existing) // TXN_ENTRY_SIZE
                diff = {
                    "entry": longest,
                    "position": longest * TXN_ENTRY_SIZE,
                    "message": f"{n} entries, more than any Kafka release's rule writes"
                    f" for this segment ({longest})",
                }
                return IndexStatus(WRONG, n, len(chosen), 0, diff)
            entries.append(e)
    except CorruptionError as exc:
        n = (exc.position or 0) // TXN_ENTRY_SIZE
        diff = {"entry": n, "position": exc.position, "message": exc.message}
        return IndexStatus(WRONG, len(existing) // TXN_ENTRY_SIZE, len(chosen), 0, diff)
    if entries == chosen:
        return IndexStatus(IDENTICAL, len(entries), len(chosen))
    diff = _txn_diff(entries, chosen)
    for rule, theirs in others.items():
        if entries == theirs:
            return IndexStatus(EQUIVALENT, len(entries), len(chosen), 0, diff, rule)
    diff["message"] = (
        diff["message"].replace("differs from", "is not") + " under any Kafka release's rule"
    )
    return IndexStatus(WRONG, len(entries), len(chosen), 0, diff)


def _txn_diff(entries: list[AbortedTxn], rebuilt: list[AbortedTxn]) -> dict:
    n = next(
        (i for i, (a, b) in enumerate(zip(entries, rebuilt, strict=False)) if a != b),
        min(len(entries), len(rebuilt)),
    )

    def show(e: AbortedTxn) -> str:
        return (
            f"producer {e.producer_id} offsets {e.first_offset}..{e.last_offset} "
            f"(last stable offset {e.last_stable_offset})"
        )

    have = show(entries[n]) if n < len(entries) else "no entry"
    want = show(rebuilt[n]) if n < len(rebuilt) else "no entry"
    return {
        "entry": n,
        "position": n * TXN_ENTRY_SIZE,
        "message": f"{have}; the rebuild has {want}",
    }


class OffsetIndexChecker:
    def __init__(self, index: OffsetIndex) -> None:
        self.index = index
        self.n = 0  # next entry not yet reached
        self.cur = index.entry(0) if len(index) else None
        self.matched = None  # (n, entry) whose position was a boundary, awaiting its offset
        self.problem: dict | None = None
        self.rule: str | None = None  # set when an entry follows Kafka 0.8-0.11's rule

    @property
    def due(self) -> int:
        """The scan calls on_batch only from this byte position on (or while an entry awaits its
        offset): between index entries there is nothing to check."""
        if self.matched is not None:
            return -1
        return self.cur.position if self.cur is not None else _NEVER

    def _wrong(self, n: int, message: str) -> None:
        if self.problem is None:
            self.problem = {"entry": n, "position": n * OFFSET_ENTRY_SIZE, "message": message}
        self.cur = self.matched = None  # stop checking after the first difference

    def _advance(self) -> None:
        self.n += 1
        self.cur = self.index.entry(self.n) if self.n < len(self.index) else None

    def on_batch(self, position: int, last_offset: int, prev_last: int | None = None) -> None:
        """The batch at ``position`` ends at ``last_offset``; the batch before it ended at
        ``prev_last``."""
        if self.matched is not None:
            mn, me = self.matched
            if self.cur is not None and position >= self.cur.position:
                self._wrong(
                    mn,
                    f"offset {me.offset} is not the last offset of any batch from byte {me.position}",
                )
                return
            if last_offset == me.offset:
                self.matched = None
            elif last_offset > me.offset:
                self._wrong(
                    mn,
                    f"offset {me.offset} is not the last offset of any batch from byte {me.position}",
                )
                return
        cur = self.cur
        if cur is None or position < cur.position:
            return
        if position > cur.position:
            self._wrong(self.n, f"position {cur.position} is not a batch boundary")
            return
        if self.n > 0:
            prev = self.index.entry(self.n - 1)
            if cur.offset <= prev.offset:
                self._wrong(self.n, f"offset {cur.offset} does not increase after {prev.offset}")
                return
        self.matched = (self.n, cur)
        self._advance()
        if last_offset == cur.offset:
            self.matched = None
        elif last_offset > cur.offset and prev_last is not None and cur.offset > prev_last:
            # Kafka 0.8-0.11 index an entry by its FIRST offset (0.10: entry.firstOffset, a
            # compressed wrapper's first inner message; 0.11.0: batch.baseOffset): an offset
            # inside the batch at this position, which every lookup still finds
            self.matched = None
            self.rule = OFFSET_RULE_FIRST
        elif last_offset > cur.offset:
            self._wrong(
                self.n - 1,
                f"offset {cur.offset} is below the last offset {last_offset} of its batch",
            )

    def finish(self, valid_bytes: int) -> dict | None:
        if self.matched is not None:
            mn, me = self.matched
            self._wrong(
                mn,
                f"offset {me.offset} is not the last offset of any batch from byte {me.position}",
            )
        elif self.cur is not None:
            self._wrong(
                self.n,
                f"position {self.cur.position} is at or past the end of the valid log ({valid_bytes} bytes)",
            )
        return self.problem


class TimeIndexChecker:
    def __init__(self, index: TimeIndex) -> None:
        self.index = index
        self.n = 0
        self.cur = index.entry(0) if len(index) else None
        self.prev_ts = None
        self.problem: dict | None = None
        self.rule: str | None = None  # set when the index is one Kafka leaves empty

    @property
    def due(self) -> int:
        """The scan calls on_batch only for batches whose last offset reaches this."""
        return self.cur.offset if self.cur is not None else _NEVER

    def _wrong(self, n: int, message: str) -> None:
        if self.problem is None:
            self.problem = {"entry": n, "position": n * TIME_ENTRY_SIZE, "message": message}
        self.cur = None

    def on_batch(
        self, prev_last: int, last_offset: int, max_timestamp: int, prefix_max: int
    ) -> None:
        """``prefix_max``: the greatest max timestamp of the batches before this one."""
        while self.cur is not None and self.cur.offset <= last_offset:
            e = self.cur
            if e.offset <= prev_last:
                self._wrong(self.n, f"offset {e.offset} lies in no batch")
                return
            if self.prev_ts is not None and e.timestamp <= self.prev_ts:
                self._wrong(
                    self.n,
                    f"timestamp {with_iso(e.timestamp)} does not increase after "
                    f"{with_iso(self.prev_ts)}",
                )
                return
            if e.timestamp != max_timestamp or e.timestamp <= prefix_max:
                self._wrong(
                    self.n,
                    f"({with_iso(e.timestamp)}, {e.offset}): the batch holding offset {e.offset} "
                    f"has max timestamp {with_iso(max_timestamp)}, and the max before it is "
                    f"{with_iso(prefix_max)}",
                )
                return
            self.prev_ts = e.timestamp
            self.n += 1
            self.cur = self.index.entry(self.n) if self.n < len(self.index) else None

    def finish(self, segment_max_timestamp: int, *, preallocated: bool) -> dict | None:
        if self.cur is not None:
            self._wrong(self.n, f"offset {self.cur.offset} is past the end of the valid log")
        elif not preallocated and segment_max_timestamp >= 0:
            if not len(self.index) and self.problem is None:
                self.rule = TIME_RULE_EMPTIED
                return None
            last = self.index.last_entry()
            if last.timestamp != segment_max_timestamp and self.problem is None:
                n = len(self.index) - 1
                self.problem = {
                    "entry": max(n, 0),
                    "position": max(n, 0) * TIME_ENTRY_SIZE,
                    "message": f"last timestamp {with_iso(last.timestamp)} is not the segment's max "
                    f"timestamp {with_iso(segment_max_timestamp)}: a timestamp lookup would skip "
                    "this segment",
                }
        return self.problem
