"""The `kseg` command line: options -> one library call -> kseg.render -> exit status.

No logic lives here: the library returns events and a run (its ``outcome``), kseg.render shows
the events in the chosen format and returns what the run found, and kseg.exitcodes.exit_status
turns that into the exit status. Options are declared once in kseg.cli_options; `kseg spark ...`
is kseg.cli_spark; the process (signals, errors that end a command) is kseg.entry.
"""

from __future__ import annotations

from pathlib import Path

from kseg import cli_options as o
from kseg.cli_offsets import register_offsets
from kseg.cli_registry import command, group
from kseg.cli_stats import register as register_stats
from kseg.exitcodes import exit_status, help_text, track
from kseg.outcome import BadOption

group(
    (),
    "Inspect, verify and repair Apache Kafka log segments on disk.\n\n"
    "PATH arguments: a file, a partition dir (<topic>-<n>), a log.dirs root, or a directory of "
    "roots (one per broker); a PATH with no Kafka partition, segment or data file is a usage "
    "error. Data goes to stdout, messages to stderr.\n\n"
    "Example:\n\n\b\n  kseg verify /var/lib/kafka/data && systemctl start kafka\n\n"
    + help_text("\b\n"),
)
group(
    ("index",),
    "Rebuild or check `.index`/`.timeindex`/`.txnindex` files offline, exactly as Kafka's recovery writes them.",
)


def _selection(paths: list[Path], topic: str | None, partition: int | None):
    """Resolve the inputs up front (kseg.storage.tree): a wrong path fails before any work."""
    from kseg.storage.tree import resolve

    return resolve(paths, topic, partition, logs_only=True)


def _kafka_version(text: str | None):
    """--kafka-version as the library's KafkaVersion (a bad value: a usage error, exit 16)."""
    from kseg.format.kafka_version import parse_kafka_version

    try:
        return parse_kafka_version(text)
    except ValueError as exc:
        raise BadOption(str(exc), "--kafka-version") from None


def _log_bytes(targets) -> int:
    """The progress bar's total (only when a bar is drawn: kseg.index.run is not
    imported otherwise)."""
    from kseg.index.run import log_bytes

    return log_bytes(targets)


def _finish(command: str, run, events, *args, **kw) -> int:
    """kseg.render.finish, its outcome as the exit status (a summary's as its exit_code)."""
    from kseg.exitcodes import with_exit_codes
    from kseg.render import finish

    track(run)
    return exit_status(finish(command, run, with_exit_codes(events), *args, **kw))


@command("dump")
def dump(
    paths: o.AnyPathsArg,
    fmt: o.FormatOpt = o.OutputFormat.text,
    payload: o.PayloadOpt = o.Payload.auto,
    batches_only: o.BatchesOnlyOpt = False,
    decoder: o.DecoderOpt = o.Decoder.auto,
    skip_record_metadata: o.SkipRecordMetadataOpt = False,
    topic: o.TopicOpt = None,
    partition: o.PartitionOpt = None,
    from_offset: o.FromOffsetOpt = None,
    to_offset: o.ToOffsetOpt = None,
    from_time: o.FromTimeOpt = None,
    to_time: o.ToTimeOpt = None,
    limit: o.LimitOpt = None,
    max_bytes: o.MaxBytesOpt = None,
    key: o.KeyOpt = None,
    value: o.ValueOpt = None,
    header: o.HeaderOpt = None,
    key_eq: o.KeyEqOpt = None,
    value_contains: o.ValueContainsOpt = None,
    count: o.CountOpt = False,
    format_string: o.FormatStringOpt = None,
    quiet: o.QuietOpt = False,
) -> int:
    """Decode every file of a Kafka data directory (read-only).

    Exit codes: 0 decoded cleanly; 4 something in the input was invalid (reported as an error
    line/object, decoding continued where it safely could); 8 a file could not be read; 16 usage.

    Example:

    \b
      kseg dump /var/lib/kafka/data/orders-0 --from-time -30m --limit 20
      kseg dump /var/lib/kafka/data --topic '^orders$' -f json | jq -c 'select(.type=="record")'
      kseg dump /var/lib/kafka/data --topic '^orders$' --key-eq order-42 --from-time -1d
    """
    from kseg.dump.dump import DumpOptions, search_options
    from kseg.dump.run import DumpRun
    from kseg.render import finish_count, finish_dump, finish_format_string
    from kseg.seek.timeexpr import parse_option_time

    record_filter, parts = search_options(key, value, header, key_eq, value_contains, format_string)
    opts = DumpOptions(
        batches_only=batches_only,
        payload=payload.value,
        from_offset=from_offset,
        to_offset=to_offset,
        from_time=parse_option_time(from_time, "--from-time"),
        to_time=parse_option_time(to_time, "--to-time"),
        limit=limit,
        max_bytes=max_bytes,
        topic=topic,
        partition=partition,
        decoder={"auto": None, "none": "none"}.get(decoder.value, decoder.value),
        skip_record_metadata=skip_record_metadata,
        json_lines=fmt is o.OutputFormat.json,
        record_filter=record_filter,
        count=count,
        format_string=parts,
    )
    run = DumpRun(paths, opts)
    track(run)
    if parts is not None:
        return exit_status(finish_format_string(run))
    if count:
        return exit_status(finish_count(run, fmt.value))
    return exit_status(finish_dump(run, fmt.value, quiet))


