"""One segment's files (Kafka's LogSegment): the `.log` and its offset, time and transaction
indexes, named `<base offset, 20 digits><ext><state suffix>`.

This is the one place where a segment's files are opened: the `.log` through the
:mod:`storage.mapped` reader (a :class:`~kseg.storage.mapped.ShadowMap`: pread on demand, never a
file map that can fault), each index at most once, lazily, and sanity-checked at most once
(Kafka's ``sanityCheck``). Why an index cannot be used is said by one text
(:meth:`IndexFile.warning`), whoever asks.

A segment named by a URI (a :class:`~kseg.storage.uri.UriPath`, or a string with a scheme) is the
same object: its `.log` is read in ranges on demand through pyarrow.fs
(:class:`~kseg.storage.mapped.RemoteMap`), its indexes whole after a size check.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import NamedTuple

from kseg.format import txn_index as tx
from kseg.format.errors import INVALID_INDEX, INVALID_SIZE, CorruptionError
from kseg.format.log import Entry, indexed_position_problem, iter_entries
from kseg.format.offset_index import OffsetIndex
from kseg.format.time_index import TimeIndex
from kseg.storage import files as F
from kseg.storage import kernel_walk, walked
from kseg.storage.mapped import ShadowMap, map_file, mapped, open_mapped, read_slices
from kseg.storage.uri import UriPath, as_path

OFFSET_INDEX, TIME_INDEX, TXN_INDEX = F.INDEX, F.TIME_INDEX, F.TXN_INDEX
# The most bytes of a `.log` Kafka addresses: positions are int32 (index entries, FileRecords'
# size), and FileRecords refuses to open a larger segment ("The size of segment ... is larger
# than the maximum allowed segment size of 2147483647"). kseg reads that part and no further.
MAX_SEGMENT_BYTES = (1 << 31) - 1


def oversize_error(path, size: int) -> CorruptionError:
    """The one text for a `.log` larger than Kafka can address (see MAX_SEGMENT_BYTES)."""
    return CorruptionError(
        f"segment of {size} bytes: positions stop fitting Kafka's int32 here (its maximum"
        f" segment size is {MAX_SEGMENT_BYTES}; Kafka's FileRecords refuses to open a larger"
        f" one); the {size - MAX_SEGMENT_BYTES} bytes past it are not read",
        kind=INVALID_SIZE,
        position=MAX_SEGMENT_BYTES,
        file=str(path),
    )


EXTENSIONS = {kind: ext for ext, kind in F.SEGMENT_SUFFIXES.items()}  # "index" -> ".index"
_VIEWS = {OFFSET_INDEX: OffsetIndex, TIME_INDEX: TimeIndex}
_SEGMENT_KINDS = frozenset(F.SEGMENT_SUFFIXES.values())


class IndexFile:
    """One index file of a segment, opened once: ``view`` (an :class:`OffsetIndex`, a
    :class:`TimeIndex`, or the bytes of a `.txnindex`) or ``error`` (why it could not be read;
    a :class:`FileNotFoundError` when it is missing). ``problem`` is Kafka's sanity check of
    what was read, run once, when first asked."""

    __slots__ = ("kind", "path", "view", "error", "_problem", "_checked")

    def __init__(self, kind: str, path: Path, view=None, error: OSError | None = None) -> None:
        self.kind, self.path, self.view, self.error = kind, path, view, error
        self._problem: CorruptionError | None = None
        self._checked = False

    @property
    def missing(self) -> bool:
        return isinstance(self.error, FileNotFoundError)

    @property
    def problem(self) -> CorruptionError | None:
        """Why the index read fails Kafka's sanity check (None: it passes, or was not read)."""
        if not self._checked:
            self._checked = True
            if self.view is not None:
                try:
                    if self.kind == TXN_INDEX:
                        for _ in tx.read_entries(self.view):
                            pass
                    else:
                        self.view.sanity_check()
                except CorruptionError as exc:
                    self._problem = exc
        return self._problem

    @property
    def usable(self) -> bool:
        """Read and sane: lookups may trust it."""
        return self.view is not None and self.problem is None

    def warning(self) -> str | None:
        """The one text saying why this index is not used (None when it is usable)."""
        if self.missing:
            return f"{self.path}: missing; scanning the segment instead"
        why = self.error if self.error is not None else self.problem
        if why is None:
            return None
        return f"{self.path}: unusable ({why}); scanning the segment instead"


class ScanStart(NamedTuple):
    """Where a scan for an offset starts in a segment's log (:meth:`Segment.start_for`)."""

    position: int  # the offset index entry's position, or 0
    problem: CorruptionError | None  # the entry that could not be followed (invalid data)


