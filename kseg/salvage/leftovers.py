"""Segment sources beyond a partition's live segments (``kseg salvage --from-quarantine``,
``--include-deleted``): the `.log` bytes an earlier ``verify --repair`` or ``salvage`` of the
partition quarantined (a truncated tail, a moved later segment, a rewritten segment's
original), and Kafka's own `*.log.deleted` leftovers in the partition dir.

Only quarantines whose manifest is ``complete`` and names this partition (by its real path)
are read; a quarantined file must still match the sha256 its manifest recorded. Sources come in
base-offset order, at equal base offsets the newest file first: kseg.salvage.walk keeps an
offset from the first source that holds it (the live log before all of them)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from kseg.repair.actions import MOVE, REWRITE, TRUNCATE
from kseg.repair.manifest import (
    COMPLETE,
    MANIFEST,
    ManifestError,
    load,
    peek_status,
    quarantine_file,
    same_partition,
)
from kseg.salvage.walk import DELETED, QUARANTINE, SegmentSource
from kseg.storage import files as F
from kseg.storage.atomic import sha256_file


class Leftovers(NamedTuple):
    sources: list[SegmentSource]
    notices: list[str]  # a quarantine or file passed over, and why


def quarantine_dirs(path: Path) -> list[Path]:
    """The partition quarantine dirs under ``path``: itself (or its manifest), a run's
    partitions, or every run's under a quarantine root (as ``kseg restore`` names them)."""
    if path.name == MANIFEST and path.is_file():
        path = path.parent
    if (path / MANIFEST).is_file():
        return [path]
    found: set[Path] = set()
    for pattern in ("*/", "*/*/", "*/*/*/"):  # a run, a root, the kseg-quarantine dir
        found |= {m.parent for m in path.glob(pattern + MANIFEST)}
    return sorted(found)


def quarantine_sources(qpath: Path, pdir: Path) -> Leftovers:
    sources, notices = [], []
    seen = False
    for qdir in quarantine_dirs(qpath):
        status, recorded, _ = peek_status(qdir)
        if recorded is None or not same_partition(recorded, pdir):
            continue
        seen = True
        if status != COMPLETE:
            notices.append(f"{qdir}: its repair is {status}, not complete: not read")
            continue
        try:
            m = load(qdir)
        except ManifestError as exc:
            notices.append(f"{exc}: not read")
            continue
        for a in m.actions:
            k = F.file_kind(a.file)
            if a.action not in (TRUNCATE, MOVE, REWRITE) or k.kind != F.LOG:
                continue
            try:
                q = quarantine_file(qdir, a.quarantine_file)
                ok = sha256_file(q) == (a.length, a.sha256)
            except (ManifestError, OSError, TypeError):
                ok = False
            if not ok:
                notices.append(
                    f"{qdir / str(a.quarantine_file)}: missing, or does not match its manifest's "
                    "sha256: not read"
                )
                continue
            name = Path(a.file).name
            sources.append(
                SegmentSource(q, name, k.base_offset, origin=QUARANTINE)  # fmt: skip
            )
    if not seen:
        notices.append(f"{qpath}: holds no quarantine of {pdir}")
    return Leftovers(sources, notices)


def deleted_sources(pdir: Path) -> Leftovers:
    """The `<offset>.log.deleted` files of a partition dir (regular files, not symlinks)."""
    sources = []
    for p in sorted(pdir.iterdir()):
        k = F.file_kind(p.name)
        if k.kind == F.LOG and k.temp_suffix == ".deleted" and p.is_file() and not p.is_symlink():
            sources.append(SegmentSource(p, p.name, k.base_offset, origin=DELETED))
    return Leftovers(sources, [])


def ordered(sources: list[SegmentSource]) -> list[SegmentSource]:
    """Base-offset order; at equal base offsets the newest file first (it wins an overlap)."""

    def mtime(s: SegmentSource) -> int:
        try:
            return s.path.stat().st_mtime_ns
        except OSError:
            return 0

    return sorted(sources, key=lambda s: (s.base_offset, -mtime(s), str(s.path)))
