"""One pass over a segment: structure, CRCs, offsets, control records, indexes, and the indexes a
recovery would rebuild. Header-only unless ``deep``; memory bounded by the index sizes.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from kseg.format import batch as v2
from kseg.format.accumulator import Accumulator
from kseg.format.errors import CRC_MISMATCH, INVALID_CONTROL, CorruptionError
from kseg.format.index_rule import DEFAULT_INDEX_INTERVAL_BYTES, IndexBuilder, RefusedEntry
from kseg.format.legacy import ATTR_COMPRESSION, LegacyEntry
from kseg.format.log import MAGIC_POS, bad_magic_message, v2_crc_matches
from kseg.format.magic import CURRENT_MAGIC as V2_MAGIC
from kseg.format.magic import format_of
from kseg.format.timestamps import in_date_range, with_iso
from kseg.format.txn_index import AbortedTxn
from kseg.format.txn_state import TxnTracker
from kseg.storage import kernel_walk
from kseg.storage.kernel_walk import ROW
from kseg.storage.segment import Segment
from kseg.verify import findings as K
from kseg.verify.findings import Finding, Patch, from_error
from kseg.verify.index_check import (
    IndexStatus,
)
from kseg.verify.index_compare import index_statuses, open_indexes
from kseg.verify.kafka_walk import kafka_walk

INT32_MAX = 0x7FFFFFFF
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_LEGACY_CODEC = (
    ATTR_COMPRESSION  # a legacy wrapper: its messages are checked too (see _wrapper_check)
)


class EntryHeader(NamedTuple):
    """Named view of a walk_headers tuple, for the (rare) slow path."""

    position: int
    size: int
    magic: int
    first_offset: int
    last_offset: int
    max_timestamp: int
    records_count: int
    attributes: int
    producer_id: int
    crc_ok: bool
    partition_leader_epoch: int


class SegmentScan(Accumulator):  # filled in as the scan goes: an accumulator, not a value
    log: Path
    base_offset: int
    size: int
    valid_bytes: int
    batches: int
    first_offset: int | None
    last_offset: int | None
    max_timestamp: int
    first_error: Finding | None
    findings: list[Finding]
    rebuilt: IndexBuilder | None
    offset_index: IndexStatus | None
    time_index: IndexStatus | None
    aborted: list[AbortedTxn]
    # ABORT markers that closed no open transaction: Kafka 0.11-2.7 indexed them too
    empty_aborts: list[AbortedTxn]
    # in-place fixes of bytes outside the CRC (verify --repair applies them; not truncations)
    patches: list[Patch]
    # what Kafka's own recovery does with this segment, where that differs from kseg's view:
    kafka_stop: int | None  # byte where Kafka truncates (None: it keeps every byte)
    kafka_end: int | None  # the segment's next offset after Kafka's truncation
    kafka_fatal: Finding | None  # Kafka fails to start on this (unreadable control)
    kafka_kept_bad: list[int]  # bad batches Kafka keeps silently
    kafka_kept_epoch: list[int]  # wrong leader epochs it keeps
    # batches whose offsets go backwards, or CRC-valid ones whose count or offset delta
    # contradicts their offsets (invalid_batch), which Kafka keeps
    kafka_kept_offsets: list[int]
    kafka_refused: RefusedEntry | None  # an index append Kafka refuses: it empties the segment
    kafka_overflow: int | None  # byte of a batch past 2^31-1 of the base: Kafka splits

    __slots__ = (
        "log",
        "base_offset",
        "size",
        "valid_bytes",
        "batches",
        "first_offset",
        "last_offset",
        "max_timestamp",
        "first_error",
        "findings",
        "rebuilt",
        "offset_index",
        "time_index",
        "aborted",
        "empty_aborts",
        "patches",
        "kafka_stop",
        "kafka_end",
        "kafka_fatal",
        "kafka_kept_bad",
        "kafka_kept_epoch",
        "kafka_kept_offsets",
        "kafka_refused",
        "kafka_overflow",
    )

    def __init__(
        self,
        log: Path,
        base_offset: int,
        size: int,
        valid_bytes: int = 0,
        batches: int = 0,
        first_offset: int | None = None,
        last_offset: int | None = None,
        max_timestamp: int = -1,
        first_error: Finding | None = None,
        findings: list[Finding] | None = None,
        rebuilt: IndexBuilder | None = None,
        offset_index: IndexStatus | None = None,
        time_index: IndexStatus | None = None,
        aborted: list[AbortedTxn] | None = None,
        empty_aborts: list[AbortedTxn] | None = None,
        patches: list[Patch] | None = None,
        kafka_stop: int | None = None,
        kafka_end: int | None = None,
        kafka_fatal: Finding | None = None,
        kafka_kept_bad: list[int] | None = None,
        kafka_kept_epoch: list[int] | None = None,
        kafka_kept_offsets: list[int] | None = None,
        kafka_refused: RefusedEntry | None = None,
        kafka_overflow: int | None = None,
    ) -> None:
        self.log = log
        self.base_offset = base_offset
        self.size = size
        self.valid_bytes = valid_bytes
        self.batches = batches
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.max_timestamp = max_timestamp
        self.first_error = first_error
        self.findings = [] if findings is None else findings
        self.rebuilt = rebuilt
        self.offset_index = offset_index
        self.time_index = time_index
        self.aborted = [] if aborted is None else aborted
        self.empty_aborts = [] if empty_aborts is None else empty_aborts
        self.patches = [] if patches is None else patches
        self.kafka_stop = kafka_stop
        self.kafka_end = kafka_end
        self.kafka_fatal = kafka_fatal
        self.kafka_kept_bad = [] if kafka_kept_bad is None else kafka_kept_bad
        self.kafka_kept_epoch = [] if kafka_kept_epoch is None else kafka_kept_epoch
        self.kafka_kept_offsets = [] if kafka_kept_offsets is None else kafka_kept_offsets
        self.kafka_refused = kafka_refused
        self.kafka_overflow = kafka_overflow

    @property
    def corrupt(self) -> bool:
        return self.first_error is not None


def _stop(scan: SegmentScan, finding: Finding) -> None:
    scan.findings.append(finding)
    if scan.first_error is None:
        scan.first_error = finding


def scan_segment(
    log: Path | Segment,
    *,
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
    deep: bool = False,
    check_indexes: bool = True,
    txn: TxnTracker | None = None,
    prev_last_offset: int | None = None,
    kafka_view: bool = False,
    epochs: EpochRanges | None = None,
    liar: Finding | None = None,
) -> SegmentScan:
    """Scan ``log``. ``valid_bytes`` is where kseg's repair truncates: where Kafka's recovery
    does, except that a v2 batch whose only wrong byte lies outside the CRC is kept (and
    patched by the repair). ``kafka_view``: count such a batch as Kafka's recovery does (a
    truncation point when Kafka truncates there), as `index rebuild` must.

    After the first invalid batch, later batches are still CRC-checked and reported (so one run
    shows every damaged batch) as long as the structure lets the walk continue.

    Offsets that go backwards: the batch to blame is found first (kseg.verify.liar: a batch whose
    baseOffset, outside the CRC, does not fit between neighbours that agree with each other) and
    the segment is scanned again with that batch as its first problem (``liar``), so the valid
    prefix ends AT it. What Kafka does with such a segment is its own walk (kafka_walk.py).
    """
    seg = log if isinstance(log, Segment) else Segment(log, whole_indexes=True)
    log, base = seg.log, seg.base_offset
    name = str(log)
    scan = SegmentScan(log, base, seg.size())
    builder = IndexBuilder(base, index_interval_bytes)
    scan.rebuilt = builder
    index_views = open_indexes(seg) if check_indexes else None
    prev_last = base - 1 if prev_last_offset is None else max(prev_last_offset, base - 1)
    valid = True
    add = builder.add
    valid_last = None
    epochs = epochs or EpochRanges([])
    want_epoch, epoch_next = None, -(1 << 63)
    liar_pos = -1 if liar is None else liar.position
    txn_start = None if txn is None else dict(txn.ongoing)  # for a scan again (rare)
    with seg.mapped(sequential=True) as buf:

        def look(t: tuple) -> None:
            """Every per-batch check for one walk row (the common case inline)."""
            nonlocal prev_last, valid, valid_last, want_epoch, epoch_next
            pos, size, magic, first, last, max_ts, count, attrs, pid, ok, ple = t
            if first >= epoch_next:  # the next leader-epoch range (rare)
                want_epoch, epoch_next = epochs.expected(first)
            # fast path: a good, ordinary batch needs no further look
            if (
                deep
                or pos == liar_pos
                or (ple != want_epoch and want_epoch is not None and magic >= V2_MAGIC)
                or not ok
                or magic > V2_MAGIC
                or (magic < V2_MAGIC and attrs & _LEGACY_CODEC)
                or first <= prev_last
                or last - base > INT32_MAX
                or (
                    magic == V2_MAGIC
                    and (attrs & v2.ATTR_CONTROL or not 0 <= count <= last - first + 1)
                )
            ):
                h = EntryHeader(*t)
                problem = None
                if magic != V2_MAGIC:
                    h, problem = _magic_check(h, buf, name, scan, valid, kafka_view, prev_last)
                    t = h
                    pos, size, magic, first, last, max_ts, count, attrs, pid, ok, ple = h
                if problem is None and pos == liar_pos:
                    problem = liar
                if problem is None:
                    problem = _check_entry(h, buf, base, prev_last, name, deep, scan)
                if (
                    problem is None
                    and want_epoch is not None
                    and ple != want_epoch
                    and magic >= V2_MAGIC  # legacy messages carry no leader epoch
                ):
                    _epoch_check(h, epochs, name, scan, valid)
                if problem is not None:
                    if valid:
                        if problem.kind == INVALID_CONTROL:
                            scan.kafka_fatal = problem
                        _stop(scan, problem)
                        valid = False
                    else:
                        scan.findings.append(problem)
                    if problem is not liar and problem.kind != K.OFFSET_OUT_OF_RANGE:
                        prev_last = max(prev_last, last)  # (a lying offset says nothing)
                    return
            prev_last = last
            if not valid:
                return
            # a valid entry in the prefix recovery keeps
            scan.batches += 1
            if scan.first_offset is None:
                scan.first_offset = first
            if max_ts > scan.max_timestamp:
                scan.max_timestamp = max_ts
            add(last, max_ts, size)
            valid_last = last
            if txn is not None and magic >= V2_MAGIC and pid >= 0:
                _track_txn(txn, EntryHeader(*t), buf, scan)

        plain_run = (
            None
            if deep or liar is not None or not _I64_MIN <= base <= _I64_MAX
            else kernel_walk.plain_runner()
        )
        try:
            if plain_run is None:  # the core's walk (or --deep: every batch gets a look)
                for t in seg.walk_headers(buf):
                    look(t)
            else:
                # the kernel's walk, in blocks of packed rows: runs of plain batches are taken
                # whole (counted, indexed) without a Python object each; every other row gets
                # the look above
                row_size = ROW.size
                track = txn is not None
                for block in seg.walk_blocks(buf):
                    view = memoryview(block)
                    i, n = 0, len(view)
                    while i < n:
                        k, last, max_ts = plain_run(
                            view[i:], base, prev_last, want_epoch, min(epoch_next, _I64_MAX), track
                        )
                        if k:
                            j = i + k * row_size
                            if valid:
                                if scan.first_offset is None:
                                    scan.first_offset = ROW.unpack_from(view, i)[3]
                                scan.batches += k
                                if max_ts > scan.max_timestamp:
                                    scan.max_timestamp = max_ts
                                kernel_walk.index_add(builder, view[i:j])
                                valid_last = last
                            prev_last = last
                            i = j
                            if i >= n:
                                break
                        r = ROW.unpack_from(view, i)
                        look(r[:9] + (r[9] == 1,) + r[10:])
                        i += row_size
        except CorruptionError as exc:
            f = from_error(exc.in_file(name), name)
            if valid:
                _stop(scan, f)
            else:
                scan.findings.append(f)
        too_big = seg.oversize()  # the walk saw only the part Kafka addresses
        if too_big is not None:
            f = from_error(too_big, name)
            if scan.first_error is None:
                _stop(scan, f)
            else:
                scan.findings.append(f)
        stop = scan.first_error
        if liar is None and stop is not None and stop.kind == K.OFFSETS_NOT_INCREASING:
            from kseg.verify.liar import find_liar  # offsets going back: rare

            found = find_liar(seg, buf, stop.position, name)
            if found is not None:  # scan again, the lying batch first (rare: a corrupt segment)
                if txn is not None:
                    txn.ongoing = txn_start
                return scan_segment(
                    seg,
                    index_interval_bytes=index_interval_bytes,
                    deep=deep,
                    check_indexes=check_indexes,
                    txn=txn,
                    prev_last_offset=prev_last_offset,
                    kafka_view=kafka_view,
                    epochs=epochs,
                    liar=found,
                )
        backwards = next((f for f in scan.findings if f.kind in _KAFKA_WALK_KINDS), None)
        if (
            backwards is not None
            and (stop is None or stop.kind in _KAFKA_WALK_KINDS)  # else Kafka stops before it
            and _before_kafka_stop(scan, backwards.position)
        ):
            _kafka_offsets(scan, seg, buf, index_interval_bytes)
    builder.finish()
    scan.last_offset = valid_last
    scan.valid_bytes = builder.valid_bytes
    if (
        stop is not None
        and stop.kind not in _KAFKA_WALK_KINDS  # Kafka's own walk (kafka_walk) says what it does
        and scan.kafka_fatal is not stop
        and (scan.kafka_stop is None or stop.position < scan.kafka_stop)
    ):
        scan.kafka_stop = stop.position
        scan.kafka_end = base if valid_last is None else valid_last + 1
    if index_views is not None:
        scan.offset_index, scan.time_index = index_statuses(
            seg,
            index_views,
            builder,
            scan.base_offset,
            scan.valid_bytes,
            scan.max_timestamp,
            scan.patches,
        )
    return scan


_OVERFLOW_MESSAGE = (
    "offset {offset} does not fit 0..2^31-1 past the segment's base offset {base}: Kafka's recovery"
    " (LogSegment.ensureOffsetInRange) throws LogSegmentOffsetOverflowException, and the segment"
    " split that follows refuses the segment (LocalLog.splitOverflowedSegment: 'Split operation"
    " is only permitted for segments with overflow'): the broker does not start"
)
_OFFSET_KINDS = (K.BAD_BASE_OFFSET, K.OFFSETS_NOT_INCREASING, K.OFFSET_OUT_OF_RANGE)
# where kseg's scan stops but Kafka's recovery does not (RecordBatch.ensureValid checks only the
# size and the CRC): Kafka's own walk (kafka_walk) says what it does. INVALID_BATCH is a
# CRC-valid batch whose count or last_offset_delta contradicts its offsets (a writer's bug, not
# a disk error): Kafka keeps it, and consumers fail on it.
_KAFKA_WALK_KINDS = (*_OFFSET_KINDS, K.INVALID_BATCH)


def _before_kafka_stop(scan: SegmentScan, position: int) -> bool:
    return scan.kafka_stop is None or position < scan.kafka_stop


def _kafka_offsets(scan: SegmentScan, seg: Segment, buf, index_interval_bytes: int) -> None:
    """What Kafka's LogSegment.recover does with a segment whose offsets go backwards before its
    first invalid batch (kafka_walk): it empties the segment when an index append refuses an
    entry, splits it when an offset leaves the 32-bit range, else keeps every batch."""
    walk = kafka_walk(seg, buf, index_interval_bytes)
    scan.kafka_stop, scan.kafka_end = walk.stop, walk.next_offset
    scan.kafka_refused = walk.refused
    scan.kafka_overflow = walk.overflow
    if walk.overflow is not None:  # LogLoader.retryOnOffsetOverflow -> splitOverflowedSegment
        scan.kafka_fatal = Finding(
            K.ERROR,
            K.OFFSET_OUT_OF_RANGE,
            str(scan.log),
            walk.overflow,
            walk.overflow_offset,
            _OVERFLOW_MESSAGE.format(offset=walk.overflow_offset, base=scan.base_offset),
        )
    end = min(p for p in (walk.stop, walk.overflow, 1 << 62) if p is not None)
    scan.kafka_kept_offsets = sorted(
        {
            f.position
            for f in scan.findings
            if f.kind in (K.BAD_BASE_OFFSET, K.OFFSETS_NOT_INCREASING, K.INVALID_BATCH)
            and f.position < end
        }
    )


class EpochRanges:
    """What leader-epoch-checkpoint proves about each batch's partitionLeaderEpoch.

    Epoch k was the leader epoch from its start offset s_k until epoch k+1 began at s_(k+1), so
    every batch whose base offset lies in [s_k, s_(k+1)) was written with epoch k: there the
    checkpoint PROVES the value. In the last, open range [s_n, ...) a newer epoch may have begun
    that the checkpoint does not record yet (it lags after an unclean shutdown, and Kafka's
    recovery adds such an epoch to its cache), so only a value BELOW epoch n is provably wrong
    (epochs never decrease along a log), and its right value is not proven. Before s_0 nothing
    is known (entries below the log start offset are dropped).
    """

    def __init__(self, entries) -> None:
        self.entries = sorted(entries, key=lambda e: e.start_offset)

    def expected(self, offset: int) -> tuple[int | None, int]:
        """(the epoch to compare with at ``offset`` or None, the offset where that changes)."""
        es = self.entries
        if not es or offset < es[0].start_offset:
            return None, es[0].start_offset if es else 1 << 63
        for a, b in zip(es, es[1:], strict=False):
            if a.start_offset <= offset < b.start_offset:
                return a.epoch, b.start_offset
        return es[-1].epoch, 1 << 63

    def closed(self, offset: int) -> bool:
        es = self.entries
        return bool(es) and es[0].start_offset <= offset < es[-1].start_offset


def _epoch_check(h: EntryHeader, epochs: EpochRanges, name: str, scan: SegmentScan, valid: bool):
    """A partitionLeaderEpoch (outside the CRC) that leader-epoch-checkpoint contradicts. Kafka's
    LogSegment.recover keeps the batch, and loads an epoch above its latest into its
    leader-epoch cache (leaderEpochCache.assign)."""
    want, _ = epochs.expected(h.first_offset)
    got = h.partition_leader_epoch
    pos = h.position
    at = pos + v2.FIELD_POS["partition_leader_epoch"]
    if epochs.closed(h.first_offset):
        message = (
            f"partition_leader_epoch {got} at byte {at} (outside the CRC): leader-epoch-checkpoint"
            f" proves epoch {want} for offset {h.first_offset}; Kafka keeps the batch"
            + (" and loads the wrong epoch into its leader-epoch cache" if got > want else "")
        )
        scan.findings.append(
            Finding(K.ERROR, K.LEADER_EPOCH, name, pos, h.first_offset, message, True)
        )
        if valid:
            scan.patches.append(
                Patch(
                    name,
                    at,
                    got.to_bytes(4, "big", signed=True),
                    want.to_bytes(4, "big", signed=True),
                    message,
                )
            )
            scan.kafka_kept_epoch.append(pos)
    elif got < want:
        message = (
            f"partition_leader_epoch {got} at byte {at} (outside the CRC) is below epoch {want},"
            f" which leader-epoch-checkpoint starts at or before offset {h.first_offset} (epochs"
            " never decrease); the right value is not proven (a newer epoch may be missing from"
            " the checkpoint), so it is not repaired"
        )
        scan.findings.append(Finding(K.ERROR, K.LEADER_EPOCH, name, pos, h.first_offset, message))
        if valid:
            scan.kafka_kept_epoch.append(pos)


def _magic_check(
    h: EntryHeader,
    buf,
    name: str,
    scan: SegmentScan,
    valid: bool,
    kafka_view: bool,
    prev_last: int,
) -> tuple[EntryHeader, Finding | None]:
    """A magic byte other than 2 where a v2 batch's CRC-32C (which covers every byte but the
    first 21) matches: only the magic byte is wrong. Kafka (FileLogInputStream) reads a magic
    >= 2 as v2 and keeps the batch silently; a magic 0/1 as a legacy message whose CRC-32 fails,
    and truncates there. kseg keeps the batch and patches the byte back to 2."""
    pos = h.position
    # magic > 2 was read as v2 already: its CRC-32C is the proof
    flipped = (
        h.crc_ok if h.magic > V2_MAGIC else not h.crc_ok and v2_crc_matches(buf, pos, pos + h.size)
    )
    if not flipped:
        return h, None
    v = v2.RecordBatch(buf, pos)
    message = bad_magic_message(h.magic, pos, True)
    finding = Finding(K.ERROR, K.BAD_MAGIC, name, pos, v.base_offset, message, True)
    if h.magic < V2_MAGIC and kafka_view:
        return h, finding  # Kafka's recovery stops here
    scan.findings.append(finding)
    if valid:
        scan.patches.append(
            Patch(name, pos + MAGIC_POS, bytes([buf[pos + MAGIC_POS]]), bytes([V2_MAGIC]), message)
        )
        if h.magic > V2_MAGIC:
            scan.kafka_kept_bad.append(pos)
        elif scan.kafka_stop is None:
            scan.kafka_stop = pos
            scan.kafka_end = prev_last + 1
    return EntryHeader(
        pos,
        v.size,
        V2_MAGIC,
        v.base_offset,
        v.last_offset,
        v.max_timestamp,
        v.records_count,
        v.attributes,
        v.producer_id,
        True,
        v.partition_leader_epoch,
    ), None


def _check_entry(
    h, buf, base: int, prev_last: int, name: str, deep: bool, scan: SegmentScan
) -> Finding | None:
    if not h.crc_ok:
        kind = format_of(h.magic).crc_mismatch
        offset = h.last_offset
        if h.magic > V2_MAGIC:  # maybe not a v2 batch at all: only the first 12 bytes are certain
            kind = f"magic {h.magic}, read as v2 as Kafka does: {kind}"
            offset = h.first_offset
        return Finding(K.ERROR, CRC_MISMATCH, name, h.position, offset, kind, True)
    if h.magic == V2_MAGIC:
        if h.last_offset < h.first_offset:
            return Finding(
                K.ERROR,
                K.INVALID_BATCH,
                name,
                h.position,
                h.first_offset,
                "negative last_offset_delta",
                True,
            )
        if h.records_count < 0 or h.records_count > h.last_offset - h.first_offset + 1:
            return Finding(
                K.ERROR,
                K.INVALID_BATCH,
                name,
                h.position,
                h.first_offset,
                f"records_count {h.records_count} does not fit offsets {h.first_offset}..{h.last_offset}",
                True,
            )
    if h.first_offset <= prev_last:
        return Finding(
            K.ERROR,
            K.OFFSETS_NOT_INCREASING,
            name,
            h.position,
            h.first_offset,
            f"offset {h.first_offset} does not increase after {prev_last}"
            + (" (below the segment's base offset)" if h.first_offset < base else ""),
            True,
        )
    if h.last_offset - base > INT32_MAX:
        return Finding(
            K.ERROR,
            K.OFFSET_OUT_OF_RANGE,
            name,
            h.position,
            h.last_offset,
            _OVERFLOW_MESSAGE.format(offset=h.last_offset, base=base),
            True,
        )
    if h.magic == V2_MAGIC and h.attributes & v2.ATTR_CONTROL and h.producer_id >= 0:
        problem = _control_check(h, buf, name, scan)
        if problem is not None:
            return problem
    if deep:
        return _deep_check(h, buf, name, scan)
    if h.magic < V2_MAGIC and h.attributes & _LEGACY_CODEC:
        _wrapper_check(h, buf, name, scan)
    return None


# Said of every legacy wrapper Kafka's reader refuses: why it is not a truncation point.
KEPT_WRAPPER = (
    "; Kafka's recovery keeps it (LogSegment.recover checks only a legacy message's size and"
    " CRC-32, never what it holds), and consumers fail on it"
)


def _wrapper_check(h, buf, name: str, scan: SegmentScan) -> None:
    """A legacy compressed wrapper as Kafka's reader (AbstractLegacyRecordBatch) judges it before
    its first message: not zstd, a value, at least one inner message (LegacyEntry.check_wrapper;
    --deep checks every inner message). Not a truncation point: Kafka's recovery keeps it."""
    try:
        LegacyEntry(buf, h.position, name).check_wrapper()
    except CorruptionError as exc:
        f = from_error(exc.in_file(name), name, repairable=False, note=KEPT_WRAPPER)
        scan.findings.append(f)