@command("index", "rebuild")
def index_rebuild(
    paths: o.SegmentPathsArg,
    index_interval_bytes: o.IntervalOpt = 4096,
    kafka_version: o.KafkaVersionOpt = None,
    preallocate: o.PreallocateOpt = False,
    segment_index_bytes: o.SegmentIndexBytesOpt = 10 * 1024 * 1024,
    dry_run: o.DryRunOpt = False,
    backup: o.BackupOpt = None,
    force: o.RebuildForceOpt = False,
    topic: o.TopicOpt = None,
    partition: o.PartitionOpt = None,
    fmt: o.FormatOpt = o.OutputFormat.text,
    quiet: o.QuietOpt = False,
) -> int:
    """Write each segment's indexes exactly as Kafka's LogSegment.recover would (temp file, fsync, rename).

    Stops at the first invalid batch like recovery and reports it (the log is not truncated: that
    is `verify --repair`). Exit codes: 0 done, 4 corruption found (indexes cover the valid prefix),
    8 operational error (broker lock held, write failed), 16 usage.

    Example:

    \b
      kseg index rebuild /var/lib/kafka/data/orders-0 --dry-run
      kseg index rebuild /var/lib/kafka/data --topic '^orders$' --backup /tmp/old-indexes
    """
    from kseg.index.run import RebuildRun, log_bytes

    version = _kafka_version(kafka_version)
    run = RebuildRun(
        _selection(paths, topic, partition),
        kafka_version=version,
        index_interval_bytes=index_interval_bytes,
        preallocate=preallocate,
        segment_index_bytes=segment_index_bytes,
        dry_run=dry_run,
        backup=backup,
        force=force,
    )
    total = lambda: log_bytes(run.targets)  # noqa: E731
    return _finish("index rebuild", run, run.events(), fmt.value, bar_total=total, quiet=quiet)


@command("index", "check")
def index_check(
    paths: o.SegmentPathsArg,
    index_interval_bytes: o.IntervalOpt = 4096,
    kafka_version: o.KafkaVersionOpt = None,
    topic: o.TopicOpt = None,
    partition: o.PartitionOpt = None,
    fmt: o.FormatOpt = o.OutputFormat.text,
) -> int:
    """Compare existing indexes with a rebuild: identical, equivalent (different bytes, every lookup
    still correct under Kafka's rules, e.g. live multi-batch appends or follower-written entries),
    wrong (a lookup would go wrong, or sanity fails) or missing.

    Exit codes: 0 no wrong index, 4 a wrong index or a corrupt log, 8 unreadable, 16 usage.

    Example:

    \b
      kseg index check /var/lib/kafka/data --index-interval-bytes 4096
    """
    from kseg.index.run import CheckRun

    version = _kafka_version(kafka_version)
    sel = _selection(paths, topic, partition)
    run = CheckRun(sel, index_interval_bytes=index_interval_bytes, kafka_version=version)
    return _finish("index check", run, run.events(), fmt.value)


VERIFY_HELP = """Check CRCs, structure, offsets, indexes and checkpoint files; with --repair, fix them
the way Kafka's recovery would, keeping every removed byte.

Exit codes (a bitmask, OR-ed over everything checked):
0 clean (warnings and infos: Kafka starts and loses nothing); 1 problems found and
all repaired; 4 errors left unrepaired; 8 operational error (unreadable file, broker holds
the lock: that log dir is then only verified, read-only, and its findings reported; repair
failed); 16 usage error; 32 interrupted.

Example:

\b
  kseg verify /var/lib/kafka/data --deep
  kseg verify /var/lib/kafka/data --repair --dry-run
"""


@command("verify", help=VERIFY_HELP)
def verify(
    paths: o.SegmentPathsArg,
    repair: o.RepairOpt = False,
    dry_run: o.RepairDryRunOpt = False,
    deep: o.DeepOpt = False,
    keep_later_segments: o.KeepLaterOpt = False,
    quarantine: o.QuarantineOpt = None,
    force: o.RepairForceOpt = False,
    index_interval_bytes: o.IntervalOpt = 4096,
    kafka_version: o.KafkaVersionOpt = None,
    topic: o.TopicOpt = None,
    partition: o.PartitionOpt = None,
    fmt: o.FormatOpt = o.OutputFormat.text,
    problems_only: o.ProblemsOnlyOpt = False,
    quiet: o.QuietOpt = False,
) -> int:
    from kseg.interrupt import Interrupted
    from kseg.render import problems_only as without_ok
    from kseg.verify.run import VerifyOptions, VerifyRun

    if dry_run and not repair:
        raise BadOption("--dry-run goes with --repair", "--dry-run")
    opts = VerifyOptions(
        deep=deep,
        repair=repair,
        dry_run=dry_run,
        keep_later_segments=keep_later_segments,
        quarantine=quarantine,
        force=force,
        index_interval_bytes=index_interval_bytes,
        kafka_version=_kafka_version(kafka_version),
        topic=topic,
        partition=partition,
    )
    sel = _selection(paths, topic, partition)  # a wrong path fails up front
    run = VerifyRun(opts)
    events = without_ok(run.events(sel)) if problems_only else run.events(sel)
    try:
        return _finish(
            "verify",
            run,
            events,
            fmt.value,
            bar_total=lambda: _log_bytes(run.targets(sel)),
            quiet=quiet,
        )
    except Interrupted as exc:
        exc.code |= exit_status(run)  # an interrupt keeps what was found (the bitmask)
        raise


