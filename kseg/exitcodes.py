"""Exit codes: a contract with shell scripts. verify ORs them into an fsck-style bitmask.

``EXIT_FOR`` is the one table from an error kind to its exit code, for every command; the CLI's
top-level ``--help`` and the README's conventions section show ``TABLE``.
"""

from __future__ import annotations

from enum import IntFlag


class Exit(IntFlag):
    OK = 0
    REPAIRED = 1  # problems found and all repaired (verify --repair)
    PROBLEMS = 4  # invalid input found (and not repaired)
    OPERATIONAL = 8  # a file could not be read or written, a broker holds the lock, ...
    USAGE = 16  # bad command line: a bad option value, a wrong path
    INTERRUPTED = 32  # Ctrl-C / SIGTERM


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
