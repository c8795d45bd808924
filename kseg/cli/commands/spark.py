"""`kseg spark ...`: the same shape as the other commands (options -> one job -> kseg.render ->
exit status), on Apache Spark. The inputs are checked before a JVM starts (seconds, not a minute,
for a wrong path); the jobs are kseg.spark.jobs. Its own typer app: kseg.cli.app adds it only
when a command line needs it."""

import os
import sys
from contextlib import contextmanager
from typing import Annotated

import typer

from kseg.cli import signals
from kseg.cli.command import Command
from kseg.cli.exit import exit_status, track, with_exit_codes
from kseg.cli.options import (
    ConfOpt,
    FormatOpt,
    IntervalOpt,
    Isolation,
    IsolationOpt,
    MasterOpt,
    OutputFormat,
    PartitionOpt,
    QuietOpt,
    SparkPathsArg,
    TopicOpt,
    ToTimeOpt,
)
from kseg.cli.spark_options import (
    ExportFormatOpt,
    ExportFromTimeOpt,
    ExportWriterOpt,
    FindingsOutOpt,
    HeadersOpt,
    OutOpt,
    PartitionByOpt,
    PerHourOpt,
    SparkDeepOpt,
    SparkPayloadOpt,
    SparkSchemasOpt,
    SparkValueStructOpt,
)
from kseg.outcome import BadOption, Outcome
from kseg.render import streams

