"""`kseg replicas`: where a partition's replicas diverge and what Kafka truncates when they
rejoin (kseg.replicas.run, imported only when the command runs)."""

from kseg.cli import options as o
from kseg.cli.exit import exit_status, track
from kseg.cli.inputs import selection
from kseg.cli.jobs_option import JobsOpt


def replicas(
    paths: o.RootPathsArg,
    leader: o.LeaderOpt = None,
    export_lost: o.ExportLostOpt = None,
    topic: o.TopicOpt = None,
    partition: o.PartitionOpt = None,
    fmt: o.FormatOpt = o.OutputFormat.text,
    jobs: JobsOpt = None,
) -> int:
    """Compare the replicas of each partition held in two or more broker roots, byte for byte:
    the first offset where their batches differ, the leader Kafka keeps (the rule named, or
    --leader), the offset each other replica truncates to when it rejoins (Kafka's
    leader-epoch matching) and the records, bytes and time range it loses.

    --export-lost DIR writes those records per losing replica; nothing in the input changes.

    Exit codes: 0 every partition consistent (a replica merely behind is); 4 replicas
    diverged, or damaged; 8 unreadable input; 16 usage (also: no partition with replicas in two
    or more roots; --export-lost files already there, or a DIR among the roots); 32
    interrupted.

    Example:

    \b
      kseg replicas /srv/copies/broker-1 /srv/copies/broker-2 /srv/copies/broker-3
      kseg replicas /srv/copies --topic '^orders$' --leader /srv/copies/broker-2 --export-lost lost
    """
    from kseg.render import finish
    from kseg.replicas.run import ReplicasRun

    sel = selection(paths, topic, partition)
    files = None
    if export_lost is not None:  # the exports' JSON Lines and Parquet writers (render, spark)
        from kseg.render.lost_records import record_files

        files = record_files()
    run = ReplicasRun(sel, leader=leader, export_lost=export_lost, record_files=files, jobs=jobs)
    track(run)
    return exit_status(finish("replicas", run, run.events(), fmt.value))
