"""`kseg index rebuild` and `kseg index check` (kseg.index.run)."""

from kseg.cli import options as o
from kseg.cli.exit import exit_status, track, with_exit_codes
from kseg.cli.inputs import parsed_kafka_version, selection
from kseg.cli.jobs_option import JobsOpt


def rebuild(
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
    jobs: JobsOpt = None,
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
    from kseg.index.run import RebuildRun
    from kseg.render import finish
    from kseg.storage.tree import log_bytes

    version = parsed_kafka_version(kafka_version)
    run = RebuildRun(
        selection(paths, topic, partition),
        kafka_version=version,
        index_interval_bytes=index_interval_bytes,
        preallocate=preallocate,
        segment_index_bytes=segment_index_bytes,
        dry_run=dry_run,
        backup=backup,
        force=force,
        jobs=jobs,
    )
    track(run)
    total = lambda: log_bytes(run.targets)  # noqa: E731
    return exit_status(
        finish(
            "index rebuild",
            run,
            with_exit_codes(run.events()),
            fmt.value,
            bar_total=total,
            quiet=quiet,
        )
    )


def check(
    paths: o.SegmentPathsArg,
    index_interval_bytes: o.IntervalOpt = 4096,
    kafka_version: o.KafkaVersionOpt = None,
    topic: o.TopicOpt = None,
    partition: o.PartitionOpt = None,
    fmt: o.FormatOpt = o.OutputFormat.text,
    jobs: JobsOpt = None,
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
    from kseg.render import finish

    version = parsed_kafka_version(kafka_version)
    sel = selection(paths, topic, partition)
    run = CheckRun(sel, index_interval_bytes=index_interval_bytes, kafka_version=version, jobs=jobs)
    track(run)
    return exit_status(finish("index check", run, with_exit_codes(run.events()), fmt.value))
