"""`kseg seek`: the offset for a time, or where an offset lives (kseg.seek.run)."""

from kseg.cli import options as o
from kseg.cli.exit import exit_status, track
from kseg.cli.inputs import selection
from kseg.outcome import BadOption


def seek(
    paths: o.PartitionPathsArg,
    time_: o.TimeOpt = None,
    offset: o.OffsetOpt = None,
    now: o.NowOpt = None,
    data_only: o.DataOnlyOpt = False,
    topic: o.TopicOpt = None,
    partition: o.PartitionOpt = None,
    fmt: o.SeekFormatOpt = o.SeekFormat.text,
    isolation: o.IsolationOpt = o.Isolation.read_uncommitted,
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
    from kseg.render import finish
    from kseg.seek.run import SeekRun, parse_target
    from kseg.seek.timeexpr import parse_option_time

    if (time_ is None) == (offset is None):
        raise BadOption("give exactly one of --time and --offset", "--time/--offset")
    target = None
    if time_ is not None:  # a bad --now is a usage error even when the target does not use it
        target = parse_target(time_, parse_option_time(now, "--now"))
    sel = selection(paths, topic, partition)
    csv = fmt is o.SeekFormat.reset_csv
    if csv and target is None:
        raise BadOption("reset-csv goes with --time", "--format")
    committed = isolation is o.Isolation.read_committed
    if committed and target is None:
        raise BadOption("--isolation goes with --time (an offset's place has none)", "--isolation")
    run = SeekRun(
        sel, target=target, offset=offset, data_only=data_only, fill_latest=csv, topic=topic,
        read_committed=committed,
    )  # fmt: skip
    track(run)
    return exit_status(finish("seek", run, run.reset_events() if csv else run.events(), fmt.value))
