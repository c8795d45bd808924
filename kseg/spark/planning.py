"""Planning: which segments to read, and how to cut them into input partitions.

One input partition per segment at least; a segment larger than ``max_bytes`` is split at batch
boundaries taken from its offset index (each boundary is checked to really start a batch before it
is used), so one 1 GiB segment keeps every core busy. Filters prune segments by file name (offset)
and by the time index's last entry (the segment's max timestamp) before any data is read.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..format.log import check_entry_header
from ..format.offset_index import ENTRY as OFFSET_ENTRY
from ..format.time_index import ENTRY as TIME_ENTRY
from ..format.time_index import TimeIndex
from ..storage import files as F
from ..storage import tree
from . import fs

DEFAULT_MAX_BYTES = 128 << 20


@dataclass(frozen=True)
class Task:
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
        return asdict(self)


@dataclass(frozen=True)
class Prune:
    topic: str | None = None  # regex
    partitions: frozenset[int] | None = None
    from_offset: int | None = None
    to_offset: int | None = None
    from_time: int | None = None  # epoch ms
    to_time: int | None = None


def _lister(path: str) -> list[tree.Child]:
    return [tree.Child(e.name, e.path, e.is_dir) for e in fs.list_dir(path)]


def find_partitions(paths: list[str], prune: Prune) -> list[tuple[str, str, int, str]]:
    """(partition dir, topic, partition, log dir) for every input: a log.dirs root, a directory
    of roots (e.g. one per broker), or partition dirs, told apart by content exactly as the local
    commands do (kseg.storage.tree). Deleted/future/stray partition dirs are left out. Raises
    tree.InputError for an input with nothing Kafka in it."""
    out = []
    for path in paths:
        path = path.rstrip("/") or "/"
        lay = tree.layout(path, _lister, is_dir=fs.is_dir(path) if fs.is_uri(path) else None)
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


def plan(paths: list[str], prune: Prune, max_bytes: int = DEFAULT_MAX_BYTES) -> list[Task]:
    tasks: list[Task] = []
    for pdir, topic, part, log_dir in find_partitions(paths, prune):
        entries = fs.list_dir(pdir)
        names = {e.name: e for e in entries}
        logs = sorted((F.file_kind(e.name).base_offset, e) for e in entries if is_live_log(e.name))
        for i, (base, entry) in enumerate(logs):
            next_base = logs[i + 1][0] if i + 1 < len(logs) else None
            if prune.to_offset is not None and base > prune.to_offset:
                continue
            if (
                prune.from_offset is not None
                and next_base is not None
                and next_base <= prune.from_offset
            ):
                continue
            if prune.from_time is not None and i + 1 < len(logs):  # the active segment: always read
                tname = F.segment_file_name(base, ".timeindex")
                max_ts = _max_timestamp(names.get(tname), base)
                if max_ts is not None and max_ts < prune.from_time:
                    continue
            iname = F.segment_file_name(base, ".index")
            for start, end in split(entry.path, entry.size, names.get(iname), base, max_bytes):
                tasks.append(Task(entry.path, topic, part, base, start, end, log_dir=log_dir))
    return tasks


def partition_tasks(paths: list[str], prune: Prune) -> list[Task]:
    """One task per partition dir (for checks that need the whole partition)."""
    return [
        Task(pdir, topic, part, -1, 0, 0, "partition", log_dir)
        for pdir, topic, part, log_dir in find_partitions(paths, prune)
    ]


def is_live_log(name: str) -> bool:
    k = F.file_kind(name)
    return k.kind == F.LOG and not k.temp_suffix


def _max_timestamp(tindex: fs.Entry | None, base: int) -> int | None:
    """The time index's last entry (Kafka's own source for a segment's max timestamp)."""
    if tindex is None or tindex.size == 0 or tindex.size % TIME_ENTRY.size:
        return None
    if tindex.size <= 64 * 1024:
        idx = TimeIndex(fs.read_bytes(tindex.path), base)
        return idx.last_entry().timestamp if len(idx) else None
    last = fs.read_bytes(tindex.path, tindex.size - TIME_ENTRY.size, TIME_ENTRY.size)
    if last == bytes(TIME_ENTRY.size):
        return None  # preallocated: unknown without a scan, so do not prune
    return TIME_ENTRY.unpack(last)[0]


def split(
    path: str, size: int, index: fs.Entry | None, base: int, max_bytes: int
) -> list[tuple[int, int]]:
    """Byte ranges of at most ~max_bytes, cut at batch boundaries from the offset index."""
    if size <= max_bytes or index is None or index.size < OFFSET_ENTRY.size:
        return [(0, size)] if size else []
    data = fs.read_bytes(index.path)
    positions = [
        p
        for _, p in OFFSET_ENTRY.iter_unpack(
            data[: len(data) // OFFSET_ENTRY.size * OFFSET_ENTRY.size]
        )
        if 0 < p < size
    ]
    cuts, last = [], 0
    for pos in positions:
        if pos - last >= max_bytes and _is_boundary(path, pos, size):
            cuts.append(pos)
            last = pos
    bounds = [0] + cuts + [size]
    return list(zip(bounds, bounds[1:], strict=False))


def _is_boundary(path: str, pos: int, size: int) -> bool:
    """Does a plausible entry start at ``pos``? (A wrong index must not split inside a batch.)"""
    from ..format.batch import CRC_COVERAGE_START, CRC_POS, HEADER, MAGIC
    from ..format.crc import crc32c
    from ..format.entry import LOG_OVERHEAD, MAGIC_POS, SIZE_POS

    head = fs.read_bytes(path, pos, HEADER.size)
    if len(head) < HEADER.size:
        return False
    try:
        check_entry_header(head, 0, size - pos)  # reads only the first 17 bytes
    except Exception:  # noqa: BLE001 - any doubt: do not cut here
        return False
    if head[MAGIC_POS] != MAGIC:
        return True  # legacy: the size checks above are what we can afford
    length = int.from_bytes(head[SIZE_POS:LOG_OVERHEAD], "big")
    body = fs.read_bytes(path, pos, length + LOG_OVERHEAD)
    return len(body) == length + LOG_OVERHEAD and crc32c(
        body[CRC_COVERAGE_START:]
    ) == int.from_bytes(head[CRC_POS:CRC_COVERAGE_START], "big")
