"""The bits a library run reports in its ``code`` (verify ORs them, fsck-style), and
``BadOption``, a usage mistake the library finds. Which exit status a process ends with is the
CLI's to decide: kseg.cli.exit (its one table from outcomes to exit codes)."""

from __future__ import annotations

from enum import IntFlag


class Exit(IntFlag):
    OK = 0
    REPAIRED = 1  # problems found and all repaired (verify --repair)
    PROBLEMS = 4  # invalid input found (and not repaired)
    OPERATIONAL = 8  # a file could not be read or written, a broker holds the lock, ...
    USAGE = 16  # bad command line: a bad option value, a wrong path
    INTERRUPTED = 32  # Ctrl-C / SIGTERM


class BadOption(ValueError):
    """A usage mistake found by the library (an option value it cannot work with); the CLI
    shows it as the option's usage error (exit 16)."""

    kind = "usage"

    def __init__(self, message: str, option: str) -> None:
        super().__init__(message)
        self.option = option
