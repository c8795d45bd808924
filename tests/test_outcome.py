"""kseg.outcome (what a run found) and the one table that turns it into the documented exit
status (kseg.cli.exit.exit_status)."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

from kseg import outcome as outcome_module
from kseg.cli.exit import CODES, EXIT_FOR, Exit, exit_for, exit_status
from kseg.outcome import KIND_OUTCOMES, Outcome, combined, outcome_of_kind

MEMBERS = list(Outcome)  # the flags (iterating a Flag leaves out OK, the 0)

# the README's exit codes, per outcome (tests/cli/test_contract.py pins them on the commands)
DOCUMENTED = {
    Outcome.OK: 0,
    Outcome.REPAIRED: 1,
    Outcome.INVALID_DATA: 4,
    Outcome.UNREADABLE: 8,
    Outcome.USAGE: 16,
    Outcome.INTERRUPTED: 32,
}


def test_the_table_covers_every_member():
    assert set(CODES) == set(MEMBERS)
    assert set(DOCUMENTED) == {Outcome.OK, *MEMBERS} == set(Outcome.__members__.values())
    for member, code in DOCUMENTED.items():
        assert exit_status(member) == code, member


def test_each_member_has_its_own_bit_not_its_exit_code():
    """An outcome used as an exit status without the table comes out wrong (tests see it)."""
    assert Outcome.OK == 0
    for member in MEMBERS:
        assert member.bit_count() == 1, member
        assert int(member) != DOCUMENTED[member], member
    assert len({int(m) for m in MEMBERS}) == len(MEMBERS)


@pytest.mark.parametrize("n", range(2, len(MEMBERS) + 1))
def test_each_combination_maps_to_the_or_of_the_codes(n):
    for members in itertools.combinations(MEMBERS, n):
        want = 0
        for m in members:
            want |= DOCUMENTED[m]
        assert exit_status(combined(members)) == want, members
        assert exit_status(Outcome(sum(members))) == want, members


def test_combined():
    assert combined([]) is Outcome.OK
    assert combined([Outcome.OK, Outcome.INVALID_DATA, Outcome.INVALID_DATA]) == (
        Outcome.INVALID_DATA
    )
    assert combined(iter([Outcome.REPAIRED, Outcome.UNREADABLE])) == (
        Outcome.REPAIRED | Outcome.UNREADABLE
    )


def test_a_run_is_its_outcome():
    class Run:
        outcome = Outcome.INVALID_DATA | Outcome.UNREADABLE

    assert exit_status(Run()) == 12


def test_error_kinds_keep_their_exit_codes():
    """EXIT_FOR is KIND_OUTCOMES through the table: the same kinds and codes as before."""
    assert EXIT_FOR == {
        "usage": 16,
        "bad_regex": 16,
        "no_such_path": 16,
        "nothing_found": 16,
        "not_kafka_file": 16,
        "no_match": 16,
        "unreadable": 8,
        "unwritable": 8,
        "broker_running": 8,
        "internal": 8,
        "interrupted": 32,
    }
    assert set(EXIT_FOR) == set(KIND_OUTCOMES)
    assert all(isinstance(code, Exit) for code in EXIT_FOR.values())
    assert outcome_of_kind("crc_mismatch") is Outcome.INVALID_DATA
    assert exit_for("crc_mismatch") == 4 and exit_status("torn_tail") == 4
    for kind, found in KIND_OUTCOMES.items():
        assert exit_for(kind) == exit_status(found) == EXIT_FOR[kind], kind


def test_the_outcome_module_imports_nothing_of_kseg():
    """Layer 0: every library layer may report outcomes."""
    tree = ast.parse(Path(outcome_module.__file__).read_text())
    names = [
        *(a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names),
        *(n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)),
    ]
    assert [m for m in names if m == "kseg" or m.startswith("kseg.")] == []