@command("restore")
def restore(
    quarantine_dir: o.QuarantineDirArg,
    force: o.RestoreForceOpt = False,
    base_dir: o.BaseDirOpt = None,
    fmt: o.FormatOpt = o.OutputFormat.text,
) -> int:
    """Undo a repair: truncated bytes appended back, quarantined segments and old index files put back.

    Everything is checked before anything changes: each file is as the repair left it (or already
    restored), each quarantined file matches the sha256 in the manifest, free space suffices.
    Exit codes: 0 restored, 8 refused or failed (the partition changed since the repair, a
    manifest or quarantined file does not check out, lock held, no space), 16 usage.

    Example:

    \b
      kseg restore /var/lib/kafka/kseg-quarantine/data/20261122T093000Z-orders-3
    """
    from kseg.repair.restore import RestoreRun

    run = RestoreRun(quarantine_dir, force=force, base_dir=base_dir)
    return _finish("restore", run, run.events(), fmt.value)


@command("seek")
def seek(
    paths: o.PartitionPathsArg,
    time_: o.TimeOpt = None,
    offset: o.OffsetOpt = None,
    now: o.NowOpt = None,
    data_only: o.DataOnlyOpt = False,
    topic: o.TopicOpt = None,
    partition: o.PartitionOpt = None,
    fmt: o.SeekFormatOpt = o.SeekFormat.text,
) -> int:
    """Offset for a timestamp, exactly as the broker's ListOffsets answers it; or segment and
    byte position for an offset. Reads index tails, one time index, one offset index and a few batches.

    reset-csv prints `topic,partition,offset` for `kafka-consumer-groups.sh --reset-offsets --from-file`;
    a partition with no record at or after the time gets its log end offset, as
    kafka-consumer-groups' --to-datetime does.

    Exit codes: 0 answered (even "no offset"), 4 a partition could not be answered because of
    corruption, 8 unreadable input, 16 usage (also: no partition directory to answer from).

    Example:

    \b
      kseg seek /var/lib/kafka/data --topic '^orders$' --time 2026-11-21T09:30:00Z -f reset-csv > reset.csv
      kseg seek /var/lib/kafka/data/orders-0 --offset 123456
    """
    from kseg.seek.run import SeekRun, parse_target
    from kseg.seek.timeexpr import parse_option_time

    if (time_ is None) == (offset is None):
        raise BadOption("give exactly one of --time and --offset", "--time/--offset")
    target = None
    if time_ is not None:  # a bad --now is a usage error even when the target does not use it
        target = parse_target(time_, parse_option_time(now, "--now"))
    sel = _selection(paths, topic, partition)
    csv = fmt is o.SeekFormat.reset_csv
    if csv and target is None:
        raise BadOption("reset-csv goes with --time", "--format")
    run = SeekRun(
        sel, target=target, offset=offset, data_only=data_only, fill_latest=csv, topic=topic
    )
    return _finish("seek", run, run.reset_events() if csv else run.events(), fmt.value)


@command("demo")
def demo(
    directory: o.DemoDirArg = Path("kseg-demo"), fmt: o.FormatOpt = o.OutputFormat.text
) -> int:
    """Write a small example data directory (every format and codec) and dump part of it.

    DIRECTORY must be new, empty, or an earlier demo (dumped as it is); any other directory is
    refused (exit 16).

    Example:

    \b
      kseg demo /tmp/kseg-demo && kseg verify /tmp/kseg-demo
    """
    from kseg.dump.dump import DumpOptions
    from kseg.dump.run import DumpRun
    from kseg.fixtures.demo import write_demo
    from kseg.render import finish_dump, streams

    for message in write_demo(directory):
        streams.say(message)
    streams.say(f"$ kseg dump {directory}/upgrade-0 --limit 12")
    opts = DumpOptions(limit=12, json_lines=fmt is o.OutputFormat.json)
    run = DumpRun([directory / "upgrade-0"], opts)
    track(run)
    return exit_status(finish_dump(run, fmt.value))


register_offsets()  # kseg.cli_offsets: `kseg offsets`
register_stats(_selection)  # `kseg stats` (kseg.cli_stats: cli.py stays a veneer)


def main() -> None:
    """The process around the commands (kseg.entry): every outcome through exit_status."""
    from kseg.entry import run_app

    run_app()


if __name__ == "__main__":
    main()
