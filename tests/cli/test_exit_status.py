"""kseg.cli.exit.exit_status: every outcome becomes its exit status in one place."""

from __future__ import annotations

import errno

import pytest
import typer

from kseg.cli.exit import EXIT_FOR, Exit, exit_status, outcome_of_code
from kseg.cli.signals import Interrupted
from kseg.format.errors import CorruptionError
from kseg.outcome import BadOption, Outcome
from kseg.storage.tree import InputError


class _Run:
    def __init__(self, outcome: Outcome) -> None:
        self.outcome = outcome


@pytest.mark.parametrize(
    ("outcome", "status"),
    [
        (None, 0),
        (_Run(Outcome.REPAIRED | Outcome.INVALID_DATA), 5),
        (Outcome.REPAIRED | Outcome.INVALID_DATA, 5),
        (Exit.PROBLEMS, 4),
        ("unreadable", 8),
        ("crc_mismatch", 4),
        (InputError("nothing_found", "/x", "nothing"), 16),
        (InputError("unreadable", "/x", "denied"), 8),
        (BadOption("bad", "--time"), 16),
        (typer.BadParameter("bad"), 16),
        (Interrupted(), 32),
        (Interrupted(outcome=Outcome.INVALID_DATA), 36),
        (KeyboardInterrupt(), 32),
        (typer.Abort(), 32),
        (OSError(errno.EACCES, "denied", "/x"), 8),
        (BrokenPipeError(), 8),
        (MemoryError(), 8),
        (RuntimeError("a bug"), EXIT_FOR["internal"]),
    ],
)
def test_exit_status(outcome, status):
    assert exit_status(outcome) == status


def test_an_exit_code_stands_for_its_outcome():
    """An interrupt after a command returned its status keeps it (kseg.cli.entry): the table
    backwards gives the same status again."""
    for code in range(64):
        assert exit_status(outcome_of_code(code)) == code & ~2  # 2 stands for nothing


def test_a_corruption_escaping_a_command_is_a_bug_not_invalid_data():
    """Commands report corruption as data; one that escapes is an internal error (8)."""
    assert exit_status(CorruptionError("torn", kind="torn_tail")) == Exit.OPERATIONAL