app = typer.Typer(
    name="spark",
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Read, verify and export whole data directories on Apache Spark (pip install "
    "'kseg[spark]').",
)


def _checked(inputs: list[str], topic: str | None, **kw) -> None:
    from kseg.spark.jobs import check_inputs

    for message in check_inputs(inputs, topic, **kw):
        streams.say(message)


def _session(master: str, conf: list[str] | None, quiet: bool):
    from kseg.spark.jobs import parse_conf

    pairs = parse_conf(conf)
    try:
        import pyarrow  # noqa: F401 - the extra's two packages, imported here to say so once
        import pyspark.sql  # noqa: F401

        from kseg.spark import session
    except ImportError as exc:
        raise OSError(
            f"Spark support needs the spark extra: pip install 'kseg[spark]' ({exc})"
        ) from None
    spark = session(None if master == "from-spark-submit" else master, pairs, quiet=quiet)
    signals.install()  # pyspark's SparkContext installed its own SIGINT handler
    return spark


@contextmanager
def _spark_errors():
    """A Spark failure (a failed job, a JVM that did not start) ends the command with one line
    naming its cause and exit 8 (an OSError); KSEG_DEBUG=1 first prints the whole trace, the
    JVM's included. Any other exception passes (a kseg bug stays an internal error)."""
    try:
        yield
    except Exception as exc:
        from kseg.spark.failure import spark_failure

        line = spark_failure(exc)
        if line is None or signals.received():  # an interrupt's consequence: exit 32
            raise
        if os.environ.get("KSEG_DEBUG"):
            import traceback

            traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
            jvm = getattr(exc, "_stackTrace", None)  # pyspark's captured errors keep it apart
            if isinstance(jvm, str) and jvm not in str(exc):
                sys.stderr.write(f"JVM stack trace:\n{jvm.rstrip()}\n")
        if "No module named" in line:
            line += f" (the Python workers run {os.environ.get('PYSPARK_PYTHON', 'python3')})"
        raise OSError(f"Spark failed: {line}") from None


def _check_writer(writer, fmt: str, cols: tuple, out: str, conf) -> None:
    """An --writer that cannot serve this export is a usage mistake found before Spark starts."""
    from kseg.spark.jobs import choose_writer, parse_conf

    codec = parse_conf(conf).get("spark.sql.parquet.compression.codec", "snappy")
    try:
        choose_writer(writer, fmt, cols, str(out), codec)
    except ImportError:  # no pyarrow: _session says what to install
        pass


def _bar(spark, quiet: bool, description: str):
    from kseg.render import progress

    return progress.SparkBar(progress.wanted(quiet), spark, description)


def _finish(command: str, outcome: Outcome, events: list[dict], fmt: str) -> int:
    from kseg.render import finish

    track(outcome)
    return exit_status(finish(command, outcome, with_exit_codes(events), fmt))


@app.command("export", cls=Command)
def spark_export(
    inputs: SparkPathsArg,
    out: OutOpt,
    fmt: ExportFormatOpt = "parquet",
    partition_by: PartitionByOpt = "topic,partition",
    headers: HeadersOpt = True,
    writer: ExportWriterOpt = None,
    topic: TopicOpt = None,
    from_time: ExportFromTimeOpt = None,
    to_time: ToTimeOpt = None,
    master: MasterOpt = "local[*]",
    conf: ConfOpt = None,
    quiet: QuietOpt = False,
    isolation: IsolationOpt = Isolation.read_uncommitted,
    payload: SparkPayloadOpt = "raw",
    schemas: SparkSchemasOpt = None,
    value_struct: SparkValueStructOpt = None,
) -> int:
    """Write the records table (Spark's Kafka source schema) as Parquet or JSON.

    --payload schema adds key_schema_id, value_schema_id, key_json, value_json and
    schema_error: Schema Registry framing decoded by the schemas of the _schemas topic among
    the inputs (or --schemas), as `kseg dump --payload schema` decodes it; --value-struct
    SUBJECT adds value_struct, each Avro value read as the subject's latest schema.

    Example:

    \b
      kseg spark export /data/kafka-logs --out /tmp/records --topic '^orders$'
      kseg spark export /data/kafka-logs --out /tmp/payments --topic '^payments$' --payload schema
    """
    from kseg.seek.timeexpr import parse_option_time
    from kseg.spark import export

    if fmt not in ("parquet", "json"):
        raise BadOption("parquet or json", "--format")
    if payload not in ("raw", "schema"):
        raise BadOption("raw or schema", "--payload")
    if schemas is not None and payload != "schema":
        raise BadOption("--schemas is for --payload schema", "--schemas")
    if value_struct is not None and payload != "schema":
        raise BadOption("--value-struct is for --payload schema", "--value-struct")
    cols = tuple(c for c in partition_by.split(",") if c)
    from_ms = parse_option_time(from_time, "--from-time")
    to_ms = parse_option_time(to_time, "--to-time")
    _checked(inputs, topic, records=True)
    _check_writer(writer, fmt, cols, out, conf)
    unreadable: list[str] = []
    with _spark_errors():
        spark = _session(master, conf, quiet)
        with _bar(spark, quiet, "spark export"):
            n = export(
                spark,
                inputs,
                out,
                fmt=fmt,
                partition_by=cols,
                include_headers=headers,
                writer=writer,
                unreadable=unreadable,
                topic=topic,
                fromTime=from_ms,
                toTime=to_ms,
                # only when asked: today's options (and plans) otherwise
                isolation=None if isolation is Isolation.read_uncommitted else isolation.value,
                payload=None if payload == "raw" else payload,
                schemas=schemas,
                valueStruct=value_struct,
            )
    for message in unreadable:
        streams.say(message)
    skipped = f"; {len(unreadable)} unreadable segments left out" if unreadable else ""
    streams.say(f"wrote {n} records to {out}{skipped}")
    return exit_status(Outcome.UNREADABLE if unreadable else Outcome.OK)


@app.command("verify", cls=Command)
def spark_verify(
    inputs: SparkPathsArg,
    out: FindingsOutOpt = None,
    deep: SparkDeepOpt = False,
    index_interval_bytes: IntervalOpt = 4096,
    topic: TopicOpt = None,
    master: MasterOpt = "local[*]",
    conf: ConfOpt = None,
    fmt: FormatOpt = OutputFormat.text,
    quiet: QuietOpt = False,
) -> int:
    """The checks of `kseg verify` on every partition, in parallel; same findings, same exit codes
    (0 clean, 4 problems, 8 operational error, 16 usage). Read-only: repairs stay a local job.

    Example:

    \b
      kseg spark verify /data/brokers --deep --out /tmp/findings
    """
    from kseg.spark.jobs import verify_events

    _checked(inputs, topic, segments=False)
    with _spark_errors():
        spark = _session(master, conf, quiet)
        with _bar(spark, quiet, "spark verify"):
            events = verify_events(
                spark, inputs, out, topic=topic, deep=deep, indexIntervalBytes=index_interval_bytes
            )
    return _finish("spark verify", events[-1]["outcome"], events, fmt.value)


@app.command("stats", cls=Command)
def spark_stats(
    inputs: SparkPathsArg,
    per_hour: PerHourOpt = False,
    topic: TopicOpt = None,
    master: MasterOpt = "local[*]",
    conf: ConfOpt = None,
    fmt: FormatOpt = OutputFormat.table,
    quiet: QuietOpt = False,
) -> int:
    """Per topic-partition (and hour): records, bytes, codecs and compression ratio, offset and
    timestamp ranges, producers, transactional share.

    Example:

    \b
      kseg spark stats /data/brokers --per-hour -f json
    """
    from kseg.spark.jobs import stats_run

    _checked(inputs, topic)
    with _spark_errors():
        spark = _session(master, conf, quiet)
        with _bar(spark, quiet, "spark stats"):
            events, found = stats_run(spark, inputs, per_hour=per_hour, topic=topic)
    return _finish("spark stats", found, events, fmt.value)


@app.command("replicas", cls=Command)
def spark_replicas(
    inputs: SparkPathsArg,
    leader: Annotated[
        str | None,
        typer.Option(
            "--leader",
            metavar="ROOT",
            help="The root (path or URI) whose replica Kafka keeps (default: named by a rule: "
            "the cluster metadata's leader, else the latest leader epoch).",
            show_default=False,
        ),
    ] = None,
    topic: TopicOpt = None,
    partition: PartitionOpt = None,
    master: MasterOpt = "local[*]",
    conf: ConfOpt = None,
    fmt: FormatOpt = OutputFormat.text,
    quiet: QuietOpt = False,
) -> int:
    """`kseg replicas` over many replicas: per partition held in two or more roots, the first
    offset where the replicas' batches differ, the leader Kafka keeps, the offset each other
    replica truncates to when it rejoins and the records it loses. The same events and exit
    codes (0 consistent, 4 diverged or damaged, 8, 16); each replica is loaded by kseg's own
    function on an executor, the batches are compared in Spark. --export-lost stays local
    (`kseg replicas`). Where the answers can differ: a log whose offsets do not grow batch
    after batch (none Kafka writes) has its lost range and first divergence taken by offset,
    not in log order.

    Example:

    \b
      kseg spark replicas /data/copies --topic '^orders$' -f json
    """
    from kseg.spark.replicas import SparkReplicasRun
    from kseg.storage.uri import as_path

    _checked(inputs, topic)
    # the roots and --leader checked (usage errors) before a JVM starts
    run = SparkReplicasRun(None, inputs, leader=None if leader is None else as_path(leader),
                           topic=topic, partition=partition)  # fmt: skip
    track(run)
    with _spark_errors():
        run.spark = spark = _session(master, conf, quiet)
        with _bar(spark, quiet, "spark replicas"):
            events = list(run.events())
    return _finish("replicas", run.outcome, events, fmt.value)  # the local command's lines
