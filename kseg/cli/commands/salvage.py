"""`kseg salvage` (kseg.salvage.run): every intact record Kafka's recovery throws away, given back."""

from pathlib import Path
from typing import Annotated

import typer

from kseg.cli import options as o
from kseg.cli.exit import exit_status, track, with_exit_codes
from kseg.cli.inputs import parsed_kafka_version, selection
from kseg.cli.jobs_option import JobsOpt

SALVAGE_HELP = """Keep every intact record of a damaged partition: what Kafka's recovery would keep,
plus every intact batch after each damage, written back so that Kafka loads it as it is
(lost offsets become a gap, as compaction makes). Every removed byte is quarantined first;
`kseg restore` undoes it. Says per partition what Kafka would keep, what salvage keeps and
what is lost for good.

Entries reached through an ambiguous resync (they may be a damaged entry's payload) are
reported, not written, unless --keep-ambiguous.

Exit codes: 0 nothing to salvage; 1 salvaged; 4 damage left (--dry-run found damage, entries
of an ambiguous resync left out, or verify still finds errors after the salvage); 8
operational error (unreadable file, a broker holds the lock, salvage failed); 16 usage
error; 32 interrupted.

Example:

\b
  kseg salvage /var/lib/kafka/data/orders-3 --dry-run
  kseg salvage /var/lib/kafka/data/orders-3
  kseg salvage /var/lib/kafka/data --to /mnt/spare/data
  kseg salvage /var/lib/kafka/data/orders-3 --from-quarantine /var/lib/kafka/kseg-quarantine/data
  kseg salvage /var/lib/kafka/data/orders-3.<uuid>-delete --to /mnt/spare/data
"""

ToOpt = Annotated[
    Path | None,
    typer.Option(
        "--to",
        help="Write the salvaged partitions as new partition dirs under this log.dirs root; "
        "the input is left untouched.",
    ),
]
SalvageDryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Print the plan and the cost, change nothing.")
]
FromQuarantineOpt = Annotated[
    Path | None,
    typer.Option(
        "--from-quarantine",
        metavar="QDIR",
        help="Also give back the intact entries an earlier verify --repair or salvage of the "
        "partition quarantined (QDIR: a partition's quarantine dir, a run dir or a quarantine "
        "root, as kseg restore takes them), above the live log end.",
    ),
]
IncludeDeletedOpt = Annotated[
    bool,
    typer.Option(
        "--include-deleted",
        help="Also give back the intact entries of the partition's *.log.deleted segments "
        "above the live log end (Kafka deletes them at start; a follower's truncation leaves "
        "them too: records the leader never had).",
    ),
]
SalvagePlotOpt = Annotated[
    Path | None,
    typer.Option(
        "--plot",
        help="Also draw per partition what Kafka keeps, what salvage keeps and what is lost "
        "for good along the offset axis into FILE (.png or .svg; needs pip install "
        "'kseg[plot]').",
        metavar="FILE",
        show_default=False,
    ),
]
KeepAmbiguousOpt = Annotated[
    bool,
    typer.Option(
        "--keep-ambiguous",
        help="Also write the entries reached through an ambiguous resync (they may be a "
        "damaged entry's payload); by default they are left out and counted lost (exit 4).",
    ),
]
SalvageForceOpt = Annotated[
    bool, typer.Option(help="Salvage even though a broker holds <log.dir>/.lock.")
]


def salvage(
    paths: o.SegmentPathsArg,
    dry_run: SalvageDryRunOpt = False,
    to: ToOpt = None,
    from_quarantine: FromQuarantineOpt = None,
    include_deleted: IncludeDeletedOpt = False,
    keep_ambiguous: KeepAmbiguousOpt = False,
    quarantine: o.QuarantineOpt = None,
    force: SalvageForceOpt = False,
    index_interval_bytes: o.IntervalOpt = 4096,
    kafka_version: o.KafkaVersionOpt = None,
    topic: o.TopicOpt = None,
    partition: o.PartitionOpt = None,
    fmt: o.FormatOpt = o.OutputFormat.text,
    quiet: o.QuietOpt = False,
    plot: SalvagePlotOpt = None,
    jobs: JobsOpt = None,
) -> int:
    from kseg.cli.signals import Interrupted
    from kseg.render import check_plot, finish, finish_salvage_plot
    from kseg.salvage.run import SalvageRun
    from kseg.storage.tree import log_bytes
    from kseg.verify.run import VerifyOptions

    opts = VerifyOptions(
        repair=True,
        dry_run=dry_run,
        quarantine=quarantine,
        force=force,
        index_interval_bytes=index_interval_bytes,
        kafka_version=parsed_kafka_version(kafka_version),
        topic=topic,
        partition=partition,
        jobs=jobs,
    )
    if plot is not None:
        check_plot(plot)  # a wrong name or no matplotlib fails before any work
    sel = selection(paths, topic, partition)  # a wrong path fails up front
    run = SalvageRun(
        opts,
        to=to,
        from_quarantine=from_quarantine,
        include_deleted=include_deleted,
        keep_ambiguous=keep_ambiguous,
    )
    track(run)
    costs: list[dict] = []

    def kept(evs):
        for ev in evs:
            if plot is not None and ev.get("type") == "salvage":
                costs.append(ev)
            yield ev

    try:
        found = finish(
            "salvage",
            run,
            with_exit_codes(kept(run.events(sel))),
            fmt.value,
            bar_total=lambda: log_bytes(run.targets(sel)),
            quiet=quiet,
        )
        if plot is not None:
            found = finish_salvage_plot(found, costs, plot)
        return exit_status(found)
    except Interrupted as exc:
        exc.outcome |= run.outcome
        raise
