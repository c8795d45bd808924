"""CSV output. `kseg seek -f reset-csv`: ``topic,partition,offset`` rows, the input of
``kafka-consumer-groups.sh --reset-offsets --from-file`` (exactly three columns, no header).
`kseg stats -f csv`: one header row, then one row per stats event (``type`` first)."""

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


def _csv_cell(key: str, v: object) -> str:
    if v is None:
        return ""
    if key == "codecs":
        return ";".join(v)  # type: ignore[arg-type]
    if key == "codec_shares":
        return ";".join(f"{c}={s}" for c, s in v.items())  # type: ignore[union-attr]
    return str(v)


def write_stats_csv(events: Iterable[dict], out: BinaryIO) -> Iterator[dict]:
    """`kseg stats` rows (partition_stats, hour_stats, topic_stats, root_stats) under one
    header; a field a row type lacks is empty. RFC 4180 quoting (a topic may hold a comma? no,
    but a log dir path may)."""
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(STATS_COLUMNS)
    out.write(buf.getvalue().encode())
    buf.seek(0)
    buf.truncate()
    for ev in events:
        writer.writerow([_csv_cell(k, ev.get(k)) for k in STATS_COLUMNS])
        out.write(buf.getvalue().encode())
        buf.seek(0)
        buf.truncate()
        yield ev
