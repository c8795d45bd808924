"""One replica of a partition as Kafka has it once it has LOADED it: log start and end after its
recovery (kseg.verify predicts it: kseg.verify.partition.PartitionReport.kafka_log_end), and the
leader-epoch cache LogLoader leaves (the checkpoint read as LeaderEpochFileCache assigns it, the
epochs recovery assigns from the batches it walks, then truncateFromEnd(log end) and
truncateFromStart(log start)).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from kseg.format.checkpoint import EpochEntry, read_offset_checkpoint, read_properties
from kseg.format.errors import CorruptionError
from kseg.replicas.rejoin import assigned, truncate_from_end, truncate_from_start
from kseg.storage import files as F
from kseg.storage.side_files import read_side_file
from kseg.storage.tree import Target
from kseg.verify import findings as K

REPLICATION_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"


class Replica(NamedTuple):
    log_dir: Path  # its broker root
    partition_dir: Path
    node_id: int | None  # meta.properties node.id (broker.id before KRaft)
    log_start_offset: int
    log_end_offset: int  # after Kafka's recovery on its next start
    epochs: tuple[EpochEntry, ...]  # the leader-epoch cache after load
    checkpoint: tuple[EpochEntry, ...]  # leader-epoch-checkpoint as written
    high_watermark: int | None  # its root's replication-offset-checkpoint
    # its root's cleaner-offset-checkpoint: below it the log cleaner has rewritten the batches,
    # which each replica's cleaner does on its own, so they may differ without diverging
    cleaned_to: int | None
    clean_shutdown: bool
    last_batch_epoch: int | None  # the partition leader epoch of the last batch below the end
    damage: str | None  # the first damage found ("file: byte N: kind: detail")
    epoch_note: str | None  # the first batch whose epoch contradicts the checkpoint
    unreadable: str | None  # the first file of it kseg could not read (not damage: exit 8)
    starts: bool  # False: Kafka would not start on it (kseg verify says why)

    @property
    def latest_epoch(self) -> int | None:
        return self.epochs[-1].epoch if self.epochs else None


def node_id(root: Path) -> int | None:
    try:
        props = read_properties(read_side_file(root / "meta.properties", F.META_PROPERTIES))
    except (OSError, CorruptionError, ValueError):
        return None
    for key in ("node.id", "broker.id"):
        try:
            return int(props[key])
        except (KeyError, ValueError):
            continue
    return None


def root_checkpoint(root: Path, name: str, topic: str, partition: int) -> int | None:
    """The partition's entry in the root's checkpoint file ``name`` (None: none, unreadable)."""
    try:
        data = read_side_file(root / name, F.OFFSET_CHECKPOINT)
        entries = read_offset_checkpoint(data) if data.strip() else []
    except (OSError, CorruptionError):
        return None
    for e in entries:
        if (e.topic, e.partition) == (topic, partition):
            return e.offset
    return None


def _finding_text(f) -> str:
    where = f": byte {f.position}" if f.position is not None else ""
    return f"{f.file}{where}: {f.kind}: {f.message}"


def _damage(report) -> tuple[str | None, str | None, str | None]:
    """The first error verify finds (bad bytes, a log Kafka cannot load); apart from it the
    first batch whose leader epoch contradicts the checkpoint (not damage here: Kafka's
    replication goes by the checkpoint, and the comparison shows what differs) and the first
    file kseg could not read (an operational error, not bad data)."""
    damage = epoch_note = unreadable = None
    for f in report.all_findings:
        if f.kind == K.UNREADABLE:
            unreadable = unreadable or _finding_text(f)
        elif f.severity != K.ERROR:
            continue
        elif f.kind == K.LEADER_EPOCH:
            epoch_note = epoch_note or _finding_text(f)
        elif damage is None:
            damage = _finding_text(f)
    return damage, epoch_note, unreadable


def _recovered_epochs(report, epochs: list[EpochEntry], end: int) -> list[EpochEntry]:
    """LogSegment.recover assigns each v2 batch's partition leader epoch above the latest one
    (``leaderEpochCache.assign(batch.partitionLeaderEpoch, batch.baseOffset)``) in every segment
    it recovers: after an unclean shutdown, from the recovery point's segment on."""
    if report.clean_shutdown or not report.scans:
        return epochs
    from kseg.storage.segment import Segment

    out = list(epochs)
    for scan in report.scans[report.first_recovered() :]:
        if scan.log in report.recovered_at_load:
            continue
        seg = Segment(scan.log)
        with seg.mapped(sequential=True) as buf:
            stop = scan.kafka_stop if scan.kafka_stop is not None else len(buf)
            try:
                for row in seg.walk_headers(buf, 0, stop):
                    base, ple, magic = row[3], row[10], row[2]
                    if base >= end:
                        return out
                    if magic >= 2 and ple >= 0 and (not out or ple > out[-1].epoch):
                        out = list(assigned([*out, EpochEntry(ple, base)]))
            except CorruptionError:
                pass  # recovery stops there too (kafka_stop says where)
    return out


