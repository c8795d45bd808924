"""The marker a repair leaves in the log dir while it is changing a partition: how a resume
finds the repair from the partition itself, wherever its quarantine is."""

from __future__ import annotations

from pathlib import Path

from kseg.storage.atomic import fsync_dir

MARKER_PREFIX = ".kseg-repair-"


def marker_path(partition_dir: Path) -> Path:
    """``<log.dir>/.kseg-repair-<partition>``: names the quarantine dir of a repair that has begun
    changing the partition, until it completes. A resume finds it from the partition itself,
    wherever the quarantine is; Kafka ignores plain files in a log dir."""
    return partition_dir.parent / f"{MARKER_PREFIX}{partition_dir.name}"


def remove_marker(partition_dir: Path, qdir: Path) -> None:
    marker = marker_path(partition_dir)
    try:
        if Path(marker.read_text().strip()) == qdir.absolute():
            marker.unlink()
            fsync_dir(marker.parent)
    except OSError:
        pass
