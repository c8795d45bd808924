"""`kseg verify` of Kafka 0.7 partitions: 0.7's recovery rule on every segment, contiguity, and a
repair plan for the shared repair machinery (repair.py: quarantine, manifest, restore).

0.7's recovery (``FileMessageSet.recover``, only the LAST segment, only without
`.kafka_cleanshutdown`) walks from byte 0 and stops at fewer than 4 bytes left, a size below 5,
an entry running past the end, or a payload CRC mismatch, and truncates there. kseg applies the
same walk to every segment (an older segment's corruption is served to consumers by 0.7, never
repaired by it), also stops at an unknown magic (0.7 threw) or codec, and with ``deep`` checks
the messages inside compressed wrappers (0.7's recovery does not). Segment names are byte
offsets: ``name + size == next name`` must hold, or a 0.7 broker refuses to start.
"""

from __future__ import annotations

from pathlib import Path

from kseg.format import kafka07 as k7
from kseg.format.accumulator import Accumulator
from kseg.format.compression import DEFAULT_MAX_DECOMPRESSED
from kseg.format.errors import CorruptionError
from kseg.storage.kafka07 import Partition07, Segment07
from kseg.storage.tree import Target
from kseg.verify import findings as K
from kseg.verify.findings import Finding, from_error

SEGMENT_GAP = "segment_not_contiguous"


class Scan07(Accumulator):
    """One 0.7 segment's scan, filled in as the walk goes (an accumulator, not a value)."""

    __slots__ = ("log", "base_offset", "size", "valid_bytes", "entries", "messages")
    __slots__ += ("first_error", "findings")

    # what run.py's segment events read (0.7 has no patches and no index files)
    patches: tuple = ()
    offset_index: None = None
    time_index: None = None

    def __init__(self, log: Path, base_offset: int, size: int) -> None:
        self.log = log
        self.base_offset = base_offset
        self.size = size
        self.valid_bytes = 0
        self.entries = 0
        self.messages = 0  # inner messages checked (deep)
        self.first_error: CorruptionError | None = None
        self.findings: list[Finding] = []

    @property
    def corrupt(self) -> bool:
        return self.first_error is not None


class Report07(Accumulator):
    """One 0.7 partition's scans, filled in as they run (an accumulator, not a value)."""

    __slots__ = ("target", "scans", "findings", "clean_shutdown")

    # what the log.dirs checkpoint check reads: 0.7 has no checkpoint files to compare
    kafka_log_end = None
    below_log_start = False

    def __init__(self, target: Target) -> None:
        self.target = target
        self.scans: list[Scan07] = []
        self.findings: list[Finding] = []  # partition-level: contiguity
        self.clean_shutdown = False

    @property
    def all_findings(self) -> list[Finding]:
        return [f for s in self.scans for f in s.findings] + self.findings

    @property
    def first_corrupt(self) -> int | None:
        return next((i for i, s in enumerate(self.scans) if s.corrupt), None)


def verify_target07(
    target: Target, *, deep: bool = False, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED
) -> Report07:
    report = Report07(target)
    report.clean_shutdown = (target.log_dir / ".kafka_cleanshutdown").exists()
    try:
        part = Partition07(target.partition_dir, target.logs)
    except OSError as exc:
        where = exc.filename or target.partition_dir
        report.findings.append(
            Finding(K.ERROR, K.UNREADABLE, str(where), None, None, exc.strerror or str(exc))
        )
        return report
    last = len(part.segments) - 1
    for i, seg in enumerate(part.segments):
        report.scans.append(_scan(seg, i == last, deep, max_decompressed, report.clean_shutdown))
    for gap in part.gaps():
        report.findings.append(
            Finding(K.ERROR, SEGMENT_GAP, str(gap.next_segment), 0, gap.actual, gap.message)
        )
    return report


def _scan(seg: Segment07, is_last: bool, deep: bool, max_decompressed: int, clean: bool) -> Scan07:
    scan = Scan07(seg.path, seg.base_offset, seg.size)
    name = str(seg.path)
    try:
        with seg.mapped() as buf:
            try:
                for e in k7.entries(buf, base=seg.base_offset, source=name):
                    scan.entries += 1
                    scan.valid_bytes = e.position + e.entry_size
                    if deep and e.is_compressed:
                        try:
                            scan.messages += len(
                                k7.inner_messages(e, max_decompressed=max_decompressed)
                            )
                        except CorruptionError as exc:
                            f = from_error(
                                exc,
                                name,
                                repairable=False,
                                note=" (inside a compressed wrapper whose CRC matches: 0.7's"
                                " recovery keeps it and consumers fail on it)",
                            )
                            scan.findings.append(f)
            except CorruptionError as exc:
                scan.first_error = exc
                if is_last:
                    note = "; 0.7's recovery truncates the last segment here" + (
                        " after an unclean shutdown (.kafka_cleanshutdown is present now, so"
                        " only after a later crash)"
                        if clean
                        else " on its next start (no .kafka_cleanshutdown)"
                    )
                else:
                    note = "; 0.7 checks only the last segment, so it would serve this to consumers"
                f = from_error(exc, name, note=note)
                scan.findings.insert(0, f)
    except OSError as exc:
        scan.first_error = CorruptionError(exc.strerror or str(exc), kind=K.UNREADABLE)
        scan.findings.append(
            Finding(K.ERROR, K.UNREADABLE, name, None, None, exc.strerror or str(exc))
        )
    return scan