def _clean_end(report) -> int | None:
    """The log end after a clean shutdown: Kafka recovers nothing, its log ends after the last
    batch of the last segment (LogSegment.readNextOffset walks the headers, bad CRCs and all),
    unless that segment is recovered while loading (a missing `.index`)."""
    last = report.scans[-1]
    if last.log in report.recovered_at_load or report.kafka_tail_fatal is not None:
        return report.kafka_log_end
    from kseg.storage.segment import Segment

    seg = Segment(last.log)
    end = seg.base_offset
    with seg.mapped(sequential=True) as buf:
        try:
            for row in seg.walk_headers(buf):
                end = row[4] + 1
        except CorruptionError:
            pass  # readNextOffset stops there too
    return end


def _last_batch_epoch(part, end: int) -> int | None:
    """The leader epoch of the batch holding offset ``end - 1`` (None: none there, or no v2
    batch), walked from the offset index's entry for it."""
    seg = part.segment_for(end - 1)
    if seg is None or end <= seg.base_offset:
        return None
    epoch = None
    with seg.mapped(sequential=True) as buf:
        try:
            for row in seg.walk_headers(buf, part.start_position(seg, end - 1, buf)):
                if row[3] >= end:
                    break
                epoch = row[10] if row[2] >= 2 else None
        except CorruptionError:
            pass
    return epoch


def load_replica(target: Target, topic: str, partition: int) -> Replica:
    """``target``'s replica as Kafka loads it. Raises OSError when it cannot be read."""
    from kseg.storage.partition import Partition
    from kseg.verify.partition import verify_target

    report = verify_target(target)
    part = Partition(target.partition_dir)
    damage, epoch_note, unreadable = _damage(report)
    bad_checkpoint = False
    try:
        checkpoint = tuple(part.leader_epochs())
    except FileNotFoundError:
        checkpoint = ()
    except CorruptionError as exc:  # Kafka fails the log dir on a malformed checkpoint
        checkpoint = ()
        damage = damage or str(exc.in_file(target.partition_dir / "leader-epoch-checkpoint"))
        bad_checkpoint = True
    first = report.scans[0].base_offset if report.scans else 0
    start = report.log_start_offset if report.log_start_offset is not None else first
    start = max(start, first)
    if not report.scans:  # LogLoader: no segment, one empty segment at the log start
        end = start
    elif report.clean_shutdown:
        end = _clean_end(report)
    else:
        end = report.kafka_log_end
    starts = end is not None and not bad_checkpoint
    if end is None:  # Kafka would not start: take the log as it lies, for the comparison
        end = report.log_end_offset if report.log_end_offset is not None else 0
    if end < start:  # LogLoader: the log is reset to one empty segment at the log start
        end = start
    epochs = _recovered_epochs(report, list(assigned(checkpoint)), end)
    epochs = truncate_from_start(truncate_from_end(epochs, end), start)
    return Replica(
        target.log_dir,
        target.partition_dir,
        node_id(target.log_dir),
        start,
        end,
        epochs,
        checkpoint,
        root_checkpoint(target.log_dir, REPLICATION_CHECKPOINT, topic, partition),
        root_checkpoint(target.log_dir, CLEANER_CHECKPOINT, topic, partition),
        report.clean_shutdown,
        _last_batch_epoch(part, end),
        damage,
        epoch_note,
        unreadable,
        starts,
    )
