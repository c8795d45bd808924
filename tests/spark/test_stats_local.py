"""`kseg stats` (no Spark) and `kseg spark stats` give the same numbers on the same input: the
fixture tree (every codec, magic 0/1/2, transactions, LogAppendTime), the real brokers' roots,
and damaged copies whose bad entry ends a segment (one Spark task per segment there)."""

from __future__ import annotations

from pathlib import Path

import pytest

import kseg.spark
from kseg.stats.stats import StatsOptions, count

pytestmark = pytest.mark.spark

SAME = (
    "records",
    "batches",
    "bytes",
    "uncompressed_bytes",
    "codecs",
    "first_offset",
    "last_offset",
    "min_base_timestamp",
    "max_timestamp",
    "producers",
)
SHARES = ("transactional_share", "compression_ratio")


def _local(paths: list[Path], by_hour: bool) -> dict:
    run = count(paths, opts=StatsOptions(by_hour=by_hour, uncompressed=True))
    kind = "hour_stats" if by_hour else "partition_stats"
    out = {}
    for e in run.events():
        if e["type"] == kind and e["batches"]:
            out[(e["topic"], e["partition"], e.get("log_dir"), e.get("hour"))] = e
    return out


def _spark(spark, paths: list[Path], by_hour: bool, several: bool) -> dict:
    out = {}
    for r in kseg.spark.stats(spark, [str(p) for p in paths], per_hour=by_hour).collect():
        r = r.asDict()
        hour = r["hour"].strftime("%Y-%m-%dT%H:00:00Z") if r.get("hour") else None
        out[(r["topic"], r["partition"], r["log_dir"] if several else None, hour)] = r
    return out


def _equal(spark, paths: list[Path], by_hour: bool = False, several: bool = False) -> None:
    local, remote = _local(paths, by_hour), _spark(spark, paths, by_hour, several)
    assert local.keys() == remote.keys()
    for key, mine in local.items():
        theirs = remote[key]
        for f in SAME:
            assert mine[f] == theirs[f], (key, f)
        for f in SHARES:
            assert mine[f] == pytest.approx(theirs[f]), (key, f)


@pytest.mark.parametrize("by_hour", [False, True])
def test_local_stats_equal_spark_stats_on_the_fixture_tree(spark, tree, by_hour):
    _equal(spark, [tree], by_hour)


def test_local_stats_equal_spark_stats_on_real_brokers(spark, real_root):
    _equal(spark, [real_root], several=True)


def test_local_stats_equal_spark_stats_on_damaged_copies(spark, corrupt_cases):
    dirs = [c.partition_dir for c in corrupt_cases if c.file.suffix == ".log"]
    _equal(spark, dirs, several=False)
