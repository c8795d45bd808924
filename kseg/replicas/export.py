"""`kseg replicas --export-lost DIR`: the batches a losing replica alone holds, written where an
operator can read them and produce again what matters; the input is only read.

For one partition, under ``dest``:

- ``<topic>-<partition>/``: a partition dir Kafka loads. The lost byte ranges of each source
  `.log` are copied verbatim (same offsets, CRCs, epochs) into one segment named by its first
  batch's base offset (kseg.storage.splice.write_splice, as ``salvage --to`` writes a spliced
  segment), then `.index`/`.timeindex`/`.txnindex` are written as ``kseg index rebuild`` writes
  them (kseg.index.rebuild: Kafka's recovery), and a ``leader-epoch-checkpoint`` holding what
  Kafka's recovery loads from those batches (an epoch above the latest one starts an entry). No
  producer snapshot (Kafka rebuilds producer state from the batches) and no
  ``partition.metadata`` (the source's topic id would clash with the topic of the cluster that
  loads the dir; Kafka writes its own).
- ``<topic>-<partition>.jsonl``: the record lines ``kseg dump -f json`` prints for that dir
  (control records are ``control`` events there, so not in it), through dump's own run and
  renderer.
- ``<topic>-<partition>.parquet``: the same records in the Spark export's records schema with
  headers (kseg.spark.arrow.records_schema, topic and partition as columns), decoded by the Spark
  source's own decoder (kseg.spark.arrow.record_batches) without starting Spark; not written
  (None) when pyarrow is not installed.

Every file is written atomically (temp name, fsync, rename; the partition dir is built under a
temp name and renamed into place), never through a symlink, and an export that fails leaves
none of its output behind. ``check_dest`` refuses before anything is read.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from kseg.format import checkpoint as cp
from kseg.format.batch import RecordBatch
from kseg.format.errors import CorruptionError
from kseg.format.log import iter_entries
from kseg.index.rebuild import rebuild_target
from kseg.outcome import BadOption
from kseg.storage.atomic import _write_replace, fsync_dir, temp_name
from kseg.storage.files import segment_file_name
from kseg.storage.links import write_refusal
from kseg.storage.mapped import mapped
from kseg.storage.splice import write_splice
from kseg.storage.tree import Target

OPTION = "--export-lost"


class ExportPaths(NamedTuple):
    dir: Path
    jsonl: Path
    parquet: Path


class ExportResult(NamedTuple):
    dir: Path
    jsonl: Path
    parquet: Path | None  # None: pyarrow is not installed
    records: int  # data records (the JSON lines; control records are not among them)
    batches: int  # entries copied, control batches included
    bytes: int  # bytes copied


class ExportError(Exception):
    """The export could not be made as said (nothing of it is left behind)."""


class RangeMismatch(ExportError):
    """A lost range is not whole, intact batches of its `.log` holding the offsets said (the
    file changed since it was compared, or the range is wrong): nothing is written."""


class _Segment(NamedTuple):
    log: Path  # the source .log
    keep: list[tuple[int, int]]  # its [start, end) byte ranges copied, in order
    base_offset: int  # of the first batch copied: the new segment's name


def export_paths(dest: Path, topic: str, partition: int) -> ExportPaths:
    name = f"{topic}-{partition}"
    return ExportPaths(dest / name, dest / f"{name}.jsonl", dest / f"{name}.parquet")


def check_dest(dest: Path, topic: str, partition: int, *, src_partition_dir: Path | None = None):
    """Raise BadOption (a usage error) when the export of this partition cannot go to ``dest``:
    ``dest`` is a symlink or not a directory, already holds the partition dir or its files
    (never overwritten), or lies inside the source partition dir. Reads nothing of the input."""
    why = None
    if dest.is_symlink():
        why = write_refusal(dest)  # "a symlink (-> ...); kseg never writes through a symlink"
    elif os.path.lexists(dest) and not dest.is_dir():
        why = "exists and is not a directory"
    if why is not None:
        raise BadOption(f"{dest}: {why}", OPTION)
    for path in export_paths(dest, topic, partition):
        if os.path.lexists(path):
            raise BadOption(f"{path}: exists; {OPTION} writes new files only", OPTION)
    if src_partition_dir is not None:
        src = src_partition_dir.resolve()
        there = dest.resolve()
        if there == src or src in there.parents:
            raise BadOption(f"{dest}: inside the partition dir read ({src_partition_dir})", OPTION)


def export_lost(
    src_partition_dir: Path,
    ranges: Sequence,
    dest: Path,
    *,
    topic: str,
    partition: int,
    index_interval_bytes: int = 4096,
) -> ExportResult:
    """Write the batches of ``ranges`` (kseg.replicas.compare.LostRange: whole batches of a
    `.log` of ``src_partition_dir``, byte range [start, end), in log order) under ``dest`` (see
    the module's doc). Raises BadOption (check_dest) or RangeMismatch before writing anything;
    an OSError or an interrupt removes what was written."""
    dest = Path(dest)
    paths = export_paths(dest, topic, partition)
    check_dest(dest, topic, partition, src_partition_dir=Path(src_partition_dir))
    if not ranges:
        raise ValueError("no lost range to export")
    segments, batches, epochs = _plan(ranges)
    dest.mkdir(parents=True, exist_ok=True)
    check_dest(dest, topic, partition)  # a link made meanwhile is refused too
    written: list[Path] = []
    try:
        tmp = temp_name(paths.dir)
        tmp.mkdir()
        written.append(tmp)
        logs = []
        for seg in segments:
            log = tmp / segment_file_name(seg.base_offset, ".log")
            write_splice(seg.log, log, seg.keep, [])
            logs.append(log)
        rebuild_target(Target(tmp, logs), index_interval_bytes=index_interval_bytes)
        if epochs:
            _atomic(tmp / "leader-epoch-checkpoint", cp.encode_leader_epoch_checkpoint(epochs))
        fsync_dir(tmp)
        if os.path.lexists(paths.dir):  # made meanwhile: never replaced
            raise BadOption(f"{paths.dir}: exists; {OPTION} writes new files only", OPTION)
        os.rename(tmp, paths.dir)
        written[0] = paths.dir
        fsync_dir(dest)
        written.append(paths.jsonl)
        records = _write_jsonl(paths.dir, paths.jsonl)
        parquet = None
        if _have_pyarrow():
            written.append(paths.parquet)
            parquet = paths.parquet
            rows = _write_parquet(paths.dir, paths.parquet, topic, partition)
            if rows != records:  # one decoder's view against the other's: never expected
                raise ExportError(
                    f"{paths.dir}: the Parquet export holds {rows} records, the JSON Lines "
                    f"{records}"
                )
    except BaseException:
        _remove(written)
        raise
    return ExportResult(
        paths.dir,
        paths.jsonl,
        parquet,
        records,
        batches,
        sum(e - s for seg in segments for s, e in seg.keep),
    )


def _plan(ranges: Sequence) -> tuple[list[_Segment], int, list[cp.EpochEntry]]:
    """The segments to write (one per source `.log`, its ranges in order), the number of
    batches, and the leader epochs Kafka's recovery loads from them (LogSegment.recover: a
    batch's epoch above the cache's latest starts an entry at its base offset). Each range is
    walked (CRCs checked): it must be whole, intact entries whose offsets rise and that hold
    its first and last offset."""
    segments: list[_Segment] = []
    epochs: list[cp.EpochEntry] = []
    batches = 0
    last = None  # offset of the last entry planned
    for r in ranges:
        log, start, end = Path(r.log), r.start, r.end
        if not 0 <= start < end:
            raise RangeMismatch(f"{log}: byte {start}: empty or negative range [{start}, {end})")
        first_entry = last_entry = None
        with mapped(log) as buf:
            if end > len(buf):
                raise RangeMismatch(
                    f"{log}: byte {len(buf)}: the file ends before the range's end {end}"
                )
            try:
                for e in iter_entries(buf, start, end, validate=True, source=str(log)):
                    base = e.base_offset
                    if last is not None and base <= last:
                        raise RangeMismatch(
                            f"{log}: byte {e.position}: offset {base} does not follow {last}"
                        )
                    if isinstance(e, RecordBatch):
                        ple = e.partition_leader_epoch
                        if ple >= 0 and (not epochs or ple > epochs[-1].epoch):
                            epochs.append(cp.EpochEntry(ple, base))
                    first_entry = first_entry or (e.position, base)
                    last_entry = e.last_offset
                    last = e.last_offset
                    batches += 1
            except CorruptionError as exc:
                raise RangeMismatch(f"{exc} (inside the lost range [{start}, {end}))") from None
        if first_entry is None:
            raise RangeMismatch(f"{log}: byte {start}: no batch in [{start}, {end})")
        if not (first_entry[1] <= r.first_offset and last_entry == r.last_offset):
            raise RangeMismatch(
                f"{log}: byte {start}: [{start}, {end}) holds offsets {first_entry[1]}.."
                f"{last_entry}, not {r.first_offset}..{r.last_offset}"
            )
        if segments and segments[-1].log == log:
            prev = segments[-1]
            segments[-1] = prev._replace(keep=[*prev.keep, (start, end)])
        else:
            segments.append(_Segment(log, [(start, end)], first_entry[1]))
    return segments, batches, epochs


def _atomic(path: Path, data: bytes) -> None:
    _write_replace(path, lambda f: f.write(data))


class _RecordLines:
    """A binary sink passing on only dump's ``record`` lines (written in any pieces)."""

    _MARK = b'{"type":"record",'

    def __init__(self, out) -> None:
        self.out = out
        self.head = b""  # the start of the current line, until it is told apart
        self.keep: bool | None = None  # None: not decided yet
        self.lines = 0

    def write(self, data: bytes) -> None:
        data = bytes(data)
        while data:
            if self.keep is None:
                need = len(self._MARK) - len(self.head)
                self.head += data[:need]
                data = data[need:]
                nl = self.head.find(b"\n")
                if nl >= 0:  # a short line: never a record's
                    data, self.head = self.head[nl + 1 :] + data, b""
                    continue
                if len(self.head) < len(self._MARK):
                    return
                self.keep = self.head == self._MARK
                if self.keep:
                    self.out.write(self.head)
                self.head = b""
            nl = data.find(b"\n")
            piece = data if nl < 0 else data[: nl + 1]
            if self.keep:
                self.out.write(piece)
            if nl < 0:
                return
            if self.keep:
                self.lines += 1
            self.keep = None
            data = data[nl + 1 :]


