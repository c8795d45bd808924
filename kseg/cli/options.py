"""The command line's options, each declared once (sqlite-utils' ``output_options`` idea) as a
typer ``Annotated`` type: the commands in kseg.cli.commands take them by name."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

# the choices are declared in kseg.cli.choices; commands name them through this module
from kseg.cli.choices import Decoder as Decoder
from kseg.cli.choices import Isolation as Isolation
from kseg.cli.choices import OutputFormat as OutputFormat
from kseg.cli.choices import Payload as Payload
from kseg.cli.choices import SeekFormat as SeekFormat
from kseg.cli.choices import StatsBy as StatsBy
from kseg.cli.choices import StatsFormat as StatsFormat


def _paths(help: str):
    # readable=False: kseg reports an unreadable path itself (exit 8), not as a usage error
    return typer.Argument(help=help, show_default=False, readable=False, metavar="PATH")


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
    typer.Argument(
        help="log.dirs roots, trees of them, or partition dirs (paths or URIs).",
        show_default=False,
        metavar="PATH",
    ),
]
TopicOpt = Annotated[
    str | None, typer.Option(help="With a log.dirs root: topics matching this regex (RE2 syntax).")
]
PartitionOpt = Annotated[
    int | None, typer.Option(min=0, help="With a log.dirs root: only this partition number.")
]
QuietOpt = Annotated[
    bool,
    typer.Option(
        "--quiet", "-q", help="No progress bar (it is drawn only when stderr is a terminal)."
    ),
]
FormatOpt = Annotated[
    OutputFormat, typer.Option("--format", "-f", help="text, json (JSON Lines) or table.")
]
IntervalOpt = Annotated[
    int,
    typer.Option(
        "--index-interval-bytes",
        min=0,
        help="The topic's index.interval.bytes (kseg cannot know it; Kafka's default is 4096).",
    ),
]
KafkaVersionOpt = Annotated[
    str | None,
    typer.Option(
        "--kafka-version",
        metavar="X.Y",
        help="The Kafka release that wrote the data (0.10 ... 4.1; default: the newest): "
        "its recovery and index rules are applied.",
        show_default=False,
    ),
]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Report what would change; write nothing.")
]
FromTimeOpt = Annotated[
    str | None, typer.Option(help="Records with timestamp >= this (ms, ISO-8601, or -30m).")
]
ToTimeOpt = Annotated[str | None, typer.Option(help="Records with timestamp <= this.")]
MasterOpt = Annotated[
    str, typer.Option(help="Spark master (default local[*]; under spark-submit, its own).")
]
ConfOpt = Annotated[list[str] | None, typer.Option("--conf", help="Spark config k=v (repeatable).")]

# --- dump -----------------------------------------------------------------------------------

BatchesOnlyOpt = Annotated[
    bool, typer.Option("--batches-only", help="Batch headers only; no record decoding.")
]
DecoderOpt = Annotated[
    Decoder,
    typer.Option(
        help="Decode internal-topic records (auto: by topic name; KRaft snapshots and "
        "bootstrap.checkpoint as cluster-metadata)."
    ),
]
SkipRecordMetadataOpt = Annotated[
    bool,
    typer.Option(
        "--skip-record-metadata",
        help="Records as offset and decoded payload only (no batch lines), like kafka-dump-log.",
    ),
]
FromOffsetOpt = Annotated[
    int | None,
    typer.Option(min=0, help="First offset to show (the offset index is used to jump)."),
]
ToOffsetOpt = Annotated[int | None, typer.Option(min=0, help="Last offset to show.")]
LimitOpt = Annotated[
    int | None,
    typer.Option(min=0, help="Stop after this many records (batches with --batches-only)."),
]
MaxBytesOpt = Annotated[
    int | None,
    typer.Option(min=0, help="Read only whole batches within the first N bytes of each log."),
]

KeyOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--key",
        help="Only records whose key matches this regex (RE2 syntax on bytes, searched in linear time; repeatable: all must match).",
        show_default=False,
    ),
]
ValueOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--value",
        help="Only records whose value matches this regex (RE2 syntax; repeatable).",
        show_default=False,
    ),
]
HeaderOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--header",
        help="NAME or NAME=REGEX: only records with a header NAME (whose value matches REGEX); repeatable.",
        show_default=False,
    ),
]
KeyEqOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--key-eq", help="Only records whose key is exactly these bytes.", show_default=False
    ),
]
ValueContainsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--value-contains",
        help="Only records whose value contains these bytes (repeatable).",
        show_default=False,
    ),
]
ResyncOpt = Annotated[
    bool,
    typer.Option(
        "--resync",
        help="Go on past damage: skip each unreadable byte range (reported, with the offsets it"
        " held) and show the intact batches after it; batches whose CRC fails are skipped too.",
    ),
]
StatsResyncOpt = Annotated[
    bool,
    typer.Option(
        "--resync",
        help="Go on past damage: skip each unreadable byte range (a failure line naming it and"
        " the offsets it held) and count the intact batches after it.",
    ),
]
IsolationOpt = Annotated[
    Isolation,
    typer.Option(
        help="read_committed: only what a read_committed consumer gets (no aborted transaction,"
        " no control batch, nothing at or past the last stable offset).",
    ),
]
CountOpt = Annotated[
    bool,
    typer.Option(
        "--count", help="Print only the number of (matching) records per partition and a total."
    ),
]
FormatStringOpt = Annotated[
    str | None,
    typer.Option(
        "--format-string",
        help="Print each (matching) record with kcat's -f tokens: %t %p %o %k %s %K %S %T %h %R ...",
        show_default=False,
    ),
]

# --- index rebuild --------------------------------------------------------------------------

PreallocateOpt = Annotated[
    bool, typer.Option(help="Zero-pad the active segment's indexes like a running broker.")
]
SegmentIndexBytesOpt = Annotated[
    int, typer.Option(min=0, help="segment.index.bytes, the preallocated size.")
]
BackupOpt = Annotated[
    Path | None, typer.Option(help="Copy replaced index files into this directory first.")
]
RebuildForceOpt = Annotated[
    bool, typer.Option(help="Run even though a broker holds <log.dir>/.lock.")
]

# --- verify ---------------------------------------------------------------------------------

RepairOpt = Annotated[
    bool,
    typer.Option(
        help="Truncate at the first invalid batch, quarantine what follows, rebuild indexes."
    ),
]
RepairDryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="With --repair: print the plan, change nothing.")
]
DeepOpt = Annotated[
    bool,
    typer.Option(help="Also decode every record (decompressing): lengths, varints, offsets."),
]
KeepLaterOpt = Annotated[
    bool, typer.Option(help="Leave segments after a truncation in place (Kafka deletes them).")
]
QuarantineOpt = Annotated[
    Path | None,
    typer.Option(
        help="Where removed bytes go (default: <log.dir>/../kseg-quarantine/<log.dir name>/)."
    ),
]
RepairForceOpt = Annotated[
    bool, typer.Option(help="Repair even though a broker holds <log.dir>/.lock.")
]
ProblemsOnlyOpt = Annotated[
    bool,
    typer.Option("--problems-only", help="Leave out the segments that are ok (findings stay)."),
]

# --- restore --------------------------------------------------------------------------------

QuarantineDirArg = Annotated[
    Path,
    typer.Argument(
        help="A partition's quarantine dir (holds manifest.json) or a run's dir (one per "
        "partition), as written by verify --repair.",
        metavar="QUARANTINE_DIR",
    ),
]
RestoreForceOpt = Annotated[
    bool, typer.Option(help="Restore even though a broker holds <log.dir>/.lock.")
]
BaseDirOpt = Annotated[
    Path | None,
    typer.Option(
        help="For a manifest written by an older kseg with relative paths: the directory "
        "the repair was run from."
    ),
]

# --- seek -----------------------------------------------------------------------------------

TimeOpt = Annotated[
    str | None,
    typer.Option(
        "--time",
        help="Epoch ms, now, ISO-8601 (2026-11-21T09:30:00.000, zone Z/+09:00; none: UTC), "
        "a duration before now (PT30M, P1DT2H), relative (-30m, -2h, -1d), "
        "or latest/-1, earliest/-2, max-timestamp/-3.",
    ),
]
OffsetOpt = Annotated[
    int | None,
    typer.Option("--offset", min=0, help="Where does this offset live? (segment and byte)"),
]
NowOpt = Annotated[
    str | None, typer.Option(help="What relative times count from (default: the clock).")
]
DataOnlyOpt = Annotated[
    bool,
    typer.Option("--data-only", help="Answer data records only, never a transaction marker."),
]
SeekFormatOpt = Annotated[
    SeekFormat,
    typer.Option(
        "--format", "-f", help="text, json, table, or reset-csv (topic,partition,offset)."
    ),
]

# --- offsets --------------------------------------------------------------------------------
GroupOpt = Annotated[
    str | None, typer.Option("--group", "-g", help="The consumer group whose offsets to show.")
]
ListGroupsOpt = Annotated[
    bool, typer.Option("--list", help="List every group (type, state, members, last commit).")
]
AtOpt = Annotated[
    str | None,
    typer.Option(
        "--at",
        help="What was committed as of this time (as --time of seek: epoch ms, ISO-8601, "
        "-30m, PT30M, now); default: everything in the log.",
    ),
]
RetentionOpt = Annotated[
    str,
    typer.Option(
        help="offsets.retention.minutes of the cluster, for expiry (7d, 24h, 90m, P7D, ms)."
    ),
]
LagOpt = Annotated[
    bool,
    typer.Option("--lag", help="Add each partition's log end offset at --at and the lag."),
]

# --- stats ----------------------------------------------------------------------------------

StatsFormatOpt = Annotated[
    StatsFormat,
    typer.Option("--format", "-f", help="text, json (JSON Lines), table, or csv (one header row)."),
]
StatsByOpt = Annotated[
    StatsBy,
    typer.Option("--by", help="partition, or hour: also one row per partition and UTC hour."),
]
UncompressedOpt = Annotated[
    bool,
    typer.Option(
        "--uncompressed",
        help="Also decompress every compressed batch (bounded) for uncompressed bytes and the "
        "compression ratio.",
    ),
]
PlotOpt = Annotated[
    Path | None,
    typer.Option(
        "--plot",
        help="Also draw a timeline per partition and per-topic size bars into FILE (.png or "
        ".svg; needs pip install 'kseg[plot]').",
        metavar="FILE",
        show_default=False,
    ),
]

# --- demo -----------------------------------------------------------------------------------

DemoDirArg = Annotated[
    Path, typer.Argument(help="Where to write the demo tree.", metavar="DIRECTORY")
]

# --- txn ------------------------------------------------------------------------------------
TxnAtOpt = Annotated[str | None, typer.Option("--at", help="As of this time (as --at of offsets).")]
MaxTxnTimeoutOpt = Annotated[
    int,
    typer.Option(
        "--max-transaction-timeout",
        min=0,
        help="Minutes an open transaction may stay idle "
        "before it is judged (find-hanging's option and default).",
    ),
]
ProducersOpt = Annotated[bool, typer.Option("--producers", help="Also every producer's state.")]
BootstrapOpt = Annotated[
    str | None, typer.Option(help="host:port put into the abort commands printed.")
]

# --- replicas -------------------------------------------------------------------------------
RootPathsArg = Annotated[
    list[Path],
    _paths("A directory of broker roots, or several log.dirs roots (one per replica)."),
]
LeaderOpt = Annotated[
    Path | None,
    typer.Option(
        "--leader",
        metavar="ROOT",
        help="The root whose replica Kafka keeps (default: named by a rule: the cluster "
        "metadata's leader, else the latest leader epoch).",
        show_default=False,
    ),
]
ExportLostOpt = Annotated[
    Path | None,
    typer.Option(
        "--export-lost",
        metavar="DIR",
        help="Write the records each losing replica loses into DIR/<root name>/: a partition dir "
        "(re-indexed), JSON Lines, and Parquet when pyarrow is installed.",
        show_default=False,
    ),
]
