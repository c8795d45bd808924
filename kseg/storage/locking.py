"""What every writing command checks before it writes: the brokers' locks, and that the place
it writes removed bytes to is not inside a log dir. One place, for verify --repair and index
rebuild (restore needs every lock or none: kseg.repair.restore.plan_restore)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kseg.storage.files import looks_like_log_dir
from kseg.storage.lock import LogDirLocks


def lock_log_dirs(
    locks: LogDirLocks, log_dirs: Iterable[Path], what: str
) -> tuple[set[Path], list[dict]]:
    """Take every log dir's `.lock` once, before anything is written. Returns the refused log
    dirs (resolved) and the events saying so: one ``failure`` per refusal (an operational
    error), one ``notice`` per lock --force went past."""
    refused, failures, notices = locks.acquire_all(log_dirs, what)
    events = [{"type": "failure", "message": m} for m in failures]
    events += [{"type": "notice", "message": m} for m in notices]
    return refused, events


def is_inside(place: Path, log_dir: Path) -> bool:
    """Does ``place`` lie inside the (resolved) ``log_dir``? Kafka refuses to start with a
    directory there that is not a partition."""
    return place.resolve().is_relative_to(log_dir) and looks_like_log_dir(log_dir)


def inside_message(option: str, place: Path, log_dir: Path) -> str:
    return (
        f"{option + ' ' if option else ''}{place} is inside the log dir {log_dir}: Kafka refuses "
        "to start with a directory there that is not a partition; choose a place outside it"
    )