def _deep_check(h, buf, name: str, scan: SegmentScan) -> Finding | None:
    """Record-level checks. Problems here are not where recovery truncates: not repairable."""
    from kseg.format.log import iter_entries

    entry = next(iter_entries(buf, h.position, h.position + h.size, source=name))
    try:
        prev = None
        max_ts = -1
        odd_ts = False
        for rec in entry.records():
            if prev is not None and rec.offset <= prev:
                scan.findings.append(
                    Finding(
                        K.ERROR,
                        K.INVALID_BATCH,
                        name,
                        h.position,
                        rec.offset,
                        f"record offset {rec.offset} does not increase after {prev}",
                    )
                )
                break
            if rec.offset > h.last_offset:
                scan.findings.append(
                    Finding(
                        K.ERROR,
                        K.INVALID_BATCH,
                        name,
                        h.position,
                        rec.offset,
                        f"record offset {rec.offset} is past the batch's last offset {h.last_offset}",
                    )
                )
                break
            prev = rec.offset
            max_ts = max(max_ts, rec.timestamp)
            if not odd_ts and rec.timestamp != -1 and not in_date_range(rec.timestamp):
                odd_ts = True  # once a batch: Kafka accepts any long, dates do not
                scan.findings.append(
                    Finding(
                        K.INFO,
                        K.TIMESTAMP_RANGE,
                        name,
                        h.position,
                        rec.offset,
                        f"record timestamp {rec.timestamp} ms is outside the years 0001-9999: "
                        "shown as a number, null in Spark's timestamp column",
                    )
                )
        if (
            h.magic == V2_MAGIC
            and not h.attributes & v2.ATTR_TIMESTAMP_TYPE
            and prev is not None
            and max_ts != h.max_timestamp
        ):
            scan.findings.append(
                Finding(
                    K.WARNING,
                    K.TIMESTAMP,
                    name,
                    h.position,
                    h.first_offset,
                    f"max_timestamp {with_iso(h.max_timestamp)} differs from the records' max "
                    f"{with_iso(max_ts)}",
                )
            )
    except CorruptionError as exc:
        f = from_error(exc, name, repairable=False, note=KEPT_WRAPPER if h.magic < V2_MAGIC else "")
        scan.findings.append(f)
    return None


