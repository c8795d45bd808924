"""``kseg salvage --to DIR``: the salvaged partition written as a new partition dir under DIR (a
log.dirs tree), the input untouched: kept segments copied, damaged ones spliced without their
lost byte ranges (edits applied), their indexes rebuilt, snapshots and leader epochs past the
new log end left out; then DIR's root checkpoints for the partitions written (their recovery
points and high watermarks no further than the new log ends), and the input's meta.properties. A leftover source that gives entries back
(kseg.salvage.leftovers) is written as a new segment named by its first kept offset; a deleted
topic's partition dir (``<topic>-<n>.<uuid>-delete``) is written as ``<topic>-<n>``."""

from __future__ import annotations

from pathlib import Path

from kseg.format import checkpoint as cp
from kseg.format.errors import CorruptionError
from kseg.format.kafka_version import DEFAULT as DEFAULT_KAFKA_VERSION
from kseg.format.kafka_version import KafkaVersion
from kseg.index.rebuild import rebuild_target
from kseg.salvage.walk import LIVE, SegmentSalvage
from kseg.storage import files as F
from kseg.storage.atomic import atomic_copy, atomic_write, fsync_dir
from kseg.storage.side_files import read_side_file
from kseg.storage.splice import write_splice
from kseg.storage.tree import Target

_COPIED = (F.SNAPSHOT, F.PARTITION_METADATA, F.INDEX, F.TIME_INDEX, F.TXN_INDEX)


class DestinationExists(Exception):
    """The partition dir to write already exists under DIR (it is never overwritten)."""


def write_partition(
    pdir: Path,
    segs: list[SegmentSalvage],
    dest_log_dir: Path,
    end: int | None,
    *,
    index_interval_bytes: int = 4096,
    kafka_version: KafkaVersion = DEFAULT_KAFKA_VERSION,
    name: str | None = None,
    reset_to: int | None = None,
) -> Path:
    """Write the salvaged ``pdir`` as ``dest_log_dir/<name>`` (default: its own name); returns
    that dir. ``reset_to``: the log would end below its log start offset: as Kafka's
    LogLoader, only one empty segment at that offset (and partition.metadata)."""
    out = dest_log_dir / (name or pdir.name)
    dest_log_dir.mkdir(parents=True, exist_ok=True)
    try:
        out.mkdir()
    except FileExistsError:
        raise DestinationExists(f"{out}: exists; --to writes a new partition dir only") from None
    if reset_to is not None:
        for suffix in (".log", ".index", ".timeindex"):
            atomic_write(out / F.segment_file_name(reset_to, suffix), b"")
        meta = pdir / "partition.metadata"
        if meta.is_file() and not meta.is_symlink():
            atomic_copy(meta, out / meta.name, 0, meta.stat().st_size)
        fsync_dir(out)
        fsync_dir(dest_log_dir)
        return out
    changed = []
    names = {s.source.name for s in segs if s.source.origin == LIVE}
    for s in segs:
        if s.source.origin != LIVE:
            if s.put_back_name is not None:
                dst = out / s.put_back_name
                write_splice(s.source.path, dst, s.keep, [(e.position, e.new) for e in s.edits])
                changed.append(dst)
            continue
        dst = out / s.source.name
        if s.changed:
            write_splice(s.source.path, dst, s.keep, [(e.position, e.new) for e in s.edits])
            changed.append(dst)
        else:
            atomic_copy(s.source.path, dst, 0, s.size)
    rebuilt = {p.stem for p in changed}
    for p in sorted(pdir.iterdir()):
        k = F.file_kind(p)
        if k.temp_suffix or not p.is_file() or p.is_symlink() or p.name in names:
            continue
        if k.kind in (F.INDEX, F.TIME_INDEX, F.TXN_INDEX) and p.stem in rebuilt:
            continue
        if k.kind == F.SNAPSHOT and end is not None and k.base_offset > end:
            continue
        if k.kind in _COPIED:
            atomic_copy(p, out / p.name, 0, p.stat().st_size)
        elif k.kind == F.LEADER_EPOCH_CHECKPOINT:
            try:
                entries = cp.read_leader_epoch_checkpoint(read_side_file(p, k.kind))
            except (OSError, CorruptionError):
                continue  # an unreadable checkpoint: Kafka rebuilds the cache from the batches
            if end is not None:
                entries = [e for e in entries if e.start_offset < end]
            atomic_write(out / p.name, cp.encode_leader_epoch_checkpoint(entries))
    if changed:
        rebuild_target(
            Target(out, changed),
            index_interval_bytes=index_interval_bytes,
            kafka_version=kafka_version,
        )
    fsync_dir(out)
    fsync_dir(dest_log_dir)
    return out


def write_root_files(src_log_dir: Path, dest_log_dir: Path, ends: dict[str, int | None]) -> None:
    """DIR's root checkpoints for the partitions written (``ends``: partition dir name -> its new
    log end): the input's entries, an offset no further than the new end; meta.properties
    copied once (a spare broker may need its own node and directory ids: see the README)."""
    for name in F.ROOT_CHECKPOINTS:
        src = src_log_dir / name
        entries = []
        if src.is_file():
            try:
                entries = cp.read_offset_checkpoint(read_side_file(src))
            except (OSError, CorruptionError):
                entries = []
        out = []
        for e in entries:
            key = f"{e.topic}-{e.partition}"
            if key not in ends:
                continue
            end = ends[key]
            out.append(e._replace(offset=e.offset if end is None else min(e.offset, end)))
        dst = dest_log_dir / name
        if out or src.is_file():
            old = []
            if dst.is_file():  # several runs into one DIR: keep what is there for others
                try:
                    old = [
                        e
                        for e in cp.read_offset_checkpoint(read_side_file(dst))
                        if f"{e.topic}-{e.partition}" not in ends
                    ]
                except (OSError, CorruptionError):
                    old = []
            atomic_write(dst, cp.encode_offset_checkpoint(old + out))
    meta = src_log_dir / "meta.properties"
    if meta.is_file() and not (dest_log_dir / "meta.properties").exists():
        atomic_copy(meta, dest_log_dir / "meta.properties", 0, meta.stat().st_size)
