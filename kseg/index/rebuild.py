"""`kseg index rebuild`: `.index`/`.timeindex`/`.txnindex` exactly as Kafka's recovery writes them."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from kseg.format import offset_index as oi
from kseg.format import time_index as ti
from kseg.format import txn_index as tx
from kseg.format.index_rule import DEFAULT_INDEX_INTERVAL_BYTES
from kseg.format.kafka_version import DEFAULT as DEFAULT_KAFKA_VERSION
from kseg.format.kafka_version import KafkaVersion
from kseg.format.txn_index import AbortedTxn
from kseg.format.txn_index import encode_entries as encode_txn
from kseg.format.txn_state import TxnTracker
from kseg.storage.atomic import atomic_write
from kseg.storage.mapped import holds
from kseg.storage.tree import Target, segment_logs
from kseg.verify.findings import Finding
from kseg.verify.segment import SegmentScan, aborted_under, scan_segment
from kseg.verify.txn_seed import seed_from_snapshot

UNCHANGED, CREATED, REPLACED = "unchanged", "created", "replaced"


class FileAction(NamedTuple):
    file: Path
    action: str
    entries: int
    size: int

    def to_dict(self) -> dict:
        return {
            "file": str(self.file),
            "action": self.action,
            "entries": self.entries,
            "size": self.size,
        }


class SegmentRebuild(NamedTuple):
    scan: SegmentScan
    files: list[FileAction]

    @property
    def error(self) -> Finding | None:
        return self.scan.first_error


def rebuild_target(
    target: Target,
    *,
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
    preallocate: bool = False,
    offset_index_bytes: int = oi.DEFAULT_MAX_INDEX_SIZE,
    dry_run: bool = False,
    backup_dir: Path | None = None,
    only: set[Path] | None = None,
    kafka_version: KafkaVersion = DEFAULT_KAFKA_VERSION,
) -> list[SegmentRebuild]:
    """Rebuild every segment of the target (the whole partition is replayed for `.txnindex`),
    by ``kafka_version``'s rules."""
    out = []
    for log, scan, rebuilt, last in rebuilt_segments(
        target, index_interval_bytes=index_interval_bytes, kafka_version=kafka_version
    ):
        files = write_indexes(
            log,
            rebuilt,
            offset_index_bytes if preallocate and last else None,
            dry_run=dry_run,
            backup_dir=backup_dir,
            target=target,
            only=only,
        )
        out.append(SegmentRebuild(scan, files))
    return out


def rebuilt_segments(
    target: Target,
    *,
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
    kafka_version: KafkaVersion = DEFAULT_KAFKA_VERSION,
) -> Iterator[tuple[Path, SegmentScan, RebuiltIndexes, bool]]:
    """Read only: each wanted segment of the target in order, its scan, its indexes as Kafka's
    recovery writes them (the whole partition replayed for `.txnindex`) and whether it is the
    partition's last (active) segment. Nothing written: rebuild_target writes each segment's
    before the next is scanned; `index rebuild --jobs` scans in workers, writes in one."""
    wanted = set(target.logs)
    partition_logs = segment_logs(target.partition_dir)
    txn = TxnTracker()  # replayed from the first segment: a transaction may span segments
    if partition_logs:
        seed_from_snapshot(txn, partition_logs[0])
    for log in partition_logs:
        scan = scan_segment(
            log,
            index_interval_bytes=index_interval_bytes,
            check_indexes=False,
            txn=txn,
            kafka_view=True,
        )
        if log in wanted:
            yield log, scan, rebuilt_indexes(scan, kafka_version), log == partition_logs[-1]


class RebuiltIndexes(NamedTuple):
    """A segment's three indexes as Kafka's recovery writes them, from one scan of its log."""

    offset_index: bytes
    time_index: bytes
    aborted: tuple[AbortedTxn, ...]


def rebuilt_indexes(
    scan: SegmentScan, kafka_version: KafkaVersion = DEFAULT_KAFKA_VERSION
) -> RebuiltIndexes:
    """What a scan run with a partition-wide TxnTracker built (scan_segment's ``txn``), its
    `.txnindex` by ``kafka_version``'s rule."""
    return RebuiltIndexes(
        bytes(scan.rebuilt.offset_index),
        bytes(scan.rebuilt.time_index),
        tuple(aborted_under(scan, kafka_version.txn_index_empty_aborts)),
    )


def write_indexes(
    log: Path,
    rebuilt: RebuiltIndexes,
    offset_index_bytes: int | None = None,
    *,
    dry_run: bool = False,
    backup_dir: Path | None = None,
    target: Target | None = None,
    only: set[Path] | None = None,
) -> list[FileAction]:
    """Write ``log``'s `.index`/`.timeindex` (preallocated to ``offset_index_bytes`` when given)
    and its `.txnindex` (when there are aborted transactions or one exists), unchanged files
    left alone; with ``only``, just those of its files."""
    time_bytes_max = (
        None if offset_index_bytes is None else offset_index_bytes // ti.ENTRY_SIZE * ti.ENTRY_SIZE
    )
    plan = [
        (log.with_suffix(".index"), rebuilt.offset_index, offset_index_bytes, oi.ENTRY_SIZE),
        (log.with_suffix(".timeindex"), rebuilt.time_index, time_bytes_max, ti.ENTRY_SIZE),
    ]
    txn_path = log.with_suffix(".txnindex")
    if rebuilt.aborted or txn_path.exists():
        plan.append((txn_path, encode_txn(rebuilt.aborted), None, tx.ENTRY_SIZE))
    return [
        _replace(path, data, padded_to, width, dry_run, backup_dir, target)
        for path, data, padded_to, width in plan
        if only is None or path in only  # a repair writes only what it quarantined
    ]


def _replace(
    path: Path,
    data: bytes,
    padded_to: int | None,
    width: int,
    dry_run: bool,
    backup_dir: Path | None,
    target: Target | None,
) -> FileAction:
    want_size = max(len(data), padded_to or 0)
    action = CREATED
    if path.exists():
        action = UNCHANGED if holds(path, data, padded_to) else REPLACED
    if action != UNCHANGED and not dry_run:
        if action == REPLACED and backup_dir is not None:
            dest = backup_dir / target.partition_dir.name
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest / path.name)
        atomic_write(path, data, padded_to=padded_to)
    return FileAction(path, action, len(data) // width, want_size)
