"""Partition-level rows for the Spark source: verify findings and segment summaries.
The very same library calls `kseg verify` makes, so the rows equal its output, for local paths
and URIs alike (kseg.storage reads a URI's files through pyarrow.fs). Read-only `kseg verify`
takes no broker lock and neither do these: no check is left out for a URI."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from kseg.spark.arrow import _to_batch
from kseg.spark.planning import Task
from kseg.storage.segment import Segment
from kseg.storage.tree import Target, segment_logs
from kseg.storage.uri import as_path
from kseg.verify.partition import verify_target
from kseg.verify.segment import scan_segment

FINDINGS_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("severity", pa.string()),  # error | warning | info, or "summary" (one row per partition)
        ("kind", pa.string()),
        ("file", pa.string()),
        ("position", pa.int64()),
        ("offset", pa.int64()),  # summary rows: the log end offset of the valid data
        ("message", pa.string()),
        ("repairable", pa.bool_()),
    ]
)
SEGMENTS_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("file", pa.string()),
        ("base_offset", pa.int64()),
        ("size", pa.int64()),
        ("valid_bytes", pa.int64()),
        ("batches", pa.int64()),
        ("first_offset", pa.int64()),
        ("last_offset", pa.int64()),
        ("max_timestamp", pa.int64()),
        ("status", pa.string()),
        ("offset_index_status", pa.string()),
        ("time_index_status", pa.string()),
    ]
)


def findings(
    task: Task, index_interval_bytes: int = 4096, deep: bool = False
) -> Iterator[pa.RecordBatch]:
    pdir = as_path(task.path)  # a local path or a URI: the same checks (kseg.storage.uri)
    report = verify_target(
        Target(pdir, segment_logs(pdir)), deep=deep, index_interval_bytes=index_interval_bytes
    )
    cols: dict[str, list] = {f: [] for f in FINDINGS_SCHEMA.names}
    rows = [
        (f.severity, f.kind, f.file, f.position, f.offset, f.message, f.repairable)
        for f in report.all_findings
    ]
    rows.append(
        # the log end Kafka has after its next start: what verify's root checks compare with
        ("summary", "partition", str(pdir), None, report.kafka_log_end, "partition checked", False)
    )
    for severity, kind, file, position, offset, message, repairable in rows:
        for name, value in zip(
            FINDINGS_SCHEMA.names,
            (
                task.topic,
                task.partition,
                severity,
                kind,
                file,
                position,
                offset,
                message,
                repairable,
            ),
            strict=True,
        ):
            cols[name].append(value)
    yield _to_batch(cols, FINDINGS_SCHEMA)


def segment_rows(task: Task, index_interval_bytes: int = 4096) -> Iterator[pa.RecordBatch]:
    scan = scan_segment(
        Segment(task.path, whole_indexes=True), index_interval_bytes=index_interval_bytes
    )
    row = {
        "topic": task.topic,
        "partition": task.partition,
        "file": task.path,
        "base_offset": scan.base_offset,
        "size": scan.size,
        "valid_bytes": scan.valid_bytes,
        "batches": scan.batches,
        "first_offset": scan.first_offset,
        "last_offset": scan.last_offset,
        "max_timestamp": scan.max_timestamp,
        "status": "corrupt" if scan.corrupt else "ok",
        "offset_index_status": scan.offset_index.status if scan.offset_index else None,
        "time_index_status": scan.time_index.status if scan.time_index else None,
    }
    yield _to_batch({k: [row[k]] for k in SEGMENTS_SCHEMA.names}, SEGMENTS_SCHEMA)
