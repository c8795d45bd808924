"""The command line's options, each declared once (sqlite-utils' ``output_options`` idea): the
commands in kseg.cli, kseg.cli_stats, kseg.cli_offsets and kseg.cli_spark take them by name.

Typer-free on purpose: an ``Opt``/``Arg`` holds exactly what would be passed to typer.Option /
typer.Argument. kseg.cli_typer hands them to typer (help, completion, usage errors) and
kseg.cli_parse reads the same records to parse a common command line without importing typer
(half of a command's start-up time): one source of truth for both."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Any


class Opt:
    """``typer.Option(*decls, **kw)``, kept as data (decls: "--format", "-f"; none: typer
    derives ``--name``, or ``--name/--no-name`` for a bool)."""

    __slots__ = ("decls", "kw")

    def __init__(self, *decls: str, **kw: Any) -> None:
        self.decls = decls
        self.kw = kw


class Arg:
    """``typer.Argument(**kw)``, kept as data."""

    __slots__ = ("kw",)

    def __init__(self, **kw: Any) -> None:
        self.kw = kw


class OutputFormat(str, Enum):
    text = "text"
    json = "json"
    table = "table"


class SeekFormat(str, Enum):
    text = "text"
    json = "json"
    table = "table"
    reset_csv = "reset-csv"


class StatsFormat(str, Enum):
    text = "text"
    json = "json"
    table = "table"
    csv = "csv"


class StatsBy(str, Enum):
    partition = "partition"
    hour = "hour"


class Payload(str, Enum):
    auto = "auto"
    utf8 = "utf8"
    hex = "hex"
    base64 = "base64"
    json = "json"
    none = "none"
    redact = "redact"


class Decoder(str, Enum):
    auto = "auto"
    consumer_offsets = "consumer-offsets"
    transaction_state = "transaction-state"
    share_group_state = "share-group-state"
    cluster_metadata = "cluster-metadata"
    remote_log_metadata = "remote-log-metadata"
    none = "none"


def _paths(help: str) -> Arg:
    # readable=False: kseg reports an unreadable path itself (exit 8), not as a usage error
    return Arg(help=help, show_default=False, readable=False)


# --- shared by several commands ---------------------------------------------------------------

AnyPathsArg = Annotated[
    list[Path], _paths("Files, partition dirs, log.dirs roots or directories of roots.")
]
SegmentPathsArg = Annotated[
    list[Path],
    _paths("Segment .log files, partition dirs, log.dirs roots or directories of roots."),
]
PartitionPathsArg = Annotated[
    list[Path], _paths("Partition dirs, log.dirs roots or directories of roots.")
]
SparkPathsArg = Annotated[
    list[str],
    Arg(
        help="log.dirs roots, trees of them, or partition dirs (paths or URIs).",
        show_default=False,
    ),
]
TopicOpt = Annotated[str | None, Opt(help="With a log.dirs root: topics matching this regex.")]
PartitionOpt = Annotated[
    int | None, Opt(min=0, help="With a log.dirs root: only this partition number.")
]
QuietOpt = Annotated[
    bool,
    Opt("--quiet", "-q", help="No progress bar (it is drawn only when stderr is a terminal)."),
]
FormatOpt = Annotated[OutputFormat, Opt("--format", "-f", help="text, json (JSON Lines) or table.")]
IntervalOpt = Annotated[
    int,
    Opt(
        "--index-interval-bytes",
        min=0,
        help="The topic's index.interval.bytes (kseg cannot know it; Kafka's default is 4096).",
    ),
]
KafkaVersionOpt = Annotated[
    str | None,
    Opt(
        "--kafka-version",
        metavar="X.Y",
        help="The Kafka release that wrote the data (0.10 ... 4.1; default: the newest): "
        "its recovery and index rules are applied.",
        show_default=False,
    ),
]
DryRunOpt = Annotated[bool, Opt("--dry-run", help="Report what would change; write nothing.")]
FromTimeOpt = Annotated[
    str | None, Opt(help="Records with timestamp >= this (ms, ISO-8601, or -30m).")
]
ToTimeOpt = Annotated[str | None, Opt(help="Records with timestamp <= this.")]
MasterOpt = Annotated[
    str, Opt(help="Spark master (default local[*]; under spark-submit, its own).")
]
ConfOpt = Annotated[list[str] | None, Opt("--conf", help="Spark config k=v (repeatable).")]

# --- dump -----------------------------------------------------------------------------------

PayloadOpt = Annotated[Payload, Opt(help="How keys, values and header values are shown.")]
BatchesOnlyOpt = Annotated[
    bool, Opt("--batches-only", help="Batch headers only; no record decoding.")
]
DecoderOpt = Annotated[
    Decoder,
    Opt(
        help="Decode internal-topic records (auto: by topic name; KRaft snapshots and "
        "bootstrap.checkpoint as cluster-metadata)."
    ),
]
SkipRecordMetadataOpt = Annotated[
    bool,
    Opt(
        "--skip-record-metadata",
        help="Records as offset and decoded payload only (no batch lines), like kafka-dump-log.",
    ),
]
FromOffsetOpt = Annotated[
    int | None,
    Opt(min=0, help="First offset to show (the offset index is used to jump)."),
]
ToOffsetOpt = Annotated[int | None, Opt(min=0, help="Last offset to show.")]
LimitOpt = Annotated[
    int | None,
    Opt(min=0, help="Stop after this many records (batches with --batches-only)."),
]
MaxBytesOpt = Annotated[
    int | None,
    Opt(min=0, help="Read only whole batches within the first N bytes of each log."),
]

KeyOpt = Annotated[
    list[str] | None,
    Opt(
        "--key",
        help="Only records whose key matches this Python bytes regex (re.search; repeatable: all must match).",
        show_default=False,
    ),
]
ValueOpt = Annotated[
    list[str] | None,
    Opt(
        "--value",
        help="Only records whose value matches this regex (re.search; repeatable).",
        show_default=False,
    ),
]
HeaderOpt = Annotated[
    list[str] | None,
    Opt(
        "--header",
        help="NAME or NAME=REGEX: only records with a header NAME (whose value matches REGEX); repeatable.",
        show_default=False,
    ),
]
KeyEqOpt = Annotated[
    list[str] | None,
    Opt("--key-eq", help="Only records whose key is exactly these bytes.", show_default=False),
]
ValueContainsOpt = Annotated[
    list[str] | None,
    Opt(
        "--value-contains",
        help="Only records whose value contains these bytes (repeatable).",
        show_default=False,
    ),
]
CountOpt = Annotated[
    bool,
    Opt("--count", help="Print only the number of (matching) records per partition and a total."),
]
FormatStringOpt = Annotated[
    str | None,
    Opt(
        "--format-string",
        help="Print each (matching) record with kcat's -f tokens: %t %p %o %k %s %K %S %T %h %R ...",
        show_default=False,
    ),
]

# --- index rebuild --------------------------------------------------------------------------

PreallocateOpt = Annotated[
    bool, Opt(help="Zero-pad the active segment's indexes like a running broker.")
]
SegmentIndexBytesOpt = Annotated[
    int, Opt(min=0, help="segment.index.bytes, the preallocated size.")
]
BackupOpt = Annotated[Path | None, Opt(help="Copy replaced index files into this directory first.")]
RebuildForceOpt = Annotated[bool, Opt(help="Run even though a broker holds <log.dir>/.lock.")]

# --- verify ---------------------------------------------------------------------------------

RepairOpt = Annotated[
    bool,
    Opt(help="Truncate at the first invalid batch, quarantine what follows, rebuild indexes."),
]
RepairDryRunOpt = Annotated[
    bool, Opt("--dry-run", help="With --repair: print the plan, change nothing.")
]
DeepOpt = Annotated[
    bool,
    Opt(help="Also decode every record (decompressing): lengths, varints, offsets."),
]
KeepLaterOpt = Annotated[
    bool, Opt(help="Leave segments after a truncation in place (Kafka deletes them).")
]
QuarantineOpt = Annotated[
    Path | None,
    Opt(help="Where removed bytes go (default: <log.dir>/../kseg-quarantine/<log.dir name>/)."),
]
RepairForceOpt = Annotated[bool, Opt(help="Repair even though a broker holds <log.dir>/.lock.")]
ProblemsOnlyOpt = Annotated[
    bool,
    Opt("--problems-only", help="Leave out the segments that are ok (findings stay)."),
]

# --- restore --------------------------------------------------------------------------------

QuarantineDirArg = Annotated[
    Path,
    Arg(
        help="A partition's quarantine dir (holds manifest.json) or a run's dir (one per "
        "partition), as written by verify --repair.",
    ),
]
RestoreForceOpt = Annotated[bool, Opt(help="Restore even though a broker holds <log.dir>/.lock.")]
BaseDirOpt = Annotated[
    Path | None,
    Opt(
        help="For a manifest written by an older kseg with relative paths: the directory "
        "the repair was run from."
    ),
]

# --- seek -----------------------------------------------------------------------------------

TimeOpt = Annotated[
    str | None,
    Opt(
        "--time",
        help="Epoch ms, now, ISO-8601 (2026-11-21T09:30:00.000, zone Z/+09:00; none: UTC), "
        "a duration before now (PT30M, P1DT2H), relative (-30m, -2h, -1d), "
        "or latest/-1, earliest/-2, max-timestamp/-3.",
    ),
]
OffsetOpt = Annotated[
    int | None,
    Opt("--offset", min=0, help="Where does this offset live? (segment and byte)"),
]
NowOpt = Annotated[str | None, Opt(help="What relative times count from (default: the clock).")]
DataOnlyOpt = Annotated[
    bool,
    Opt("--data-only", help="Answer data records only, never a transaction marker."),
]
SeekFormatOpt = Annotated[
    SeekFormat,
    Opt("--format", "-f", help="text, json, table, or reset-csv (topic,partition,offset)."),
]

# --- offsets --------------------------------------------------------------------------------
GroupOpt = Annotated[
    str | None, Opt("--group", "-g", help="The consumer group whose offsets to show.")
]
ListGroupsOpt = Annotated[
    bool, Opt("--list", help="List every group (type, state, members, last commit).")
]
AtOpt = Annotated[
    str | None,
    Opt(
        "--at",
        help="What was committed as of this time (as --time of seek: epoch ms, ISO-8601, "
        "-30m, PT30M, now); default: everything in the log.",
    ),
]
RetentionOpt = Annotated[
    str,
    Opt(help="offsets.retention.minutes of the cluster, for expiry (7d, 24h, 90m, P7D, ms)."),
]
LagOpt = Annotated[
    bool,
    Opt("--lag", help="Add each partition's log end offset at --at and the lag."),
]

# --- stats ----------------------------------------------------------------------------------

StatsFormatOpt = Annotated[
    StatsFormat,
    Opt("--format", "-f", help="text, json (JSON Lines), table, or csv (one header row)."),
]
StatsByOpt = Annotated[
    StatsBy,
    Opt("--by", help="partition, or hour: also one row per partition and UTC hour."),
]
UncompressedOpt = Annotated[
    bool,
    Opt(
        "--uncompressed",
        help="Also decompress every compressed batch (bounded) for uncompressed bytes and the "
        "compression ratio.",
    ),
]
PlotOpt = Annotated[
    Path | None,
    Opt(
        "--plot",
        help="Also draw a timeline per partition and per-topic size bars into FILE (.png or "
        ".svg; needs pip install 'kseg[plot]').",
        metavar="FILE",
        show_default=False,
    ),
]

# --- demo -----------------------------------------------------------------------------------

DemoDirArg = Annotated[Path, Arg(help="Where to write the example log.dirs tree.")]

# --- spark ----------------------------------------------------------------------------------

OutOpt = Annotated[str, Opt("--out", help="Output directory (path or URI).")]
FindingsOutOpt = Annotated[
    str | None, Opt("--out", help="Also write the findings table (Parquet) here.")
]
ExportFormatOpt = Annotated[str, Opt("--format", help="parquet or json.")]
PartitionByOpt = Annotated[
    str, Opt(help="Comma list of columns to partition the output by ('' for none).")
]
HeadersOpt = Annotated[bool, Opt(help="Include the headers column.")]
ExportWriterOpt = Annotated[
    str | None,
    Opt(
        "--writer",
        help="arrow (pyarrow on the executors) or spark (Spark's own writer); default: arrow "
        "for Parquet partitioned by topic/partition on a path or URI pyarrow writes, else spark.",
        show_default=False,
    ),
]
ExportFromTimeOpt = Annotated[str | None, Opt(help="Records with timestamp >= this.")]
SparkDeepOpt = Annotated[bool, Opt(help="Also decode every record.")]
PerHourOpt = Annotated[bool, Opt("--per-hour", help="One row per topic-partition and hour.")]
