"""`kseg verify`: every check over a partition directory and a log.dirs root. Returns findings."""

from __future__ import annotations

from pathlib import Path

from kseg.format import checkpoint as cp
from kseg.format import txn_index as tx
from kseg.format.accumulator import Accumulator
from kseg.format.entry import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, SIZE_POS
from kseg.format.errors import CorruptionError
from kseg.format.index_rule import DEFAULT_INDEX_INTERVAL_BYTES
from kseg.format.magic import MIN_ENTRY_SIZE
from kseg.format.txn_state import TxnTracker
from kseg.storage import files as F
from kseg.storage.partition import Partition
from kseg.storage.segment import Segment
from kseg.storage.side_files import read_side_file
from kseg.storage.tree import Target
from kseg.verify import findings as K
from kseg.verify.findings import Finding
from kseg.verify.index_findings import index_findings
from kseg.verify.partition_files import partition_files
from kseg.verify.segment import EpochRanges, SegmentScan, scan_segment


class PartitionReport(Accumulator):  # filled in as the scan goes: an accumulator, not a value
    target: Target
    scans: list[SegmentScan]
    findings: list[Finding]  # partition-level ones
    log_start_offset: int | None  # from <log.dir>/log-start-offset-checkpoint
    clean_shutdown: bool  # <log.dir>/.kafka_cleanshutdown exists
    recovery_point: int | None  # from <log.dir>/recovery-point-offset-checkpoint
    whole: bool  # every segment of the partition was scanned
    # every scan replayed the partition's transactions from its first segment (verify_target's
    # replay_txns): each scan's rebuilt indexes and aborted list are what `index rebuild` writes
    txns_replayed: bool
    # the `.log`s Kafka recovers while LOADING the partition, on every start, whatever the
    # shutdown and the recovery point: LogLoader.loadSegmentFiles runs recoverSegment on a segment
    # whose LogSegment.sanityCheck throws, i.e. whose `.index` is missing (NoSuchFileException) or
    # whose `.txnindex` is not a whole number of entries (TransactionIndex.sanityCheck:
    # CorruptIndexException). That truncation deletes no later segment. Value: why
    # ("missing_index" or "partial_txnindex").
    recovered_at_load: dict[Path, str]
    # what LogLoader.load does with leftover `.swap` files before anything else (see _swaps):
    # one {"action": "complete_swap" | "delete_swap", ...} per `.swap` segment
    kafka_swaps: list[dict]
    # after a clean shutdown Kafka recovers nothing, but LogLoader still reads the last
    # segment's batch headers from its last index entry on (recoverLog ->
    # deleteSegmentsIfLogStartGreaterThanLogEnd -> LogSegment.readNextOffset): an entry whose size
    # field is below 14 there throws CorruptRecordException ("Found record size 0 smaller than
    # minimum record overhead (14)", FileLogInputStream.nextBatch) and the broker stops. The
    # entry's byte position (None: nothing there stops it)
    kafka_tail_fatal: int | None

    __slots__ = (
        "target",
        "scans",
        "findings",
        "log_start_offset",
        "clean_shutdown",
        "recovery_point",
        "whole",
        "txns_replayed",
        "recovered_at_load",
        "kafka_swaps",
        "kafka_tail_fatal",
    )

    def __init__(
        self,
        target: Target,
        scans: list[SegmentScan] | None = None,
        findings: list[Finding] | None = None,
        log_start_offset: int | None = None,
        clean_shutdown: bool = False,
        recovery_point: int | None = None,
        whole: bool = True,
        txns_replayed: bool = False,
        recovered_at_load: dict[Path, str] | None = None,
        kafka_swaps: list[dict] | None = None,
        kafka_tail_fatal: int | None = None,
    ) -> None:
        self.target = target
        self.scans = [] if scans is None else scans
        self.findings = [] if findings is None else findings
        self.log_start_offset = log_start_offset
        self.clean_shutdown = clean_shutdown
        self.recovery_point = recovery_point
        self.whole = whole
        self.txns_replayed = txns_replayed
        self.recovered_at_load = {} if recovered_at_load is None else recovered_at_load
        self.kafka_swaps = [] if kafka_swaps is None else kafka_swaps
        self.kafka_tail_fatal = kafka_tail_fatal

    @property
    def all_findings(self) -> list[Finding]:
        return [f for s in self.scans for f in s.findings] + self.findings

    @property
    def below_log_start(self) -> bool:
        """Reported here (below_log_start), so the root check does not repeat it."""
        return any(f.kind == K.BELOW_LOG_START for f in self.findings)

    @property
    def first_corrupt(self) -> int | None:
        """Index (in scans) of the first segment Kafka's recovery would truncate."""
        for i, s in enumerate(self.scans):
            if s.corrupt:
                return i
        return None

    def end_after_repair(self, *, keep_later_segments: bool = False) -> int | None:
        """The log end offset once recovery (or kseg's repair) has run: the next offset of the
        last segment that remains (Kafka: lastSegment.readNextOffset; an empty segment's is its
        base offset)."""
        if not self.scans:
            return None
        first = self.first_corrupt
        last = self.scans[-1] if first is None or keep_later_segments else self.scans[first]
        return last.base_offset if last.last_offset is None else last.last_offset + 1

    def reset_to(self, *, keep_later_segments: bool = False) -> int | None:
        """The log start offset when the log, after recovery, would end below it (Kafka then
        deletes every segment and creates one empty segment there); else None."""
        end = self.end_after_repair(keep_later_segments=keep_later_segments)
        start = self.log_start_offset
        if not self.whole or start is None or end is None or end >= start:
            return None
        return start

    def first_recovered(self) -> int:
        """Index (in scans) of the first segment Kafka's recovery runs on after an unclean
        shutdown: the one holding the recovery point (Kafka: segments.values(recoveryPoint,
        MaxValue)); every segment without a recovery point."""
        first = 0
        if self.recovery_point is not None:
            for i, s in enumerate(self.scans):
                if s.base_offset <= self.recovery_point:
                    first = i
        return first

    @property
    def kafka_log_end(self) -> int | None:
        """The log end Kafka has after its next start, which is what it deletes snapshots and
        resets checkpoints against: its recovery truncates at the first invalid batch from
        ``first_recovered()`` on; bad bytes below that segment stay, and so does what follows
        them (None: Kafka would not start, see kafka_outcome)."""
        if not self.scans or self.kafka_tail_fatal is not None:
            return None
        first = self.first_recovered()
        for i, s in enumerate(self.scans):
            if s.kafka_fatal is not None and (
                s.kafka_stop is None or s.kafka_fatal.position < s.kafka_stop
            ):
                return None
            if s.log in self.recovered_at_load:
                continue  # cut while loading (or fatal, above); the later segments stay
            if s.kafka_refused is not None and i >= first:
                return s.base_offset  # LogLoader.recoverLog: segment.truncateTo(baseOffset)
            if s.kafka_stop is not None and i >= first:
                return s.kafka_end
        last = self.scans[-1]
        if last.kafka_end is not None:  # Kafka's walk kept batches kseg's scan does not
            return last.kafka_end
        return last.base_offset if last.last_offset is None else last.last_offset + 1

    @property
    def log_end_offset(self) -> int | None:
        """Next offset after the valid data (what the log end would be after recovery)."""
        end = None
        for s in self.scans:
            if s.last_offset is not None:
                end = s.last_offset + 1
            elif end is None:
                end = s.base_offset
            if s.corrupt:
                break
        return end