def _write_jsonl(pdir: Path, path: Path) -> int:
    """``kseg dump -f json`` of ``pdir``, its record lines only, into ``path``; returns them."""
    from kseg.dump.options import DumpOptions
    from kseg.dump.run import DumpRun
    from kseg.outcome import Outcome
    from kseg.render.dump_json import JSON_LINES
    from kseg.render.json import write_json_chunks

    run = DumpRun([pdir], DumpOptions(json_lines=JSON_LINES))
    problems: list[dict] = []

    def chunks():
        for chunk in run.chunks():
            problems.extend(ev for ev in chunk if type(ev) is dict and ev["type"] == "error")
            yield chunk

    counted: list[int] = []

    def fill(f) -> None:
        sink = _RecordLines(f)
        for _ in write_json_chunks(chunks(), sink):
            pass
        counted.append(sink.lines)

    _write_replace(path, fill)
    if run.outcome != Outcome.OK or problems:
        first = problems[0] if problems else {"file": str(pdir), "message": "unreadable"}
        raise ExportError(f"{first['file']}: dump of the exported dir: {first['message']}")
    return counted[0]


def _have_pyarrow() -> bool:
    import importlib.util

    return importlib.util.find_spec("pyarrow") is not None


def _write_parquet(pdir: Path, path: Path, topic: str, partition: int) -> int:
    """The records of ``pdir``'s segments in the Spark export's schema (headers included, topic
    and partition as columns) into ``path``, one row group per decoded batch of rows; returns
    the rows."""
    import pyarrow.parquet as pq

    from kseg.spark.arrow import record_batches, records_schema
    from kseg.spark.planning import Task
    from kseg.storage.tree import segment_logs

    schema = records_schema(include_headers=True, segment_columns=False)
    rows: list[int] = []

    def fill(f) -> None:
        n = 0
        with pq.ParquetWriter(f, schema, compression="snappy") as writer:
            for log in segment_logs(pdir):
                task = Task(str(log), topic, partition, int(log.stem), 0, log.stat().st_size)
                for batch in record_batches(task, include_headers=True):
                    writer.write_batch(batch)
                    n += batch.num_rows
        rows.append(n)

    _write_replace(path, fill)
    return rows[0]


def _remove(paths: list[Path]) -> None:
    """What this export wrote (its partition dir, under its temp name or its own, and files)."""
    for p in paths:
        try:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink(missing_ok=True)
        except OSError:
            pass
