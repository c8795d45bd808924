"""A partition's files other than its segments' logs: leftovers, orphaned indexes, producer
snapshots, `.txnindex` ranges, leader-epoch-checkpoint, partition.metadata."""

from __future__ import annotations

from pathlib import Path

from kseg.format import checkpoint as cp
from kseg.format import txn_index as tx
from kseg.format.errors import CorruptionError
from kseg.storage import files as F
from kseg.storage.partition import Partition
from kseg.storage.side_files import read_side_file
from kseg.verify import findings as K
from kseg.verify.findings import Finding, from_error
from kseg.verify.swaps import kafka_swaps


def partition_files(
    pdir: Path, part: Partition, end: int | None
) -> tuple[list[Finding], list[dict]]:
    """The findings of ``pdir``'s files beside its segments' logs, and what Kafka does at start
    with its leftover `.swap` files (kseg.verify.swaps). ``end``: the log end Kafka has after its
    next start (PartitionReport.kafka_log_end), which snapshots and epochs are judged against."""
    findings: list[Finding] = []
    logs = part.segments
    segments = {s.base_offset: s for s in logs}
    bases = set(segments)
    # ``end``: what Kafka acts on at its next start (not kseg's repair, which also cuts below
    # the recovery point): a finding that says "Kafka deletes it" must be true of Kafka
    ordered = sorted(bases)
    next_base = dict(zip(ordered, [*ordered[1:], None], strict=False))  # none when no .log
    entries = sorted(pdir.iterdir())
    if not logs:  # Kafka creates such dirs (a new or deleted topic, a reassignment): not an error
        findings.append(
            Finding(
                K.INFO,
                K.NO_SEGMENTS,
                str(pdir),
                None,
                None,
                "empty partition directory: nothing to check"
                if not entries
                else "no segment (.log) file in this partition directory; checking the files it has",
            )
        )
    swaps = kafka_swaps(entries)
    for p in entries:
        if p.is_dir():  # a FIFO or device named like a known file is read, and refused there
            continue
        k = F.file_kind(p)
        if k.temp_suffix:
            findings.append(
                Finding(
                    K.INFO,
                    K.LEFTOVER_FILE,
                    str(p),
                    None,
                    None,
                    f"leftover {k.temp_suffix} file (Kafka completes or removes it at startup)",
                )
            )
            continue
        if k.kind in (F.INDEX, F.TIME_INDEX, F.TXN_INDEX) and k.base_offset not in bases:
            # LogLoader.loadSegmentFiles: "Found an orphaned index file ..., with no
            # corresponding log file." and Files.deleteIfExists: it indexes nothing Kafka keeps
            findings.append(
                Finding(
                    K.INFO,
                    K.ORPHAN_FILE,
                    str(p),
                    None,
                    k.base_offset,
                    f"{p.suffix} file without its .log (Kafka deletes it at startup: "
                    'LogLoader\'s "Found an orphaned index file")',
                )
            )
            continue
        try:
            data = None
            if k.kind == F.TXN_INDEX:  # the segment's, opened there once
                aborted = segments[k.base_offset].aborted_transactions()
                segments[k.base_offset].release()  # the entries hold what they read
            elif k.kind in (F.SNAPSHOT, F.LEADER_EPOCH_CHECKPOINT, F.PARTITION_METADATA):
                data = read_side_file(p, k.kind)
        except OSError as exc:
            findings.append(
                Finding(K.ERROR, K.UNREADABLE, str(p), None, None, exc.strerror or str(exc))
            )
            continue
        except CorruptionError as exc:  # larger than Kafka writes one: refused unread
            sev = K.WARNING if k.kind == F.SNAPSHOT else K.ERROR  # as for its content, below
            findings.append(from_error(exc.in_file(p), str(p), severity=sev, repairable=False))
            continue
        try:
            if k.kind == F.SNAPSHOT:
                from kseg.format import producer_snapshot as ps  # a partition without: not imported

                ps.read_snapshot(data)
                if end is not None and k.base_offset > end:
                    findings.append(
                        Finding(
                            K.INFO,
                            K.CHECKPOINT,
                            str(p),
                            None,
                            k.base_offset,
                            f"snapshot at offset {k.base_offset} is past the log end {end} (Kafka deletes it at startup)",
                        )
                    )
            elif k.kind == F.TXN_INDEX:
                hi = next_base.get(k.base_offset)
                for n, e in enumerate(aborted):
                    if (
                        e.last_offset < k.base_offset
                        or (hi is not None and e.last_offset >= hi)
                        or e.first_offset > e.last_offset
                    ):
                        findings.append(
                            Finding(  # read_committed fetches collect it for the wrong offsets
                                K.ERROR,
                                K.INDEX_MISMATCH,
                                str(p),
                                n * tx.ENTRY_SIZE,
                                e.last_offset,
                                f"aborted transaction {e.first_offset}..{e.last_offset} lies outside the segment",
                            )
                        )
                        break
            elif k.kind == F.LEADER_EPOCH_CHECKPOINT:
                _epochs(findings, p, cp.read_leader_epoch_checkpoint(data), end)
            elif k.kind == F.PARTITION_METADATA:
                cp.read_partition_metadata(data)
        except CorruptionError as exc:
            # Kafka deletes a producer snapshot it cannot read (ProducerStateManager:
            # CorruptSnapshotException) and rebuilds a .txnindex failing its sanity check
            # (LogLoader: CorruptIndexException): warnings. It reads leader-epoch-checkpoint
            # and partition.metadata through CheckpointFileWithFailureHandler, whose IOException
            # takes the whole log dir offline (KafkaStorageException): errors.
            sev = K.WARNING if k.kind in (F.SNAPSHOT, F.TXN_INDEX) else K.ERROR
            findings.append(from_error(exc.in_file(p), str(p), severity=sev, repairable=False))
    return findings, swaps


def _epochs(
    findings: list[Finding], path: Path, entries: list[cp.EpochEntry], end: int | None
) -> None:
    for a, b in zip(entries, entries[1:], strict=False):
        if b.epoch <= a.epoch or b.start_offset < a.start_offset:
            findings.append(
                Finding(
                    K.WARNING,
                    K.CHECKPOINT,
                    str(path),
                    None,
                    b.start_offset,
                    f"leader epochs do not increase: {a.epoch}@{a.start_offset} then {b.epoch}@{b.start_offset}",
                    True,
                )
            )
            return
    if end is not None and entries and entries[-1].start_offset > end:
        findings.append(
            Finding(
                K.WARNING,
                K.CHECKPOINT,
                str(path),
                None,
                entries[-1].start_offset,
                f"epoch {entries[-1].epoch} starts at {entries[-1].start_offset}, past the log end {end}",
                True,
            )
        )
