"""Exit codes: a contract with shell scripts. verify ORs them into an fsck-style bitmask.

``EXIT_FOR`` is the one table from an error kind to its exit code, for every command;
``exit_status`` is the one function that turns any outcome (a command's run, an error kind, an
exception that ended the command) into the exit status. The CLI's top-level ``--help`` and the
README's conventions section show ``TABLE``. The library reports (kseg.exitcodes' bits in a
run's ``code``); only this module decides.
"""

from __future__ import annotations

from kseg.exitcodes import Exit

# Error kinds that are not "invalid data" (every CorruptionError kind, e.g. crc_mismatch,
# torn_tail, is invalid data: 4). Kinds come from kseg.storage.tree (input errors), the CLI
# (usage) and the commands (operational).
EXIT_FOR: dict[str, Exit] = {
    # usage mistakes: the command line names something kseg cannot work on
    "usage": Exit.USAGE,  # a bad option value or combination
    "bad_regex": Exit.USAGE,  # --topic is not a regular expression
    "no_such_path": Exit.USAGE,  # a PATH that does not exist
    "nothing_found": Exit.USAGE,  # no partition, segment or Kafka file under PATH
    "not_kafka_file": Exit.USAGE,  # a file whose name is no Kafka file kind
    "no_match": Exit.USAGE,  # --topic/--partition select no partition
    # unreadable input / operational errors: kseg could not do its job
    "unreadable": Exit.OPERATIONAL,  # permission denied, I/O error
    "unwritable": Exit.OPERATIONAL,
    "broker_running": Exit.OPERATIONAL,  # a broker holds <log.dir>/.lock
    "internal": Exit.OPERATIONAL,  # a bug (one line; KSEG_DEBUG=1 shows the traceback)
    "interrupted": Exit.INTERRUPTED,
}


def exit_for(kind: str) -> Exit:
    """The exit code of an error kind; any kind not listed is invalid data (4)."""
    return EXIT_FOR.get(kind, Exit.PROBLEMS)


def exit_status(outcome: object) -> Exit:
    """The exit status of an outcome (httpie's ExitStatus): every command's ends here.

    - a run (``VerifyRun``, ``DumpRun``, ...: anything with a ``code``), or an ``Interrupted``
      (its ``code``: 32, OR-ed by verify with what it had found): that code;
    - an error kind, or an exception carrying one of ``EXIT_FOR`` (``InputError``, ``BadOption``,
      spark's ``NoInput``): ``EXIT_FOR``;
    - a command-line mistake (click's ``UsageError``): 16;
    - Ctrl-C as a KeyboardInterrupt, or an abort: 32;
    - an OSError (unreadable, unwritable, stdout full) or MemoryError: 8;
    - any other exception: a bug, ``internal`` (8);
    - an int (a library run's code, as kseg.render's finish functions return it): itself (0
      for None)."""
    if outcome is None:
        return Exit.OK
    if isinstance(outcome, int):
        return Exit(outcome)
    if isinstance(outcome, str):
        return exit_for(outcome)
    if not isinstance(outcome, BaseException):
        return Exit(int(outcome.code))  # a run
    if hasattr(outcome, "signum"):  # kseg.interrupt.Interrupted
        return Exit(outcome.code)
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


TABLE: list[tuple[int, str]] = [
    (0, "ok: done, nothing invalid found"),
    (1, "verify --repair: problems found and all repaired"),
    (4, "invalid data found in the input (reported with file and byte position)"),
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
    """Remember the running command's run (a command calls this before rendering it): its
    status so far is the exit status when output stops early (a closed pipe: `kseg dump
    corrupt | head` still exits 4 if the corruption came before the close)."""
    global _running
    _running = run


def so_far() -> Exit:
    return exit_status(_running)
