"""`kseg stats`: options -> one library call (kseg.stats.stats) -> kseg.render -> exit status."""

from kseg.cli import options as o
from kseg.cli.exit import exit_status, track
from kseg.cli.inputs import selection
from kseg.cli.jobs_option import JobsOpt


def stats(
    paths: o.SegmentPathsArg,
    by: o.StatsByOpt = o.StatsBy.partition,
    uncompressed: o.UncompressedOpt = False,
    plot: o.PlotOpt = None,
    topic: o.TopicOpt = None,
    partition: o.PartitionOpt = None,
    fmt: o.StatsFormatOpt = o.StatsFormat.text,
    quiet: o.QuietOpt = False,
    resync: o.StatsResyncOpt = False,
    isolation: o.IsolationOpt = o.Isolation.read_uncommitted,
    jobs: JobsOpt = None,
) -> int:
    """Records, batches, bytes, codecs, offset and time ranges, producers, transactional share
    per partition (and hour), topic and log dir, from one pass over batch headers.

    Exit codes: 0 counted; 4 invalid data (reported with file and byte; what came before it is
    counted); 8 unreadable, or --plot without matplotlib; 16 usage (also: nothing to count).

    Example:

    \b
      kseg stats /var/lib/kafka/data --topic '^orders$' -f table
      kseg stats /var/lib/kafka/data --by hour -f csv --uncompressed --plot stats.png
    """
    from kseg.render import check_plot, finish_stats
    from kseg.stats.stats import StatsOptions, StatsRun

    check_plot(plot)  # a wrong name or no matplotlib fails before any work
    opts = StatsOptions(
        by is o.StatsBy.hour,
        uncompressed,
        timeline=plot is not None,
        resync=resync,
        read_committed=isolation is o.Isolation.read_committed,
        jobs=jobs,
    )
    run = StatsRun(selection(paths, topic, partition), opts)
    track(run)
    return exit_status(finish_stats(run, fmt.value, quiet, plot))
