"""Exit codes: a contract with shell scripts. verify ORs them into an fsck-style bitmask."""

from __future__ import annotations

from enum import IntFlag


class Exit(IntFlag):
    OK = 0
    REPAIRED = 1  # problems found and all repaired (verify --repair)
    PROBLEMS = 4  # invalid input found (and not repaired)
    OPERATIONAL = 8  # a file could not be read or written, a broker holds the lock, ...
    USAGE = 16  # bad command line
    INTERRUPTED = 32  # Ctrl-C / SIGTERM
