"""`kseg spark export`'s Parquet writer on the executors: each task decodes its byte range with
the source's decoder (kseg.spark.arrow, through KsegReader.read) and writes one Parquet file
with pyarrow, with a commit step on the driver.

Commit protocol (the shape of Hadoop's FileOutputCommitter, v1):

- a task attempt writes ``<out>/_temporary/<job>/<task>-<attempt>/part-<task>-<job>.parquet``
  and returns (task, attempt, that file, rows) as data; an attempt that fails leaves at most a
  file there, which nothing ever moves;
- Spark keeps one result per task (a retried or speculative task's other attempts are never
  collected), so once every task has succeeded the driver replaces what ``out`` held before
  (as Spark's writer's overwrite mode does), moves each collected file to
  ``<out>/[topic=T/][partition=P/]part-<task>-<job>.parquet``, writes ``_SUCCESS`` last and
  removes ``_temporary/<job>``;
- a failed or interrupted job removes ``_temporary/<job>`` (and ``out`` if it created it and it
  is empty): no part file appears and what ``out`` held before is left as it was.

Each task's rows belong to one topic-partition (a task is a byte range of one segment), so
partitioning by topic and/or partition needs no shuffle: the values name the task's directory
and the columns leave the file, as in Spark's own partitioned output. Timestamps are written as
INT64 TIMESTAMP(MICROS, UTC) (Spark's ``outputTimestampType=TIMESTAMP_MICROS``; its default
INT96 is deprecated), which Spark reads back as the same ``timestamp`` column.
"""

from __future__ import annotations

import json
import uuid
from typing import NamedTuple

PARTITION_COLUMNS = ("topic", "partition")
TEMPORARY = "_temporary"
SUCCESS = "_SUCCESS"
FLUSH_BYTES = 64 << 20  # Arrow bytes buffered per row group (Spark's writer buffers 128 MB)

# spark.sql.parquet.compression.codec -> pyarrow's name; lzo and Hadoop's lz4 framing are
# Spark's alone (pyarrow's "lz4" is LZ4_RAW)
CODECS = {
    "none": "none",
    "uncompressed": "none",
    "snappy": "snappy",
    "gzip": "gzip",
    "zstd": "zstd",
    "brotli": "brotli",
    "lz4_raw": "lz4",
}

# characters Spark escapes in a partition directory's value (ExternalCatalogUtils.escapePathName)
_ESCAPE = set("\"#%'*/:=?\\\x7f{[]^") | {chr(c) for c in range(0x20)}


def escape_path_name(value: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _ESCAPE else c for c in value)


def unserved(fmt: str, partition_by, out: str, codec: str) -> str | None:
    """Why this export needs Spark's own writer (None: the Arrow writer serves it)."""
    if fmt != "parquet":
        return f"--format {fmt} is written by Spark's writer only"
    others = [c for c in partition_by if c not in PARTITION_COLUMNS]
    if others:
        return f"the Arrow writer partitions by topic and partition only, not {', '.join(others)}"
    if codec.lower() not in CODECS:
        return f"spark.sql.parquet.compression.codec={codec} is not one pyarrow writes"
    try:
        _filesystem(out)
    except Exception as exc:  # noqa: BLE001 - e.g. s3a:// or hdfs:// without libhdfs
        return f"pyarrow cannot write to {out} ({exc})"
    return None


def _filesystem(out: str):
    """(pyarrow filesystem, path in it) for a local path or a URI pyarrow.fs serves."""
    import os

    from pyarrow import fs as pafs

    if "://" in out:
        return pafs.FileSystem.from_uri(out)
    return pafs.LocalFileSystem(), os.path.abspath(out)


