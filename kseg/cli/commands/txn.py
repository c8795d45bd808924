"""`kseg txn`: open and hanging transactions, offline (kseg.txn.run, imported only when the
command runs)."""

from kseg.cli import options as o
from kseg.cli.exit import exit_status, track
from kseg.cli.inputs import selection
from kseg.cli.jobs_option import JobsOpt


def txn(
    paths: o.PartitionPathsArg,
    at: o.TxnAtOpt = None,
    now: o.NowOpt = None,
    max_transaction_timeout: o.MaxTxnTimeoutOpt = 15,
    producers: o.ProducersOpt = False,
    bootstrap_server: o.BootstrapOpt = None,
    topic: o.TopicOpt = None,
    partition: o.PartitionOpt = None,
    fmt: o.StatsFormatOpt = o.StatsFormat.text,
    jobs: JobsOpt = None,
) -> int:
    """Open transactions per partition and the offset they hold read_committed consumers at
    (last stable offset), joined with __transaction_state from the same roots; each open
    transaction judged as `kafka-transactions.sh find-hanging` does (KIP-664), and for a hanging
    one the `kafka-transactions.sh abort` command line.

    Ages are judged at --at, else --now, else at the end of the data (the latest batch time
    read), not today's clock; `--now now` judges against the clock.

    Exit codes: 0 nothing hanging; 4 a hanging transaction, or corrupt bytes on the way
    (replayed up to them); 8 unreadable input; 16 usage (also: no partition to read).

    Example:

    \b
      kseg txn /var/lib/kafka/data --now now
      kseg txn /var/lib/kafka/data --topic '^orders$' --at 2026-11-21T09:30:00Z -f json
    """
    from kseg.render import finish
    from kseg.seek.timeexpr import parse_option_time
    from kseg.txn.run import TxnRun

    now_ms = parse_option_time(now, "--now")  # None: judged at the end of the data
    at_ms = parse_option_time(at, "--at", now_ms)
    sel = selection(paths, topic, partition)
    given = {p.resolve() for p in paths}
    # an internal topic is answered when asked for: by --topic, or a partition given by path
    asked = topic is not None or any(
        it.name is not None and it.path.resolve() in given for it in sel.items
    )
    run = TxnRun(
        sel,
        at=at_ms,
        now=now_ms,
        max_timeout_ms=max_transaction_timeout * 60_000,
        producers=producers,
        coordinator_sel=selection(paths, None, None) if topic or partition is not None else None,
        bootstrap=bootstrap_server,
        internal=asked,
        jobs=jobs,
    )
    track(run)
    return exit_status(finish("txn", run, run.events(), fmt.value))
