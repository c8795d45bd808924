"""Walking inputs: a file, a partition directory, or a log.dirs root."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from . import files as F

FILE, PARTITION, ROOT = "file", "partition", "root"
# order of segment files sharing a base offset: the log first, then its indexes
_SEGMENT_ORDER = {
    F.LOG: 0,
    F.INDEX: 1,
    F.TIME_INDEX: 2,
    F.TXN_INDEX: 3,
    F.SNAPSHOT: 4,
    F.KRAFT_CHECKPOINT: 5,
}


@dataclass(frozen=True, slots=True)
class PartitionDir:
    path: Path
    topic: str
    partition: int
    state: str | None = None


def path_kind(path: Path) -> str:
    """FILE, PARTITION (holds segment files or is named like one) or ROOT (holds partitions)."""
    if not path.is_dir():
        return FILE
    if F.parse_partition_dir(path.name) and not any(
        F.parse_partition_dir(p.name) and p.is_dir() for p in path.iterdir()
    ):
        return PARTITION
    if any(
        F.file_kind(p).kind in (F.LOG, F.INDEX, F.TIME_INDEX, F.KRAFT_CHECKPOINT)
        for p in path.iterdir()
    ):
        return PARTITION
    return ROOT


def partition_files(pdir: Path) -> list[Path]:
    """Every known file of a partition dir: segment files in offset order, then the rest."""
    segs, other = [], []
    for p in pdir.iterdir():
        if p.is_dir():  # a FIFO or device named like a segment is listed: reading refuses it
            continue
        k = F.file_kind(p)
        if k.base_offset is not None:
            segs.append(((k.base_offset, _SEGMENT_ORDER.get(k.kind, 9), k.temp_suffix), p))
        elif k.kind != F.UNKNOWN and k.kind != F.LOCK:
            other.append(p)
    return [p for _, p in sorted(segs)] + sorted(other)


def segment_logs(pdir: Path) -> list[Path]:
    """The live `.log` files of a partition in offset order (no .deleted/.cleaned/.swap)."""
    logs = []
    for p in pdir.iterdir():
        k = F.file_kind(p)
        if k.kind == F.LOG and not k.temp_suffix:
            logs.append((k.base_offset, p))
    return [p for _, p in sorted(logs)]


def root_files(root: Path) -> list[Path]:
    return sorted(
        p for p in root.iterdir() if p.is_file() and F.file_kind(p).kind not in (F.UNKNOWN, F.LOCK)
    )


def partitions(
    root: Path, topic: str | None = None, partition: int | None = None
) -> Iterator[PartitionDir]:
    """Partition dirs of a log.dirs root sorted by (topic, partition); filters: topic regex, number."""
    rx = re.compile(topic) if topic else None
    found = []
    for p in root.iterdir():
        if not p.is_dir():
            continue
        name = F.parse_partition_dir(p.name)
        if name is None:
            continue
        if rx and not rx.search(name.topic):
            continue
        if partition is not None and name.partition != partition:
            continue
        found.append(PartitionDir(p, name.topic, name.partition, name.state))
    yield from sorted(found, key=lambda d: (d.topic, d.partition, d.state or ""))


@dataclass(frozen=True, slots=True)
class Target:
    """A partition to work on and, for a single-file input, the one segment wanted."""

    partition_dir: Path
    logs: list[Path]

    @property
    def log_dir(self) -> Path:
        return self.partition_dir.parent


def targets(
    paths: list[Path], topic: str | None = None, partition: int | None = None
) -> Iterator[Target]:
    """Expand files, partition dirs and log.dirs roots into partitions with their live logs."""
    for path in paths:
        kind = path_kind(path)
        if kind == FILE:
            k = F.file_kind(path)
            if k.kind != F.LOG:
                raise ValueError(
                    f"{path}: expected a .log file, a partition directory or a log.dirs root"
                )
            yield Target(path.parent, [path])
        elif kind == PARTITION:
            yield Target(path, _logs_or_none(path))
        else:
            for pdir in partitions(path, topic, partition):
                yield Target(pdir.path, _logs_or_none(pdir.path))


def _logs_or_none(pdir: Path) -> list[Path]:
    """The partition's logs; none if the directory cannot be listed (whoever checks the
    partition reports that, and the walk goes on to the next one)."""
    try:
        return segment_logs(pdir)
    except OSError:
        return []
