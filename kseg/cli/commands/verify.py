"""`kseg verify` (kseg.verify.run: checks; with --repair kseg.repair.run: the repair too) and `kseg restore`, which
undoes a repair (kseg.repair.restore)."""

from kseg.cli import options as o
from kseg.cli.exit import exit_status, track, with_exit_codes
from kseg.cli.inputs import parsed_kafka_version, selection
from kseg.cli.jobs_option import JobsOpt
from kseg.outcome import BadOption

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
    jobs: JobsOpt = None,
) -> int:
    from kseg.cli.signals import Interrupted
    from kseg.render import finish
    from kseg.render import problems_only as without_ok
    from kseg.storage.tree import log_bytes
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
        kafka_version=parsed_kafka_version(kafka_version),
        topic=topic,
        partition=partition,
        jobs=jobs,
    )
    sel = selection(paths, topic, partition)  # a wrong path fails up front
    if repair:
        from kseg.repair.run import RepairRun

        run = RepairRun(opts)
    else:
        run = VerifyRun(opts)
    track(run)
    events = without_ok(run.events(sel)) if problems_only else run.events(sel)
    try:
        return exit_status(
            finish(
                "verify",
                run,
                with_exit_codes(events),
                fmt.value,
                bar_total=lambda: log_bytes(run.targets(sel)),
                quiet=quiet,
            )
        )
    except Interrupted as exc:
        exc.outcome |= run.outcome  # an interrupt keeps what was found (the bitmask)
        raise


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
    from kseg.render import finish
    from kseg.repair.restore import RestoreRun

    run = RestoreRun(quarantine_dir, force=force, base_dir=base_dir)
    track(run)
    return exit_status(finish("restore", run, with_exit_codes(run.events()), fmt.value))
