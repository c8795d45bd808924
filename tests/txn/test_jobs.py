"""`kseg txn --jobs N`: the partitions replayed in workers, judged in the parent against the
coordinator state read once: the same bytes out (stdout, stderr, exit code) as --jobs 1."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kseg.fixtures import build_corrupt_tree
from kseg.fixtures.transactions import MINUTE, T0, build_root
from tests.helpers import run_kseg


@pytest.fixture(scope="module")
def roots(tree, tmp_path_factory) -> tuple[Path, Path, Path]:
    """Three log.dirs roots (read-only for tests): the transactions fixture with payments-0
    copied to payments-1 and -2 (-2's last segment a directory: its replay stops there), the
    fixture tree (txn-0) and one partition per corruption."""
    base = tmp_path_factory.mktemp("txnjobs")
    txn = base / "txn"
    build_root(txn)
    for n in (1, 2):
        shutil.copytree(txn / "payments-0", txn / f"payments-{n}")
    last = sorted((txn / "payments-2").glob("*.log"))[-1]
    last.unlink()
    last.mkdir()
    shutil.copytree(tree, base / "tree")
    build_corrupt_tree(base / "corrupt")
    return txn, base / "tree", base / "corrupt"


def _same(*args, jobs: str = "3") -> int:
    one = run_kseg("txn", *args, "--jobs", "1")
    many = run_kseg("txn", *args, "--jobs", jobs)
    assert (many.returncode, many.stdout, many.stderr) == (
        one.returncode,
        one.stdout,
        one.stderr,
    )
    return one.returncode


@pytest.mark.parametrize("fmt", ["text", "json", "table", "csv"])
def test_txn_jobs_prints_what_one_job_prints(roots, fmt):
    assert _same(*roots, "--producers", "-f", fmt) == 4  # hanging, corrupt


@pytest.mark.parametrize(
    "args",
    [
        ("--topic", "^payments$"),
        ("--partition", "0", "--now", str(T0 + 90 * MINUTE)),  # not "now": the clock moves
        ("--at", str(T0 + 30 * MINUTE), "--max-transaction-timeout", "5"),
    ],
    ids=["topic", "partition-now", "at"],
)
def test_txn_jobs_with_filters_print_what_one_job_prints(roots, args):
    _same(*roots, *args, "-f", "json")


@settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    topic=st.sampled_from([None, "^payments$", "^(txn|audit|crc-flip)$", "a", "^__"]),
    partition=st.sampled_from([None, 0, 2]),
    at=st.sampled_from([None, 11, 59]),
    jobs=st.sampled_from(["2", "3", "7"]),
)
def test_txn_jobs_select_what_one_job_selects(roots, topic, partition, at, jobs):
    args = [*roots, "-f", "json"]
    args += ["--topic", topic] if topic is not None else []
    args += ["--partition", str(partition)] if partition is not None else []
    args += ["--at", str(T0 + at * MINUTE)] if at is not None else []
    _same(*args, jobs=jobs)
