"""Exit codes: a contract with shell scripts. verify ORs them into an fsck-style bitmask.

The library reports what a run found (kseg.outcome.Outcome); this module alone decides exit
codes, for every command. ``CODES`` is the one table from an outcome to its exit code (``EXIT_FOR``: an error
kind's, through kseg.outcome.KIND_OUTCOMES); ``exit_status`` is the one function that turns
any outcome (a command's run or its Outcome, an error kind, an exception that ended the
command) into the exit status. The CLI's top-level ``--help`` and the
README's conventions section show ``TABLE``.
"""

from __future__ import annotations

import errno
from collections.abc import Iterable, Iterator
from enum import IntFlag

from kseg.outcome import KIND_OUTCOMES, Outcome, outcome_of_kind


class Exit(IntFlag):
    OK = 0
    REPAIRED = 1  # problems found and all repaired or salvaged (verify --repair, salvage)
    PROBLEMS = 4  # invalid input found (and not repaired)
    OPERATIONAL = 8  # a file could not be read or written, a broker holds the lock, ...
    USAGE = 16  # bad command line: a bad option value, a wrong path
    INTERRUPTED = 32  # Ctrl-C / SIGTERM


# The one table from what a run found to its exit code (each bit of an outcome to its own).
CODES: dict[Outcome, Exit] = {
    Outcome.REPAIRED: Exit.REPAIRED,
    Outcome.INVALID_DATA: Exit.PROBLEMS,
    Outcome.UNREADABLE: Exit.OPERATIONAL,
    Outcome.USAGE: Exit.USAGE,
    Outcome.INTERRUPTED: Exit.INTERRUPTED,
}


def code_of(outcome: Outcome) -> Exit:
    """The exit code of an outcome: the OR of its bits' codes (0 for OK)."""
    code = Exit.OK
    for bit, bit_code in CODES.items():
        if outcome & bit:
            code |= bit_code
    return code


# Error kinds that are not "invalid data" and their exit codes (kseg.outcome.KIND_OUTCOMES
# through the table above; every CorruptionError kind, e.g. crc_mismatch, is invalid data: 4).
EXIT_FOR: dict[str, Exit] = {kind: code_of(o) for kind, o in KIND_OUTCOMES.items()}


def exit_for(kind: str) -> Exit:
    """The exit code of an error kind; any kind not listed is invalid data (4)."""
    return code_of(outcome_of_kind(kind))


def exit_status(outcome: object) -> Exit:
    """The exit status of an outcome (httpie's ExitStatus): every command's ends here.

    - an ``Outcome`` (what a library run found; kseg.outcome), or a run (``VerifyRun``,
      ``DumpRun``, ...: anything with an ``outcome``): the table ``CODES``;
    - an ``Interrupted`` (kseg.cli.signals): its ``outcome``, 32 OR-ed with what verify had
      found;
    - an error kind, or an exception carrying one of ``EXIT_FOR`` (``InputError``, ``BadOption``,
      spark's ``NoInput``): ``EXIT_FOR``;
    - a command-line mistake (click's ``UsageError``): 16;
    - Ctrl-C as a KeyboardInterrupt, or an abort: 32;
    - an OSError (unreadable, unwritable, stdout full) or MemoryError: 8;
    - any other exception: a bug, ``internal`` (8);
    - an exit code (an int that is no Outcome): itself (0 for None)."""
    if outcome is None:
        return Exit.OK
    if isinstance(outcome, Outcome):
        return code_of(outcome)
    if isinstance(outcome, int):
        return Exit(outcome)
    if isinstance(outcome, str):
        return exit_for(outcome)
    if not isinstance(outcome, BaseException) or hasattr(outcome, "signum"):
        return code_of(outcome.outcome)  # a run, or kseg.cli.signals.Interrupted
    kind = getattr(outcome, "kind", None)
    if isinstance(kind, str) and kind in EXIT_FOR:  # not a CorruptionError's kind: a bug
        return EXIT_FOR[kind]
    names = {c.__name__ for c in type(outcome).__mro__}  # click may be vendored by typer
    if "UsageError" in names:
        return Exit.USAGE
    if names & {"KeyboardInterrupt", "Abort"}:
        return Exit.INTERRUPTED
    if isinstance(outcome, (OSError, MemoryError)):
        return Exit.OPERATIONAL
    return exit_for("internal")


def outcome_of_code(code: int) -> Outcome:
    """The outcome an exit code stands for (``code_of`` backwards): a command that had returned
    its status when an interrupt arrived keeps it (kseg.cli.entry)."""
    found = Outcome.OK
    for bit, bit_code in CODES.items():
        if code & bit_code:
            found |= bit
    return found


OUTPUT_FULL = frozenset((errno.ENOSPC, errno.EDQUOT, errno.EFBIG))  # only a write gives them


def output_full(exc: BaseException) -> bool:
    """Could the output not be written (stdout's disk full)? (an OSError without a file name)"""
    return isinstance(exc, OSError) and exc.filename is None and exc.errno in OUTPUT_FULL


def ended_status(exc: BaseException) -> Exit:
    """The exit status of a command that an exception ended: a closed pipe keeps what had been
    found so far (the reader is gone: `kseg verify ... | head`), a full stdout ORs 8 with it,
    anything else is ``exit_status``'s."""
    if isinstance(exc, BrokenPipeError):
        return so_far()
    if output_full(exc):
        return so_far() | exit_status(exc)
    return exit_status(exc)


def out_of_memory_status(code: int) -> int:
    """A command's status when memory ran out where nothing could catch it (a finalizer, a
    generator being closed; kseg.cli.entry): the status it had, OR-ed with a MemoryError's."""
    return int(Exit(code) | exit_status(MemoryError()))


def with_exit_codes(events: Iterable[dict]) -> Iterator[dict]:
    """A summary event's ``outcome`` (what the run found, its last key) as its ``exit_code``,
    in the same place: the summaries of verify, index and restore (and spark verify) show the
    exit status the command ends with."""
    for ev in events:
        if ev["type"] == "summary" and "outcome" in ev:
            ev["exit_code"] = int(exit_status(ev.pop("outcome")))
        yield ev


TABLE: list[tuple[int, str]] = [
    (0, "ok: done, nothing invalid found"),
    (1, "verify --repair, salvage: problems found and all repaired or salvaged"),
    (
        4,
        "invalid data found in the input (reported with file and byte position); txn: a "
        "hanging transaction; replicas: replicas diverged",
    ),
    (8, "operational error: unreadable/unwritable file, a broker holds the lock, internal error"),
    (16, "usage error: bad option value or --topic regex, a PATH missing or with nothing Kafka"),
    (32, "interrupted (SIGINT/Ctrl-C, SIGTERM)"),
]


def help_text(keep_lines: str = "") -> str:
    """The table as text; ``keep_lines`` is put before the rows (click's "\\b": no rewrapping)."""
    rows = "\n".join(f"  {code:>2}  {text}" for code, text in TABLE)
    return f"Exit codes (verify ORs them into a bitmask, e.g. 5 = 1|4):\n\n{keep_lines}{rows}"


_running: object = None  # the run of the command going on now


def track(run: object) -> None:
    """Remember the running command's run (a command calls this before rendering it): its status so far is the exit status when output
    stops early (a closed pipe: `kseg dump corrupt | head` still exits 4 if the corruption came
    before the close)."""
    global _running
    _running = run


def so_far() -> Exit:
    return exit_status(_running)
