"""A follower's batches against the leader's, in one merged walk of both logs' batch headers (no
record is decoded): where they first differ, and which of the follower's batches Kafka truncates
that the leader does not hold (what the follower loses when it rejoins).

Two replicas hold the same batch when base and last offset, partition leader epoch, stored CRC
and size agree and both CRCs hold: replication copies a leader's batches byte for byte. Below
either replica's cleaner checkpoint the batches are not compared: each replica's log cleaner
rewrites its own batches, so compacted replicas differ there by design.
"""

from __future__ import annotations

from collections.abc import Iterator
from operator import attrgetter
from pathlib import Path
from typing import NamedTuple

from kseg.format.accumulator import Accumulator
from kseg.format.errors import CorruptionError
from kseg.storage.segment import Segment
from kseg.storage.tree import segment_logs

V2_CRC_AT, LEGACY_CRC_AT = 17, 12  # the stored CRC's byte in a v2 batch / a legacy message


class Hdr(NamedTuple):
    base: int
    last: int
    epoch: int  # partition leader epoch (-1 before v2)
    crc: int  # as stored
    size: int
    ok: bool  # the CRC holds
    log: Path
    pos: int
    max_ts: int
    records: int


def headers(pdir: Path, start: int, end: int) -> Iterator[Hdr]:
    """The batches of ``pdir`` holding offsets in [start, end), in log order (a walk stops at
    the first bad structure: Kafka's log ends there for our purpose). A batch whose offsets do
    not pass the last one yielded (segments that overlap: kseg verify's segment_overlap) is left
    out, so that no offset is compared or counted lost twice."""
    done = -1  # the greatest last offset yielded
    for log in segment_logs(pdir):
        seg = Segment(log)
        if seg.base_offset >= end:
            return
        with seg.mapped(sequential=True) as buf:
            try:
                for (
                    pos,
                    size,
                    magic,
                    base,
                    last,
                    max_ts,
                    count,
                    _a,
                    _p,
                    ok,
                    ple,
                ) in seg.walk_headers(buf):
                    if base >= end:
                        return
                    if last < start or last <= done:
                        continue
                    done = last
                    at = pos + (V2_CRC_AT if magic >= 2 else LEGACY_CRC_AT)
                    crc = int.from_bytes(buf[at : at + 4], "big")
                    n = count if magic >= 2 else last - base + 1
                    yield Hdr(base, last, ple if magic >= 2 else -1, crc, size, ok, log, pos,
                              max_ts, n)  # fmt: skip
            except CorruptionError:
                continue  # the next segment (Kafka keeps a clean-shutdown segment's later ones)


# a batch's identity: two replicas hold the same batch when these agree and both CRCs hold
# (kseg.spark.replicas joins on the same fields)
IDENTITY = ("base", "last", "epoch", "crc", "size")
_identity = attrgetter(*IDENTITY)


def same(a: Hdr | None, b: Hdr | None) -> bool:
    return a is not None and b is not None and a.ok and b.ok and _identity(a) == _identity(b)


class LostRange(NamedTuple):
    """Whole batches of one ``.log`` that a replica loses: bytes [start, end)."""

    log: Path
    start: int
    end: int
    first_offset: int
    last_offset: int


class Loss(NamedTuple):
    records: int
    bytes: int
    batches: int
    first_offset: int | None
    last_offset: int | None
    first_timestamp: int | None  # the batches' max timestamps, least and greatest
    last_timestamp: int | None
    ranges: tuple[LostRange, ...]


class Divergence(NamedTuple):
    offset: int
    epoch: int | None  # the follower's batch there (None: it has none)
    leader_epoch: int | None  # the leader's batch there


class Comparison(NamedTuple):
    divergence: Divergence | None  # the first offset where the follower's batches differ
    truncated: int  # records Kafka truncates from the follower
    loss: Loss  # the truncated records the leader does not hold


def compared_from(leader, follower) -> int:
    """The first offset whose batches are compared: both logs hold it, and neither replica's
    cleaner has rewritten it."""
    return max(leader.log_start_offset, follower.log_start_offset,
               leader.cleaned_to or 0, follower.cleaned_to or 0)  # fmt: skip


def compare(leader, follower, truncate_to: int, fully: bool) -> Comparison:
    """``follower`` (kseg.replicas.model.Replica) against ``leader``, with the follower's log
    cut at ``truncate_to`` (``fully``: all of it) when it rejoins."""
    lo = compared_from(leader, follower)
    lead = headers(leader.partition_dir, lo, leader.log_end_offset)  # the batches from lo
    fol = headers(follower.partition_dir, follower.log_start_offset, follower.log_end_offset)
    lb = next(lead, None)
    div: Divergence | None = None
    truncated = 0
    lost = _Lost()
    for fb in fol:
        while lb is not None and lb.last < fb.base:
            if div is None and lb.base >= lo:  # the leader holds a batch the follower lacks
                div = Divergence(lb.base, None, lb.epoch)
            lb = next(lead, None)
        match = same(fb, lb)
        if div is None and not match and fb.last >= lo:
            at = max(fb.base, lo)
            cover = lb if lb is not None and lb.base <= at <= lb.last else None
            div = Divergence(at, fb.epoch, cover.epoch if cover else None)
        removed = fully or fb.last >= truncate_to
        if removed:
            truncated += fb.records
            if not match:
                lost.add(fb)
        if match:
            lb = next(lead, None)
    return Comparison(div, truncated, lost.loss())


class _Lost(Accumulator):
    """The lost batches summed as the walk meets them (no object per batch: a replica that
    loses millions of batches holds a few numbers and its byte ranges)."""

    __slots__ = ("records", "bytes", "batches", "first", "last", "tmin", "tmax", "ranges")

    def __init__(self) -> None:
        self.records = self.bytes = self.batches = 0
        self.first = self.last = self.tmin = self.tmax = None
        self.ranges: list[LostRange] = []

    def add(self, h: Hdr) -> None:
        self.records += h.records
        self.bytes += h.size
        self.batches += 1
        if self.first is None:
            self.first = h.base
        self.last = h.last
        if h.max_ts >= 0:
            self.tmin = h.max_ts if self.tmin is None else min(self.tmin, h.max_ts)
            self.tmax = h.max_ts if self.tmax is None else max(self.tmax, h.max_ts)
        r = self.ranges[-1] if self.ranges else None
        if r is not None and r.log == h.log and r.end == h.pos:
            self.ranges[-1] = r._replace(end=h.pos + h.size, last_offset=h.last)
        else:
            self.ranges.append(LostRange(h.log, h.pos, h.pos + h.size, h.base, h.last))

    def loss(self) -> Loss:
        return Loss(self.records, self.bytes, self.batches, self.first, self.last, self.tmin,
                    self.tmax, tuple(self.ranges))  # fmt: skip
