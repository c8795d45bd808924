"""`kseg offsets`: what a consumer group had committed (kseg.offsets.run, imported
only when the command runs)."""

from kseg.cli import options as o
from kseg.cli.exit import exit_status, track
from kseg.cli.inputs import selection


def offsets(
    paths: o.PartitionPathsArg,
    group: o.GroupOpt = None,
    list_groups: o.ListGroupsOpt = False,
    at: o.AtOpt = None,
    now: o.NowOpt = None,
    retention: o.RetentionOpt = "7d",
    lag: o.LagOpt = False,
    fmt: o.SeekFormatOpt = o.SeekFormat.text,
) -> int:
    """What a consumer group had committed (as of --at), replaying __consumer_offsets as the
    group coordinator loads it: tombstones, group deletion, transactional commits (only once
    COMMITted), expired offsets flagged. Only the __consumer_offsets partition the group maps
    to is read when KRaft metadata gives the partition count.

    Expiry is judged at --at, else --now, else at the end of the data (the last record in
    __consumer_offsets), not today's clock; `--at now` judges against the clock.

    reset-csv prints `topic,partition,offset` for `kafka-consumer-groups.sh --reset-offsets
    --from-file` (expired offsets left out, said on stderr; no row left: one line why, 16).

    Exit codes: 0 answered; 4 corrupt bytes on the way (answered from what decoded); 8
    unreadable input; 16 usage (also: no __consumer_offsets partition, no record of the
    group, or a reset file with no row).

    Example:

    \b
      kseg offsets /var/lib/kafka/data --group billing --at 2026-11-21T09:30:00Z --lag
      kseg offsets /var/lib/kafka/data --group billing --at -2h -f reset-csv > reset.csv
      kseg offsets /var/lib/kafka/data --list
    """
    from kseg.offsets.run import offsets_run
    from kseg.render import finish

    csv = fmt is o.SeekFormat.reset_csv
    run = offsets_run(
        selection(paths, None, None),
        group=group,
        list_groups=list_groups,
        at=at,
        now=now,
        retention=retention,
        lag=lag,
        csv=csv,
    )
    track(run)
    return exit_status(
        finish("offsets", run, run.reset_events() if csv else run.events(), fmt.value)
    )
