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
    from kseg.offsets.run import OffsetsRun
    from kseg.outcome import BadOption
    from kseg.render import finish
    from kseg.seek.timeexpr import parse_option_span, parse_option_time

    csv = fmt is o.SeekFormat.reset_csv
    sel = selection(paths, None, None)
    if (group is None) == (not list_groups):
        raise BadOption("give exactly one of --group and --list", "--group/--list")
    if list_groups and (csv or lag):
        raise BadOption("reset-csv and --lag go with --group", "--list")
    now_ms = parse_option_time(now, "--now")  # None: expiry judged at the end of the data
    # `now` and relative times in --at count from --now, or the clock
    at_ms = parse_option_time(at, "--at", now_ms)
    retention_ms = parse_option_span(retention, "--retention")
    run = OffsetsRun(sel, group=group, at=at_ms, now=now_ms, retention_ms=retention_ms, lag=lag)
    track(run)
    return exit_status(
        finish("offsets", run, run.reset_events() if csv else run.events(), fmt.value)
    )