def verify_target(
    target: Target,
    *,
    deep: bool = False,
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
    replay_txns: bool = False,
) -> PartitionReport:
    """Scan ``target``. ``replay_txns`` (for a repair): also replay the transactions of a whole
    partition, so that the scans carry every index a repair rebuilds (no second scan)."""
    report = PartitionReport(target)
    pdir = target.partition_dir
    try:
        part = Partition(pdir, whole_indexes=True)
    except OSError as exc:  # an unreadable partition dir: report it; the caller goes on
        report.findings.append(
            Finding(K.ERROR, K.UNREADABLE, str(pdir), None, None, exc.strerror or str(exc))
        )
        return report
    all_logs = [s.log for s in part.segments]
    by_log = {s.log: s for s in part.segments}
    logs = target.logs
    report.whole = len(logs) == len(all_logs)
    report.log_start_offset = None if part.state else part.checkpointed_log_start()
    report.clean_shutdown = (target.log_dir / ".kafka_cleanshutdown").exists()
    report.recovery_point = None if part.state else _recovery_point(part)
    epochs = _epoch_ranges(part)
    txn = None
    if replay_txns and logs == all_logs and logs:
        from kseg.verify.txn_seed import seed_from_snapshot  # a repair's scan only (start-up time)

        txn = TxnTracker()  # as rebuild_target replays it
        seed_from_snapshot(txn, logs[0])
        report.txns_replayed = True
    try:
        for log in logs:
            try:
                seg = by_log.get(log) or Segment(log, whole_indexes=True)
                try:
                    scan = scan_segment(
                        seg,
                        index_interval_bytes=index_interval_bytes,
                        deep=deep,
                        epochs=epochs,
                        txn=txn,
                    )
                    why = _recovered_at_load(seg)
                    if why is not None:
                        report.recovered_at_load[log] = why
                finally:
                    seg.release()  # one segment's indexes in memory at a time
            except OSError as exc:  # name the file that failed: the log or one of its indexes
                report.txns_replayed = False
                report.findings.append(
                    Finding(
                        K.ERROR,
                        K.UNREADABLE,
                        str(exc.filename or log),  # the file that failed: the .log or an index
                        getattr(exc, "position", None),  # where a file shrank while read
                        None,
                        exc.strerror or str(exc),
                    )
                )
                continue
            active = log == all_logs[-1]
            index_findings(scan, active)
            report.scans.append(scan)
    except BaseException as exc:
        if isinstance(exc, Exception):
            raise
        # an interrupt (the CLI's Interrupted, KeyboardInterrupt): the segments scanned
        # before it, for the caller to report (verify ORs 32 with what it had found)
        exc.kseg_partial = report
        raise
    _segment_order(report)
    if report.clean_shutdown and report.whole and report.scans:
        last = report.scans[-1]
        if last.kafka_stop is not None and last.log not in report.recovered_at_load:
            report.kafka_tail_fatal = _size_below_overhead(last.log, last.kafka_stop)
    if report.whole:  # a whole partition, not one file of it
        found, report.kafka_swaps = partition_files(pdir, part, report.kafka_log_end)
        report.findings.extend(found)
        _below_log_start(report)
    return report