class Segment:
    """The segment that ``path`` (its `.log`, or any other of its files) belongs to.

    ``whole_indexes``: read each index whole into memory (a pass that compares every entry,
    and must not fault if the file shrinks: verify) instead of mapping it for a few binary
    searches (lookups touch a few pages: seek, dump's start position)."""

    def __init__(self, log: str | Path | UriPath, *, whole_indexes: bool = False) -> None:
        log = log if isinstance(log, Path) else as_path(log)  # a local path or a URI
        kind = F.file_kind(log)
        if kind.kind not in _SEGMENT_KINDS or kind.base_offset is None:
            raise ValueError(f"{log}: not a segment file name (<20-digit offset>.log)")
        self.dir = log.parent
        self.base_offset: int = kind.base_offset
        self.temp_suffix: str = kind.temp_suffix  # ".deleted", ".cleaned", ".swap" or ""
        self.log = log if kind.kind == F.LOG else self.file(F.LOG)
        self.whole_indexes = whole_indexes
        self._indexes: dict[str, IndexFile] = {}

    @classmethod
    def listed(cls, pdir: Path, name: str, base_offset: int, *, whole_indexes: bool = False):
        """A live segment whose `.log` name a directory listing has parsed already (a
        partition of 1000s of segments: no second parse)."""
        self = cls.__new__(cls)
        self.dir, self.base_offset, self.temp_suffix = pdir, base_offset, ""
        self.log = pdir / name
        self.whole_indexes = whole_indexes
        self._indexes = {}
        return self

    def __fspath__(self) -> str:
        """A Segment stands for its `.log` wherever a path is expected (``Path(segment)``)."""
        return str(self.log)

    def __repr__(self) -> str:
        return f"Segment({str(self.log)!r})"

    @property
    def state(self) -> str | None:
        """ "deleted", "cleaned" or "swap" for a renamed segment; None for a live one."""
        return self.temp_suffix.lstrip(".") or None

    def file(self, kind: str) -> Path:
        """The path of this segment's file of ``kind`` (files.LOG, files.INDEX, ...)."""
        return (
            self.dir
            / f"{F.segment_file_name(self.base_offset, EXTENSIONS[kind])}{self.temp_suffix}"
        )

    def size(self) -> int:
        """The `.log`'s size now (stat; raises OSError naming it)."""
        return self.log.stat().st_size

    def log_size(self) -> int | None:
        """The `.log`'s size, or None when it cannot be read (an orphan index)."""
        try:
            return self.size()
        except OSError:
            return None

    # --- the .log ----------------------------------------------------------------------------
    def mapped(self, *, sequential: bool = False) -> AbstractContextManager[bytes | ShadowMap]:
        """The `.log`'s bytes for a block (storage.mapped.mapped: pread on demand, a
        FileShrankError naming the byte if it shrinks)."""
        return mapped(self.log, sequential=sequential, limit=MAX_SEGMENT_BYTES)

    def oversize(self) -> CorruptionError | None:
        """The error of a `.log` larger than Kafka addresses (None: it fits, or cannot be
        stat'ed); readers see only its first MAX_SEGMENT_BYTES (``mapped``)."""
        size = self.log_size()
        return None if size is None or size <= MAX_SEGMENT_BYTES else oversize_error(self.log, size)

    def batches(self, *, validate: bool = True, start: int = 0) -> Iterator[Entry]:
        """Every top-level entry from ``start``: see :func:`read_batches`."""
        return read_batches(self.log, validate=validate, start=start)

    def walk_headers(self, buf, start: int = 0, end: int | None = None) -> Iterator[tuple]:
        """The header walk (kseg.format.log.walk_headers: same tuples, same errors) over
        ``buf``, this segment's ``mapped()`` bytes: on the compiled kernel when it is active
        (kseg.storage.kernel_walk), else the pure-Python core."""
        walk = kernel_walk.walk_headers(buf, start, end)
        return walked.rows(walk, str(self.log)) if walked.watching() else walk

    def walk_blocks(self, buf, start: int = 0, end: int | None = None) -> Iterator[bytes]:
        """The same walk as blocks of packed rows (kernel_walk.ROW): no Python object per batch
        on the kernel's path (the core's path packs its tuples: use ``walk_headers`` there)."""
        walk = kernel_walk.walk_blocks(buf, start, end)
        return (
            walked.blocks(walk, str(self.log), kernel_walk.ROW.size) if walked.watching() else walk
        )

    # --- indexes -----------------------------------------------------------------------------
    def index(self, kind: str) -> IndexFile:
        """This segment's index of ``kind`` (OFFSET_INDEX, TIME_INDEX, TXN_INDEX), opened on
        the first call and kept."""
        found = self._indexes.get(kind)
        if found is None:
            found = self._indexes[kind] = self._open_index(kind)
        return found

    def _open_index(self, kind: str) -> IndexFile:
        path = self.file(kind)
        try:
            # read in slices on demand (never whole: a 4 GiB sparse index costs what is looked
            # at), not mapped: a live broker may shrink an index while it is read
            data = read_slices(path) if self.whole_indexes or kind == TXN_INDEX else map_file(path)
        except OSError as exc:
            return IndexFile(kind, path, error=exc)
        cls = _VIEWS.get(kind)
        return IndexFile(kind, path, cls(data, self.base_offset) if cls else data)

    def release(self) -> None:
        """Let go of the indexes read so far (a pass over many segments keeps one segment's
        indexes in memory at a time); a later ask opens them again."""
        self._indexes.clear()

    def offset_index(self) -> OffsetIndex | None:
        """The offset index if present, readable and sane; else None."""
        idx = self.index(OFFSET_INDEX)
        return idx.view if idx.usable else None

    def time_index(self) -> TimeIndex | None:
        """The time index if present, readable and sane; else None."""
        idx = self.index(TIME_INDEX)
        return idx.view if idx.usable else None

    def aborted_transactions(self) -> Iterator[tx.AbortedTxn]:
        """The `.txnindex` entries (raises its OSError, or a CorruptionError at the bad entry)."""
        idx = self.index(TXN_INDEX)
        if idx.error is not None:
            raise idx.error
        return tx.read_entries(idx.view)

    # --- lookups (Kafka: LogSegment.translateOffset / findOffsetByTimestamp) -----------------
    def start_for(self, offset: int, buf=None) -> ScanStart:
        """Where a scan for ``offset`` starts (Kafka's LogSegment.translateOffset): the offset
        index's largest entry at or below it, or 0 without a usable index. The one place an
        index position is trusted, so it is checked here, for every reader: an entry whose
        position is negative, past the log, not where a valid batch starts, or at a batch
        holding offsets past the entry's (format.log.indexed_position_problem) is invalid data,
        returned as ``problem`` (kind invalid_index, naming the index file and the entry's byte)
        with position 0: the scan from the segment's start gives the right answer anyway.
        ``buf``: this segment's ``mapped()`` bytes, if the caller holds them."""
        idx = self.offset_index()
        n = idx.lookup_entry(offset) if idx is not None else -1
        if n < 0:
            return ScanStart(0, None)
        entry = idx.entry(n)
        if buf is None:
            with self.mapped() as buf:
                why = indexed_position_problem(buf, entry.offset, entry.position, len(buf))
        else:
            why = indexed_position_problem(buf, entry.offset, entry.position, len(buf))
        if why is None:
            return ScanStart(entry.position, None)
        problem = CorruptionError(
            f"entry {n} ({entry.offset}, {entry.position}): {why}; the lookup scans the"
            " segment from its start instead",
            kind=INVALID_INDEX,
            position=n * idx.ENTRY_SIZE,
            offset=entry.offset,
            file=str(self.file(OFFSET_INDEX)),
        )
        return ScanStart(0, problem)

    def offset_for_time(self, timestamp: int) -> int:
        """Offset to scan from for the first record at or after ``timestamp``: the time
        index's largest entry at or below it, or the base offset without a usable index."""
        idx = self.time_index()
        return idx.lookup(timestamp).offset if idx is not None else self.base_offset


def read_batches(path: str | Path, *, validate: bool = True, start: int = 0) -> Iterator[Entry]:
    """Yield every top-level entry (v2 :class:`RecordBatch` or legacy :class:`LegacyEntry`).

    Each batch is a view into the reader of the file (storage.mapped.ShadowMap) and holds a
    reference to it: the file stays open while the generator or any batch it yielded is alive,
    and closes when the last of them goes. A batch kept after the walk has moved on (e.g.
    ``list(read_batches(p))[0].records()``) reads its own bytes again when asked; nothing is
    copied while walking. With ``validate`` (the default) CRCs are checked and the first bad
    entry raises :class:`CorruptionError` naming this file and the byte position.
    """
    buf = open_mapped(
        path, MAX_SEGMENT_BYTES
    )  # no explicit close: the views keep it alive (reference counting)
    try:
        yield from iter_entries(buf, start, validate=validate, source=str(path))
    except CorruptionError as exc:
        raise exc.in_file(path) from None
