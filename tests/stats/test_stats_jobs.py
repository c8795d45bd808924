"""`kseg stats --jobs N`: partitions counted by worker processes, the output (rows, totals,
failures, --plot's picture, exit code) exactly that of --jobs 1."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kseg.stats.stats import StatsOptions, count

from ..helpers import damaged_copy, run_kseg, same_with_jobs


@pytest.fixture(scope="module")
def damaged(tree, tmp_path_factory):
    return damaged_copy(tree, tmp_path_factory.mktemp("stats-jobs") / "logs")


@pytest.mark.parametrize(
    "opts",
    [
        ("-f", "text"),
        ("-f", "json", "--by", "hour", "--uncompressed"),
        ("-f", "table", "--resync"),
        ("-f", "csv", "--isolation", "read_committed", "--topic", "^(orders|txn)$"),
    ],
)
def test_jobs_print_what_one_job_prints(damaged, tree, opts):
    r = same_with_jobs("stats", damaged, tree, *opts)
    assert r.returncode == 12  # the CRC error (4) and the unreadable segment (8)
    assert b"crc_mismatch" in r.stderr and b"not a regular file" in r.stderr


def test_library_totals_and_timelines_merge_as_one_job(damaged, tmp_path):
    """The accumulators that cross from the workers (each partition's Counts and Timeline) add
    up in the parent to what one process adds; --plot draws the same picture."""
    from kseg.render.plot import write_plot

    opts = [StatsOptions(by_hour=True, timeline=True, jobs=j) for j in (1, 3)]
    runs = [count([damaged], "^(orders|txn)$", opts=o) for o in opts]
    evs = [list(r.events()) for r in runs]
    assert evs[0] == evs[1]
    assert runs[0].timelines == runs[1].timelines and runs[0].timelines
    assert runs[0].partition_bytes == runs[1].partition_bytes
    assert runs[0].outcome == runs[1].outcome
    assert [e for e in evs[0] if e["type"] == "root_stats"][0]["partitions"] == 3
    for j, run in enumerate(runs):
        write_plot(run, tmp_path / f"{j}.png")
    assert (tmp_path / "0.png").read_bytes() == (tmp_path / "1.png").read_bytes()


def test_jobs_must_be_at_least_one(damaged):
    r = run_kseg("stats", damaged, "--jobs", "0")
    assert r.returncode == 16 and r.stdout == b""


@settings(max_examples=12, deadline=None)
@given(
    n=st.integers(2, 4),
    topic=st.sampled_from([None, "orders", "^(orders|txn)$", "nosuch"]),
    partition=st.sampled_from([None, 0, 1]),
    by_hour=st.booleans(),
    resync=st.booleans(),
    read_committed=st.booleans(),
)
def test_a_selection_counted_by_workers_is_that_selection_counted_by_one(
    damaged, tree, n, topic, partition, by_hour, resync, read_committed
):
    """Every combination of what stats selects and how it counts: N workers give the events
    (rows, totals, failures) and the outcome of one process."""
    from kseg.storage.tree import InputError

    def counted(jobs: int):
        opts = StatsOptions(
            by_hour=by_hour, resync=resync, read_committed=read_committed, jobs=jobs
        )
        run = count([damaged, tree], topic, partition, opts=opts)
        return list(run.events()), run.outcome

    try:
        expected = counted(1)
    except InputError as exc:  # nothing selected: the same refusal with N workers
        with pytest.raises(InputError, match=re.escape(str(exc)[:40])):
            counted(n)
        return
    assert counted(n) == expected
