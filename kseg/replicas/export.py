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
- ``<topic>-<partition>.jsonl`` and ``<topic>-<partition>.parquet``, when the caller hands
  ``files`` (RecordFiles: the library sits below render and spark, as dump is handed its JSON
  maker): the record lines ``kseg dump -f json`` prints for that dir (kseg.render.lost_records),
  and the same records in the Spark export's records schema (kseg.spark.parquet_out
  .write_records_file; None when pyarrow is not installed).

Every file is written atomically (temp name, fsync, rename; the partition dir is built under a
temp name and renamed into place), never through a symlink, and an export that fails leaves
none of its output behind. ``check_dest`` refuses before anything is read.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO, NamedTuple

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


class RecordFiles(NamedTuple):
    """The writers of the exported records' files, handed in by the caller (they are render's
    and spark's: kseg.render.lost_records.record_files). Each writes the records of the
    partition dir given into the open file and returns how many it wrote."""

    jsonl: Callable[[Path, BinaryIO], int]
    parquet: Callable[[Path, BinaryIO, str, int], int] | None  # None: pyarrow is not installed


class ExportResult(NamedTuple):
    dir: Path
    jsonl: Path | None  # None: no RecordFiles handed in
    parquet: Path | None  # None: none handed in, or pyarrow is not installed
    records: int  # data records (control records are not among them)
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
    files: RecordFiles | None = None,
    index_interval_bytes: int = 4096,
) -> ExportResult:
    """Write the batches of ``ranges`` (kseg.replicas.compare.LostRange: whole batches of a
    `.log` of ``src_partition_dir``, byte range [start, end), in log order) under ``dest``, and
    with ``files`` their records as JSON Lines and Parquet (see the module's doc). Raises
    BadOption (check_dest) or RangeMismatch before writing anything; an OSError, an
    ExportError or an interrupt removes what was written."""
    dest = Path(dest)
    paths = export_paths(dest, topic, partition)
    check_dest(dest, topic, partition, src_partition_dir=Path(src_partition_dir))
    if not ranges:
        raise ValueError("no lost range to export")
    segments, batches, records, epochs = _plan(ranges)
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
        jsonl = parquet = None
        if files is not None:
            written.append(paths.jsonl)
            records = _write_records(paths.jsonl, lambda f: files.jsonl(paths.dir, f))
            jsonl = paths.jsonl
        if files is not None and files.parquet is not None:
            written.append(paths.parquet)
            rows = _write_records(
                paths.parquet, lambda f: files.parquet(paths.dir, f, topic, partition)
            )
            parquet = paths.parquet
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
        jsonl,
        parquet,
        records,
        batches,
        sum(e - s for seg in segments for s, e in seg.keep),
    )


def _plan(ranges: Sequence) -> tuple[list[_Segment], int, int, list[cp.EpochEntry]]:
    """The segments to write (one per source `.log`, its ranges in order), the number of
    batches and of data records (their count fields), and the leader epochs Kafka's recovery loads from them (LogSegment.recover: a
    batch's epoch above the cache's latest starts an entry at its base offset). Each range is
    walked (CRCs checked): it must be whole, intact entries whose offsets rise and that hold
    its first and last offset."""
    segments: list[_Segment] = []
    epochs: list[cp.EpochEntry] = []
    batches = records = 0
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
                    if not (isinstance(e, RecordBatch) and e.is_control):
                        records += e.records_count
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
    return segments, batches, records, epochs


def _atomic(path: Path, data: bytes) -> None:
    _write_replace(path, lambda f: f.write(data))


def _write_records(path: Path, write: Callable[[BinaryIO], int]) -> int:
    """``write`` into ``path`` atomically; returns what it returned."""
    got: list[int] = []
    _write_replace(path, lambda f: got.append(write(f)))
    return got[0]


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