def _control_check(h, buf, name: str, scan: SegmentScan) -> Finding | None:
    """A control batch with a producer id, read as Kafka's producer-state replay reads it
    (LogSegment.updateProducerState -> ProducerAppendInfo.append -> EndTransactionMarker
    .deserialize of the first record). KRaft's control batches (types 2-6) carry producer id -1:
    Kafka's recovery never reads them, and neither does this check.

    Accepted: a key or value version above 0 and extra value bytes (read as version 0; info).
    Unreadable (a short or null key or value, a negative version, a type that is not ABORT or
    COMMIT): Kafka's LogSegment.recover counts the batch, but the producer-state rebuild then
    throws outside recovery's catch, and the broker stops with "Error starting LogManager" on
    every start. It starts only from the log cut at the START of this batch: kseg's truncation
    point.
    """
    try:
        ctl = v2.RecordBatch(buf, h.position, name).control_record(end_txn=True)
    except CorruptionError as exc:
        exc.kind = INVALID_CONTROL
        return from_error(
            exc,
            name,
            note="; Kafka cannot read this control record: its recovery keeps the batch, then fails"
            " to start the broker on every start (Error starting LogManager) until the log is cut"
            f" at the start of this batch (byte {h.position}), where kseg's repair truncates",
        )
    if ctl is not None and ctl.unusual:
        scan.findings.append(
            Finding(
                K.INFO,
                K.CONTROL_VERSION,
                name,
                h.position,
                h.first_offset,
                f"{ctl.type_name} marker with {ctl.unusual}: Kafka accepts it and reads it as"
                " version 0 (EndTransactionMarker.deserializeValue)",
            )
        )
    return None


