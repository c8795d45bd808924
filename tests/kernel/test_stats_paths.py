"""`kseg stats` on the kernel's header walk and on the pure-Python core: the same events, exit
codes and plot timelines on the fixture tree, every damaged copy, and real broker data."""

from __future__ import annotations

from pathlib import Path

import pytest

from kseg import kernel
from kseg.cli.exit import exit_status
from kseg.stats.stats import StatsOptions, count

from .diff import kernel_built

pytestmark = pytest.mark.skipif(not kernel_built(), reason="the compiled kernel is not built")

OPTS = StatsOptions(by_hour=True, uncompressed=True, timeline=True)


def _run(paths: list[Path]):
    run = count(paths, opts=OPTS)
    evs = list(run.events())
    return evs, int(exit_status(run.outcome)), run.timelines


def _both(choose, paths: list[Path]):
    got = {}
    for which in (kernel.RUST, kernel.PYTHON):
        choose(which)
        assert kernel.active() == which
        got[which] = _run(paths)
    assert got[kernel.RUST] == got[kernel.PYTHON]
    return got[kernel.RUST]


def test_fixture_tree_and_real_data_count_the_same_on_both_paths(choose, tree, real_root):
    evs, code, timelines = _both(choose, [tree])
    assert code == 0 and timelines and any(e["type"] == "hour_stats" for e in evs)
    evs, code, _ = _both(choose, [real_root])  # four brokers' roots, legacy and v2
    assert code == 0 and sum(e["type"] == "root_stats" for e in evs) == 4


def test_damaged_copies_stop_at_the_same_byte_on_both_paths(choose, corrupt_cases):
    for case in corrupt_cases:
        evs, code, timelines = _both(choose, [case.partition_dir])
        if case.file.suffix == ".log":
            assert code & 4, case.name
            stopped = [s for t in timelines for s in t.segments if s.error_position is not None]
            if case.kind != "decompression_failed":
                assert [s.error_position for s in stopped] == [case.position]