def _size_below_overhead(log: Path, start: int) -> int | None:
    """The first entry from ``start`` on whose size field Kafka's FileLogInputStream.nextBatch
    refuses (below LegacyRecord.RECORD_OVERHEAD_V0, 14), walking entry headers as it does: it
    stops quietly with fewer than 18 bytes left or at an entry that runs past the end."""
    try:
        with open(log, "rb") as f:
            end = f.seek(0, 2)
            pos = start
            while pos < end - HEADER_SIZE_UP_TO_MAGIC:
                f.seek(pos + SIZE_POS)
                size = int.from_bytes(f.read(4), "big", signed=True)
                if size < MIN_ENTRY_SIZE:
                    return pos
                if pos > end - LOG_OVERHEAD - size:
                    return None
                pos += LOG_OVERHEAD + size
    except OSError:
        return None
    return None


def _recovered_at_load(seg: Segment) -> str | None:
    """Why Kafka's LogSegment.sanityCheck fails on load (see PartitionReport.recovered_at_load):
    the `.index` is missing, or the `.txnindex` holds a partial entry; None: it passes."""
    if seg.index(F.INDEX).missing:
        return "missing_index"
    txn = seg.index(F.TXN_INDEX).view
    return "partial_txnindex" if txn is not None and len(txn) % tx.ENTRY_SIZE else None


def _recovery_point(part: Partition) -> int | None:
    path = part.log_dir / "recovery-point-offset-checkpoint"
    if not path.is_file():
        return None
    try:
        entries = cp.read_offset_checkpoint(read_side_file(path, F.OFFSET_CHECKPOINT))
    except (OSError, CorruptionError):
        return None
    key = (part.topic, part.partition)
    return next((e.offset for e in entries if (e.topic, e.partition) == key), None)


def _epoch_ranges(part: Partition) -> EpochRanges:
    try:
        entries = part.leader_epochs()
    except (OSError, CorruptionError):
        entries = []  # missing or unreadable (reported by the partition checks): prove nothing
    for a, b in zip(entries, entries[1:], strict=False):
        if b.epoch <= a.epoch or b.start_offset < a.start_offset:
            return EpochRanges([])  # out of order (reported): it proves nothing
    return EpochRanges(entries)


def _below_log_start(report: PartitionReport) -> None:
    """Kafka: LogLoader.recoverLog -> deleteSegmentsIfLogStartGreaterThanLogEnd. When the log
    end after recovery (lastSegment.readNextOffset) is below log-start-offset-checkpoint, Kafka
    deletes every segment, clears the leader-epoch cache and producer state, and creates one
    empty segment at the log start offset -- on every start, clean shutdown or not."""
    start = report.reset_to()
    if start is None:
        return
    end = report.end_after_repair()
    if report.first_corrupt is None:
        message = (
            f"the log ends at offset {end}, below its log start offset {start}"
            " (log-start-offset-checkpoint): Kafka deletes every segment on start and creates one"
            f" empty segment at {start}"
        )
    else:
        message = (
            "once truncated at its first corrupt batch (where Kafka's recovery truncates), the"
            f" log ends at offset {end}, below its log start offset {start}"
            " (log-start-offset-checkpoint): Kafka then deletes every segment and creates one"
            f" empty segment at {start}; so does the repair"
        )
    report.findings.append(
        Finding(
            K.ERROR,
            K.BELOW_LOG_START,
            str(report.target.partition_dir),
            None,
            end,
            message,
            True,
        )
    )


def _segment_order(report: PartitionReport) -> None:
    prev = None
    for s in report.scans:
        if prev is not None and prev.last_offset is not None and prev.last_offset >= s.base_offset:
            report.findings.append(
                Finding(
                    K.ERROR,
                    K.SEGMENT_OVERLAP,
                    str(s.log),
                    0,
                    s.base_offset,
                    f"segment starts at offset {s.base_offset} but the previous one ends at {prev.last_offset}",
                )
            )
        if s.first_offset is not None and s.first_offset < s.base_offset:
            report.findings.append(
                Finding(
                    K.ERROR,
                    K.SEGMENT_NAME,
                    str(s.log),
                    0,
                    s.first_offset,
                    f"first offset {s.first_offset} is below the file name's {s.base_offset}",
                )
            )
        prev = s
