"""Repairs and restores that did not finish: finding them for a partition (by its marker and
under the quarantine roots, matched by the partition's real identity), and finishing a repair."""

from __future__ import annotations

from pathlib import Path

from kseg.repair.actions import check_actions, check_plan_covers_writes, kind_of
from kseg.repair.apply import run_manifest
from kseg.repair.errors import RepairFailed
from kseg.repair.manifest import (
    INCOMPLETE,
    RESTORING,
    Manifest,
    ManifestError,
    load,
    manifest_dirs,
    peek_status,
    remove_quarantine_dir,
    same_partition,
)
from kseg.repair.marker import marker_path
from kseg.storage.atomic import remove_stale_temps

UNFINISHED = (*INCOMPLETE, RESTORING)


def unfinished_work(
    quarantine_roots: list[Path],
    partition_dir: Path,
    cache: dict[Path, list[tuple[Path, str]]] | None = None,
) -> list[tuple[Path, str]]:
    """(quarantine dir, status) of every repair of ``partition_dir`` that did not finish
    (in_progress, failed) and every restore of it that did not (restoring): the repair the
    partition's marker names, and any under ``quarantine_roots``.

    The partition is matched by its real identity (resolved path, or device and inode), never
    by how a path was spelled on the command line. ``cache`` keeps each root's unfinished
    manifests across the partitions of one run (a root is scanned once). Call it holding the
    log dir's lock: it removes a stale marker.
    """
    cache = {} if cache is None else cache
    candidates: list[tuple[Path, str]] = []
    try:
        named = Path(marker_path(partition_dir).read_text().strip())
    except (OSError, ValueError):
        named = None
    if named is not None:
        status, pdir, _ = peek_status(named) if named.is_absolute() else (None, None, None)
        if status in UNFINISHED and pdir:
            candidates.append((named, pdir))
        elif status not in UNFINISHED:  # stale: killed between completing and removing it
            marker_path(partition_dir).unlink(missing_ok=True)
    for root in quarantine_roots:
        key = root.absolute()
        if key not in cache:
            cache[key] = []
            for qdir in manifest_dirs(key):
                status, pdir, _ = peek_status(qdir)
                if status in UNFINISHED and pdir:
                    cache[key].append((qdir, pdir))
        candidates.extend(cache[key])
    out, seen = [], set()
    for qdir, pdir in candidates:
        real = qdir.resolve()
        if real in seen or not same_partition(pdir, partition_dir):
            continue
        status = peek_status(qdir)[0]  # now: it may have finished since the cache was made
        if status in UNFINISHED:
            seen.add(real)
            out.append((qdir, status))
    return out


def resume(qdir: Path) -> Manifest | None:
    """Finish an interrupted repair. None if it had not begun changing the partition and the
    partition changed since it was planned: its quarantine is dropped and the caller plans anew.
    """
    try:
        m = load(qdir)
        check_actions(m, qdir)
        check_plan_covers_writes(m, qdir)
    except ManifestError as exc:
        raise RepairFailed(f"cannot resume: {exc}", qdir, True) from None
    remove_stale_temps(qdir)
    remove_stale_temps(m.partition_dir)
    if not m.changes_started and not all(kind_of(a).planned(a) for a in m.actions):
        remove_quarantine_dir(qdir)
        return None
    run_manifest(qdir, m)
    return m
