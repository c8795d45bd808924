"""Planning: which segments to read, and how to cut them into input partitions.

One input partition per segment at least; a segment larger than ``max_bytes`` is split at batch
boundaries taken from its offset index (each boundary is checked to really start a batch before it
is used), so one 1 GiB segment keeps every core busy. Filters prune segments by file name (offset)
and by the time index's last entry (the segment's max timestamp) before any data is read.

Local paths and URIs alike: the tree walk is kseg.storage.tree's, the segments and their indexes
kseg.storage's Partition and Segment (which read a URI through pyarrow.fs).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from kseg.format.log import check_entry_header
from kseg.storage import files, tree
from kseg.storage.partition import Partition
from kseg.storage.segment import Segment
from kseg.storage.uri import UriPath, as_path

DEFAULT_MAX_BYTES = 128 << 20


class Task(NamedTuple):
    """One input partition: plain data, pickled to the executors."""

    path: str  # the .log (or the partition dir, for partition-level tasks)
    topic: str
    partition: int
    base_offset: int
    start: int  # byte range [start, end) of whole batches
    end: int
    kind: str = "range"  # "range" (a byte range of a log) or "partition" (a whole partition dir)
    log_dir: str = ""  # the log.dirs root (broker) the partition was found in

    def to_dict(self) -> dict:
        return self._asdict()


class Prune(NamedTuple):
    topic: str | None = None  # regex
    partitions: frozenset[int] | None = None
    from_offset: int | None = None
    to_offset: int | None = None
    from_time: int | None = None  # epoch ms
    to_time: int | None = None


def find_partitions(paths: list[str], prune: Prune) -> list[tuple[str, str, int, str]]:
    """(partition dir, topic, partition, log dir) for every input: a log.dirs root, a directory
    of roots (e.g. one per broker), or partition dirs, local paths or URIs, told apart by content
    exactly as the local commands do (kseg.storage.tree). Deleted/future/stray partition dirs are
    left out. Raises tree.InputError for an input with nothing Kafka in it."""
    out = []
    for path in paths:
        lay = tree.layout(_normalized(path))
        if lay.kind == tree.FILE:
            raise tree.InputError(
                tree.NOT_KAFKA_FILE, path, "Spark jobs take directories: a root or partition dirs"
            )
        for log_dir, pdir, name in tree.select(lay.partitions, prune.topic):
            if (
                name.state
                or name.partition > 0x7FFFFFFF  # Kafka's partition numbers are int32
                or (prune.partitions is not None and name.partition not in prune.partitions)
            ):
                continue
            out.append((pdir, name.topic, name.partition, log_dir))
    return sorted(out, key=lambda t: (t[1], t[2], t[3], t[0]))


def _normalized(path: str) -> str:
    """A local path or URI without trailing slashes (a URI as kseg.storage.uri writes it)."""
    if "://" not in path:
        return path.rstrip("/") or "/"
    try:
        return str(as_path(path))
    except ValueError as exc:
        raise tree.InputError("usage", path, str(exc).removeprefix(f"{path}: ")) from None


KAFKA07 = "kafka07"  # a task over a whole Kafka 0.7 `.kafka` segment (records mode)


def plan(
    paths: list[str], prune: Prune, max_bytes: int = DEFAULT_MAX_BYTES, *, kafka07: bool = False
) -> list[Task]:
    """The tasks over every selected partition's segments (kseg.storage.partition.Partition:
    its listing, its indexes), pruned by offsets and max timestamps before any log is read.
    ``kafka07``: a Kafka 0.7 partition (only `.kafka` segments) gives one task per segment
    (no index to split at; offsets are byte offsets, so --fromOffset/--toOffset prune too)."""
    tasks: list[Task] = []
    for pdir, topic, part, log_dir in find_partitions(paths, prune):
        partition = Partition(pdir)
        segments = partition.segments
        if kafka07 and not segments:
            tasks += _kafka07_tasks(pdir, topic, part, log_dir, prune)
            continue
        for i, seg in enumerate(segments):
            if _unreadable(seg.log) is not None:  # said by unreadable_segments, on the driver
                continue
            next_base = segments[i + 1].base_offset if i + 1 < len(segments) else None
            if prune.to_offset is not None and seg.base_offset > prune.to_offset:
                continue
            if (
                prune.from_offset is not None
                and next_base is not None
                and next_base <= prune.from_offset
            ):
                continue
            if prune.from_time is not None:  # never the active segment (None: read it)
                max_ts = partition.indexed_max_timestamp(seg)
                if max_ts is not None and max_ts < prune.from_time:
                    continue
            for start, end in split(seg, max_bytes):
                tasks.append(
                    Task(str(seg.log), topic, part, seg.base_offset, start, end, log_dir=log_dir)
                )
            seg.release()  # planning 1000s of segments keeps no index in memory
    return tasks


def _kafka07_list(pdir) -> list:
    return tree.kafka07_segments(as_path(pdir) if "://" in str(pdir) else Path(pdir))


def has_kafka07_segment(pdir: str) -> bool:
    """Does the dir hold a non-empty Kafka 0.7 `.kafka` segment (what records mode reads)?"""
    return any(_unreadable(p) is None and p.stat().st_size for p in _kafka07_list(pdir))


def _unreadable(path) -> str | None:
    """Why a listed segment is no regular file to read (kseg.storage.links: a dangling or
    looping symlink, a FIFO, socket, device or directory named like a segment), else None. A
    URI names an object: None (its reader says what fails)."""
    if isinstance(path, UriPath) or "://" in str(path):
        return None
    from kseg.storage.links import unreadable_reason

    return unreadable_reason(path)


def unreadable_segments(paths: list[str], prune: Prune, *, kafka07: bool = False) -> list[str]:
    """One message per segment the plan leaves out because it is no regular file (see
    ``_unreadable``), on the driver, before Spark starts: a listing and a stat per segment. The
    jobs say each (a warning naming it) and exit 8, as the local commands do; the rest is read."""
    out = []
    for pdir, *_ in find_partitions(paths, prune):
        logs = [s.log for s in Partition(pdir).segments]
        if kafka07 and not logs:
            logs = _kafka07_list(pdir)
        for log in logs:
            why = _unreadable(log)
            if why is not None:
                out.append(f"{log}: unreadable: {why} (skipped: its records are not in the result)")
    return out


def _kafka07_tasks(pdir, topic: str, part: int, log_dir: str, prune: Prune) -> list[Task]:
    segs = _kafka07_list(pdir)
    out = []
    for i, p in enumerate(segs):
        if _unreadable(p) is not None:  # said by unreadable_segments, on the driver
            continue
        base = files.file_kind(p).base_offset
        nxt = files.file_kind(segs[i + 1]).base_offset if i + 1 < len(segs) else None
        if prune.to_offset is not None and base > prune.to_offset:
            continue
        if prune.from_offset is not None and nxt is not None and nxt <= prune.from_offset:
            continue
        size = p.stat().st_size
        if size:
            out.append(Task(str(p), topic, part, base, 0, size, KAFKA07, log_dir))
    return out


def partition_tasks(paths: list[str], prune: Prune) -> list[Task]:
    """One task per partition dir (for checks that need the whole partition)."""
    return [
        Task(pdir, topic, part, -1, 0, 0, "partition", log_dir)
        for pdir, topic, part, log_dir in find_partitions(paths, prune)
    ]


def log_dirs(paths: list[str]) -> list:
    """The log.dirs roots given or found among ``paths`` (Paths or UriPaths), for the
    root-level checks."""
    return [as_path(r) for p in paths for r in tree.layout(_normalized(p)).roots]


def has_segment(pdir: str) -> bool:
    """Does the partition dir hold a live segment?"""
    return bool(Partition(pdir).segments)


# a batch longer than this is never checked as a cut (its CRC would be read on the driver)
_MAX_BOUNDARY_CHECK = 16 << 20


def split(seg: Segment, max_bytes: int) -> list[tuple[int, int]]:
    """Byte ranges of at most ~max_bytes, cut at batch boundaries from the segment's offset
    index (a usable one: missing or insane, the segment is one range)."""
    size = seg.size()
    if size <= max_bytes:
        return [(0, size)] if size else []
    idx = seg.offset_index()
    if idx is None or not len(idx):
        return [(0, size)]
    cuts, last = [], 0
    with seg.mapped() as buf:
        for n in range(len(idx)):
            pos = idx.entry(n).position
            if 0 < pos < size and pos - last >= max_bytes and _is_boundary(buf, pos, size):
                cuts.append(pos)
                last = pos
    bounds = [0] + cuts + [size]
    return list(zip(bounds, bounds[1:], strict=False))


def _is_boundary(buf, pos: int, size: int) -> bool:
    """Does a plausible entry start at ``pos``? (A wrong index must not split inside a batch.)
    Reads only the bytes it checks (``read_range``: a URI's file is not pulled in whole)."""
    from kseg.format.batch import CRC_COVERAGE_START, CRC_POS, HEADER, MAGIC
    from kseg.format.crc import crc32c
    from kseg.format.entry import LOG_OVERHEAD, MAGIC_POS, SIZE_POS

    if pos + HEADER.size > size:
        return False
    try:
        head = buf.read_range(pos, pos + HEADER.size)
        check_entry_header(head, 0, size - pos)  # reads only the first 17 bytes
    except Exception:  # noqa: BLE001 - any doubt (a short read included): do not cut here
        return False
    if head[MAGIC_POS] != MAGIC:
        return True  # legacy: the size checks above are what we can afford
    length = int.from_bytes(head[SIZE_POS:LOG_OVERHEAD], "big")
    if length + LOG_OVERHEAD > _MAX_BOUNDARY_CHECK:
        return False
    try:
        body = buf.read_range(pos, pos + length + LOG_OVERHEAD)
    except OSError:
        return False
    return crc32c(body[CRC_COVERAGE_START:]) == int.from_bytes(
        head[CRC_POS:CRC_COVERAGE_START], "big"
    )
