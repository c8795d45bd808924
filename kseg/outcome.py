"""What a run found: the library reports outcomes, never exit codes (only the CLI turns an
outcome into the documented exit status, kseg.cli.exit.exit_status).

A run ORs an ``Outcome`` over everything it looked at, fsck-style: a run that met invalid data
and an unreadable file found ``INVALID_DATA | UNREADABLE``. Imports nothing of kseg (layer 0).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntFlag


class Outcome(IntFlag):
    """What a run found. The bits are deliberately not the exit codes they map to: an outcome
    used as an exit status without kseg.cli.exit.exit_status comes out wrong, and tests see it."""

    OK = 0
    INVALID_DATA = 1  # invalid input found (and not repaired)
    UNREADABLE = 2  # operational: unreadable/unwritable, a lock held, an internal error
    REPAIRED = 4  # problems found and all repaired (verify --repair)
    USAGE = 8  # the command line names nothing to work on, or nothing the run can answer
    INTERRUPTED = 16  # SIGINT / SIGTERM


# What an error kind says a run found. Every kind not listed here (every CorruptionError kind,
# e.g. crc_mismatch, torn_tail) is invalid data. Kinds come from kseg.storage.tree (input
# errors), BadOption (usage) and the commands (operational).
KIND_OUTCOMES: dict[str, Outcome] = {
    # usage mistakes: the command line names something kseg cannot work on
    "usage": Outcome.USAGE,  # a bad option value or combination
    "bad_regex": Outcome.USAGE,  # --topic is not a regular expression
    "no_such_path": Outcome.USAGE,  # a PATH that does not exist
    "nothing_found": Outcome.USAGE,  # no partition, segment or Kafka file under PATH
    "not_kafka_file": Outcome.USAGE,  # a file whose name is no Kafka file kind
    "no_match": Outcome.USAGE,  # --topic/--partition select no partition
    # unreadable input / operational errors: kseg could not do its job
    "unreadable": Outcome.UNREADABLE,  # permission denied, I/O error
    "unwritable": Outcome.UNREADABLE,
    "broker_running": Outcome.UNREADABLE,  # a broker holds <log.dir>/.lock
    "internal": Outcome.UNREADABLE,  # a bug (one line; KSEG_DEBUG=1 shows the traceback)
    "interrupted": Outcome.INTERRUPTED,
}


def outcome_of_kind(kind: str) -> Outcome:
    """What an error of ``kind`` says a run found; any kind not listed is invalid data."""
    return KIND_OUTCOMES.get(kind, Outcome.INVALID_DATA)


def combined(outcomes: Iterable[Outcome]) -> Outcome:
    """Everything the outcomes found, OR-ed (OK for none)."""
    found = Outcome.OK
    for outcome in outcomes:
        found |= outcome
    return found


class BadOption(ValueError):
    """A usage mistake found by the library (an option value it cannot work with); the CLI
    shows it as the option's usage error (exit 16)."""

    kind = "usage"

    def __init__(self, message: str, option: str) -> None:
        super().__init__(message)
        self.option = option