def _track_txn(txn: TxnTracker, h, buf, scan: SegmentScan) -> None:
    if h.producer_id < 0:
        return
    if h.attributes & v2.ATTR_CONTROL:
        ctl = v2.RecordBatch(buf, h.position).control_record(end_txn=True)
        if ctl is not None:
            # Kafka: appendEndTxnMarker(marker, producerEpoch, batch.baseOffset(), ...)
            aborted, closed = txn.on_end_marker(h.producer_id, h.first_offset, ctl.type == 1)
            if aborted is not None:
                (scan.aborted if closed else scan.empty_aborts).append(aborted)
    else:
        txn.on_data_batch(h.producer_id, h.first_offset, bool(h.attributes & v2.ATTR_TRANSACTIONAL))


def aborted_under(scan: SegmentScan, empty_aborts: bool) -> list[AbortedTxn]:
    """The segment's `.txnindex` entries under Kafka 2.8+'s rule, or (``empty_aborts``) 0.11-2.7's,
    which also indexed every ABORT that closed nothing (kseg.format.kafka_version); in marker
    order, as Kafka appends them."""
    if not empty_aborts or not scan.empty_aborts:
        return list(scan.aborted)
    return sorted(scan.aborted + scan.empty_aborts, key=lambda a: a.last_offset)
