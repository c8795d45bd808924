"""CSV output. `kseg seek -f reset-csv`: ``topic,partition,offset`` rows, the input of
``kafka-consumer-groups.sh --reset-offsets --from-file`` (exactly three columns, no header).
`kseg stats -f csv` and `kseg txn -f csv`: one header row, then one row per event (``type``
first; a field a row's type lacks is empty)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import BinaryIO


def write_reset_csv(events: Iterable[dict], out: BinaryIO) -> Iterator[dict]:
    """One row per ``reset`` event (kseg.seek.run.SeekRun.reset_events)."""
    for ev in events:
        if ev["type"] == "reset":
            out.write(f"{ev['topic']},{ev['partition']},{ev['offset']}\n".encode())
        yield ev


STATS_COLUMNS = (
    "type",
    "topic",
    "partition",
    "log_dir",
    "hour",
    "partitions",
    "records",
    "batches",
    "bytes",
    "uncompressed_bytes",
    "compression_ratio",
    "codecs",
    "codec_shares",
    "first_offset",
    "last_offset",
    "min_base_timestamp",
    "max_timestamp",
    "producers",
    "transactional_share",
    "control_share",
    "segments",
    "segment_bytes",
    "index_bytes",
    "log_start_offset",
    "errors",
)


TXN_COLUMNS = (
    "type",
    "topic",
    "partition",
    "log_dir",
    "log_start_offset",
    "log_end_offset",
    "last_stable_offset",
    "held_since",
    "held_by",
    "open",
    "unjudged",
    "committed",
    "aborted",
    "empty",
    "producer_id",
    "producer_epoch",
    "coordinator_epoch",
    "first_offset",
    "first_timestamp",
    "last_offset",
    "last_timestamp",
    "records",
    "bytes",
    "file",
    "age_ms",
    "idle_ms",
    "transactional_id",
    "coordinator_state",
    "timeout_ms",
    "status",
    "hanging",
    "hanging_rule",
    "abort_command",
    "last_sequence",
    "current_txn_start_offset",
    "partitions",
    "judged_at",
    "max_transaction_timeout_ms",
)


def _csv_cell(key: str, v: object) -> str:
    if v is None:
        return ""
    if type(v) is bool:
        return "true" if v else "false"
    if key == "codecs":
        return ";".join(v)  # type: ignore[arg-type]
    if key == "codec_shares":
        return ";".join(f"{c}={s}" for c, s in v.items())  # type: ignore[union-attr]
    return str(v)


def write_stats_csv(
    events: Iterable[dict], out: BinaryIO, columns: tuple[str, ...] = STATS_COLUMNS
) -> Iterator[dict]:
    """`kseg stats` rows (partition_stats, hour_stats, topic_stats, root_stats) under one
    header (``columns``: `kseg txn`'s are TXN_COLUMNS); a field a row type lacks is empty.
    RFC 4180 quoting (a topic may hold a comma? no, but a log dir path may)."""
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    out.write(buf.getvalue().encode())
    buf.seek(0)
    buf.truncate()
    for ev in events:
        writer.writerow([_csv_cell(k, ev.get(k)) for k in columns])
        out.write(buf.getvalue().encode())
        buf.seek(0)
        buf.truncate()
        yield ev
