"""What a file or directory in a Kafka data directory is, from its name."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

LOG, INDEX, TIME_INDEX, TXN_INDEX, SNAPSHOT = "log", "index", "timeindex", "txnindex", "snapshot"
KRAFT_CHECKPOINT = "kraft_checkpoint"
BOOTSTRAP_CHECKPOINT = "bootstrap_checkpoint"  # log-dir root: the KRaft bootstrap snapshot
QUORUM_STATE = "quorum_state"  # __cluster_metadata-0: the KRaft election state (JSON)
LEADER_EPOCH_CHECKPOINT = "leader_epoch_checkpoint"
PARTITION_METADATA = "partition_metadata"
OFFSET_CHECKPOINT = "offset_checkpoint"
META_PROPERTIES = "meta_properties"
CLEAN_SHUTDOWN = "clean_shutdown"
LOCK = "lock"
KAFKA07 = "kafka07"  # a Kafka 0.7 segment, `<20-digit byte offset>.kafka`
UNKNOWN = "unknown"

SEGMENT_SUFFIXES = {
    ".log": LOG,
    ".index": INDEX,
    ".timeindex": TIME_INDEX,
    ".txnindex": TXN_INDEX,
    ".snapshot": SNAPSHOT,
}
TEMP_SUFFIXES = (".deleted", ".cleaned", ".swap")
ROOT_CHECKPOINTS = (
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "replication-offset-checkpoint",
    "cleaner-offset-checkpoint",
)
_NAMED = {
    "leader-epoch-checkpoint": LEADER_EPOCH_CHECKPOINT,
    "partition.metadata": PARTITION_METADATA,
    "meta.properties": META_PROPERTIES,
    ".kafka_cleanshutdown": CLEAN_SHUTDOWN,
    ".lock": LOCK,
    "bootstrap.checkpoint": BOOTSTRAP_CHECKPOINT,
    "quorum-state": QUORUM_STATE,
    **{name: OFFSET_CHECKPOINT for name in ROOT_CHECKPOINTS},
}
_SEGMENT_RE = re.compile(
    r"^(\d{20})(\.log|\.index|\.timeindex|\.txnindex|\.snapshot)((?:\.deleted|\.cleaned|\.swap)?)$"
)
# Kafka 0.7: the number is the BYTE offset of the segment's first entry (FORMATS.md s10)
_KAFKA07_RE = re.compile(r"^(\d{20})\.kafka$")
# a snapshot being written is `<offset>-<epoch><random digits>.checkpoint.part` (Files.createTempFile)
_KRAFT_RE = re.compile(r"^(\d{20})-(\d{10})\d*\.checkpoint((?:\.deleted|\.part)?)$")
_PARTITION_DIR_RE = re.compile(
    r"^(?P<topic>.+)-(?P<partition>\d+)(?:\.(?P<uid>[0-9a-f]{32})-(?P<state>delete|future|stray))?$"
)


class FileKind(NamedTuple):
    kind: str
    base_offset: int | None = None  # segment files: the offset in the name
    temp_suffix: str = ""  # ".deleted", ".cleaned", ".swap" when present


def file_kind(path: str | Path) -> FileKind:
    if isinstance(path, str):
        name = os.path.basename(path)  # Path(path).name, without building a Path
    else:  # a Path or a UriPath (kseg.storage.uri) has its name; a Segment is its .log
        name = getattr(path, "name", None) or os.path.basename(os.fspath(path))
    m = _SEGMENT_RE.match(name)
    if m:
        return FileKind(SEGMENT_SUFFIXES[m.group(2)], int(m.group(1)), m.group(3))
    m = _KRAFT_RE.match(name)
    if m:
        return FileKind(KRAFT_CHECKPOINT, int(m.group(1)), m.group(3))
    m = _KAFKA07_RE.match(name)
    if m:
        return FileKind(KAFKA07, int(m.group(1)))
    return FileKind(_NAMED.get(name, UNKNOWN))


def snapshot_id(path: str | Path) -> tuple[int, int] | None:
    """A KRaft snapshot's (end offset, epoch) from its name, or None."""
    m = _KRAFT_RE.match(Path(path).name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def segment_file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


class PartitionName(NamedTuple):
    topic: str
    partition: int
    state: str | None = None  # "delete", "future", "stray" for renamed dirs


def parse_partition_dir(name: str) -> PartitionName | None:
    """`<topic>-<partition>` (partition after the LAST '-'), or None if it is not one."""
    m = _PARTITION_DIR_RE.match(name)
    if not m:
        return None
    return PartitionName(m.group("topic"), int(m.group("partition")), m.group("state"))


def looks_like_log_dir(path: Path) -> bool:
    """Does ``path`` hold a broker's root files (meta.properties, a root checkpoint)? Kafka
    refuses to start when such a directory holds a directory that is not a partition."""
    return any((path / name).is_file() for name in ("meta.properties", *ROOT_CHECKPOINTS))