class ArrowExport(NamedTuple):
    """One export job: plain data, pickled to the executors."""

    out: str
    job_id: str
    partition_by: tuple[str, ...]
    compression: str
    reader: object  # a kseg.spark.source.KsegReader in records mode
    # tests: this task's first ``fail_attempts`` attempts fail once they have written their file
    fail_task: int | None = None
    fail_attempts: int = 1

    def attempt_dir(self, base: str, task: int, attempt: int) -> str:
        return f"{base}/{TEMPORARY}/{self.job_id}/{task:05d}-{attempt}"

    def file_name(self, task: int) -> str:
        return f"part-{task:05d}-{self.job_id}.parquet"

    def write_task(
        self, task: int, value: dict
    ) -> tuple[int, int, str | None, str, int, list[str]]:
        """On an executor: (task, attempt, attempt file or None when no row, final relative
        path, rows, what could not be read)."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        from pyspark import TaskContext
        from pyspark.sql.datasource import InputPartition

        ctx = TaskContext.get()
        attempt = ctx.attemptNumber() if ctx is not None else 0
        filesystem, base = _filesystem(self.out)
        tmp_dir = self.attempt_dir(base, task, attempt)
        tmp_file = f"{tmp_dir}/{self.file_name(task)}"
        rel_dir = "/".join(
            f"{c}={escape_path_name(str(value[c]))}" for c in self.partition_by
        )  # a task reads one segment: one topic and partition
        rel = f"{rel_dir}/{self.file_name(task)}" if rel_dir else self.file_name(task)
        writer = None
        pending: list = []
        size = rows = 0

        def flush() -> None:
            nonlocal writer, pending, size
            table = pa.Table.from_batches(pending)
            if writer is None:
                filesystem.create_dir(tmp_dir, recursive=True)
                writer = pq.ParquetWriter(
                    tmp_file, table.schema, filesystem=filesystem, compression=self.compression
                )
            writer.write_table(table, row_group_size=max(1, table.num_rows))
            pending, size = [], 0

        from kseg.spark import arrow

        arrow.UNREADABLE.clear()
        try:
            for batch in self.reader.read(InputPartition(value)):
                if self.partition_by:
                    batch = batch.drop_columns(list(self.partition_by))
                pending.append(batch)
                size += batch.nbytes
                rows += batch.num_rows
                if size >= FLUSH_BYTES:
                    flush()
            if pending:
                flush()
        finally:
            if writer is not None:
                writer.close()
        if self.fail_task == task and attempt < self.fail_attempts:
            raise RuntimeError(f"kseg test: task {task} attempt {attempt} fails after writing")
        skipped = list(arrow.UNREADABLE)
        return task, attempt, (tmp_file if writer is not None else None), rel, rows, skipped


def export(
    spark,
    paths: list[str],
    out: str,
    *,
    partition_by=PARTITION_COLUMNS,
    include_headers: bool = True,
    compression: str = "snappy",
    fail_task: int | None = None,
    fail_attempts: int = 1,
    unreadable: list[str] | None = None,
    **options,
) -> int:
    """Write the records table as Parquet from the executors (see the module's doc); returns
    the number of rows written. ``unreadable`` gets a message for each segment a task could not
    read (the export holds everything else)."""
    from kseg.spark.source import KsegReader

    opts = {
        "paths": json.dumps([str(p) for p in paths]),
        "mode": "records",
        "includeHeaders": "true" if include_headers else "false",
    }
    for key, value in options.items():
        if value is not None:
            opts[key] = str(value).lower() if isinstance(value, bool) else str(value)
    reader = KsegReader(opts)
    values = [p.value for p in reader.partitions()]
    job = ArrowExport(
        out=out,
        job_id=uuid.uuid4().hex,
        partition_by=tuple(partition_by),
        compression=CODECS[compression.lower()],
        reader=reader,
        fail_task=fail_task,
        fail_attempts=fail_attempts,
    )
    filesystem, base = _filesystem(out)
    from pyarrow import fs as pafs

    created = filesystem.get_file_info(base).type == pafs.FileType.NotFound
    sc = spark.sparkContext
    group = sc.getLocalProperty("spark.jobGroup.id")
    try:
        results = []
        if values:
            sc.setJobGroup(job.job_id, "kseg spark export", interruptOnCancel=True)
            rdd = sc.parallelize(list(enumerate(values)), len(values))
            results = rdd.mapPartitions(lambda it: [job.write_task(i, v) for i, v in it]).collect()
        skipped = [m for r in results for m in r[5]]
        if not any(r[2] for r in results) and not job.partition_by:
            # no row at all: one file holding the schema, as Spark's writer leaves
            results = [_empty_file(job, filesystem, base, include_headers)]
        _commit(job, filesystem, base, results)
    except BaseException as exc:
        if not isinstance(exc, KeyboardInterrupt):  # on Ctrl-C the JVM is ended at once
            _settle(sc, job.job_id)
        _abort(job, filesystem, base, created)
        raise
    finally:
        sc.setLocalProperty("spark.jobGroup.id", group)
    if unreadable is not None:
        unreadable.extend(skipped)
    return sum(r[4] for r in results)


def _settle(sc, group: str, timeout: float = 30.0) -> None:
    """After a failure: cancel the job's tasks still running and wait (bounded) until none
    runs, so that none writes into ``_temporary`` after it is removed."""
    import time

    try:
        sc.cancelJobGroup(group)
        tracker = sc.statusTracker()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            stages = [
                tracker.getStageInfo(s)
                for j in tracker.getJobIdsForGroup(group)
                for s in (getattr(tracker.getJobInfo(j), "stageIds", None) or [])
            ]
            if not any(s is not None and s.numActiveTasks for s in stages):
                return
            time.sleep(0.2)
    except Exception:  # noqa: BLE001, S110 - cleaning up after the failure being reported
        pass


def _empty_file(job: ArrowExport, filesystem, base: str, include_headers: bool) -> tuple:
    import pyarrow.parquet as pq

    from kseg.spark.arrow import records_schema

    tmp_dir = job.attempt_dir(base, 0, 0)
    filesystem.create_dir(tmp_dir, recursive=True)
    tmp_file = f"{tmp_dir}/{job.file_name(0)}"
    reader = job.reader
    schema = records_schema(
        include_headers,
        False,
        reader.schema_data is not None,
        getattr(reader, "struct_type", None) if reader.value_struct else None,
    )
    pq.ParquetWriter(tmp_file, schema, filesystem=filesystem, compression=job.compression).close()
    return 0, 0, tmp_file, job.file_name(0), 0, []


def _commit(job: ArrowExport, filesystem, base: str, results: list[tuple]) -> None:
    """On the driver, after every task succeeded: replace what ``out`` held, move the collected
    files in, ``_SUCCESS`` last, then drop this job's temporary dir."""
    from pyarrow import fs as pafs

    info = filesystem.get_file_info(base)
    if info.type == pafs.FileType.File:
        filesystem.delete_file(base)  # Spark's overwrite mode replaces a file at --out too
    filesystem.create_dir(base, recursive=True)
    for old in filesystem.get_file_info(pafs.FileSelector(base)):
        if old.base_name == TEMPORARY:
            continue  # ours, and any other job's still running
        if old.type == pafs.FileType.Directory:
            filesystem.delete_dir(old.path)
        else:
            filesystem.delete_file(old.path)
    for _task, _attempt, tmp_file, rel, _rows, _skipped in sorted(results):
        if tmp_file is None:
            continue
        final = f"{base}/{rel}"
        filesystem.create_dir(final.rsplit("/", 1)[0], recursive=True)
        filesystem.move(tmp_file, final)
    with filesystem.open_output_stream(f"{base}/{SUCCESS}"):
        pass
    _drop_temporary(job, filesystem, base)


def _abort(job: ArrowExport, filesystem, base: str, created: bool) -> None:
    """After a failure: no part file of this job anywhere; best effort (the failure that got
    us here is what the caller reports)."""
    from pyarrow import fs as pafs

    try:
        _drop_temporary(job, filesystem, base)
        if created and not filesystem.get_file_info(pafs.FileSelector(base)):
            filesystem.delete_dir(base)
    except Exception:  # noqa: BLE001, S110
        pass


def _drop_temporary(job: ArrowExport, filesystem, base: str) -> None:
    from pyarrow import fs as pafs

    tmp = f"{base}/{TEMPORARY}"
    job_tmp = f"{tmp}/{job.job_id}"
    if filesystem.get_file_info(job_tmp).type != pafs.FileType.NotFound:
        filesystem.delete_dir(job_tmp)
    if filesystem.get_file_info(tmp).type == pafs.FileType.Directory and not (
        filesystem.get_file_info(pafs.FileSelector(tmp))
    ):
        filesystem.delete_dir(tmp)


def write_records_file(pdir, out, topic: str, partition: int) -> int:
    """The records of partition dir ``pdir``'s segments as one Parquet file into the open binary
    file ``out``, without Spark: the records schema with headers, topic and partition as columns
    (kseg.spark.arrow.records_schema), rows decoded by the Spark source's decoder
    (kseg.spark.arrow.record_batches), snappy; control records are not rows. Returns the rows
    (`kseg replicas --export-lost`)."""
    import pyarrow.parquet as pq

    from kseg.spark.arrow import record_batches, records_schema
    from kseg.spark.planning import Task
    from kseg.storage.tree import segment_logs

    schema = records_schema(include_headers=True, segment_columns=False)
    rows = 0
    with pq.ParquetWriter(out, schema, compression=CODECS["snappy"]) as writer:
        for log in segment_logs(pdir):
            task = Task(str(log), topic, partition, int(log.stem), 0, log.stat().st_size)
            for batch in record_batches(task, include_headers=True):
                writer.write_batch(batch)
                rows += batch.num_rows
    return rows
