"""The `kseg` Spark source reads Kafka 0.7 partitions: offset = byte offset, key and timestamp
null. The decoder and planner are checked without Spark too (tests/spark runs only with it)."""

from __future__ import annotations

from pathlib import Path

import pytest

import kseg
from kseg.fixtures.kafka07 import build_kafka07_tree
from kseg.format import kafka07 as k7
from kseg.spark import planning
from kseg.spark.arrow import kafka07_record_batches


@pytest.fixture(scope="module")
def log07(tmp_path_factory) -> Path:
    return build_kafka07_tree(tmp_path_factory.mktemp("k07") / "logs")


def expected(root: Path) -> set[tuple]:
    """(topic, partition, byte offset, payload) for every message, from the format core."""
    out = set()
    for pdir in sorted(p for p in root.iterdir() if p.is_dir()):
        topic, part = pdir.name.rsplit("-", 1)
        for seg in sorted(pdir.glob("*.kafka")):
            base = int(seg.name[:20])
            for e in k7.entries(seg.read_bytes(), base=base):
                if e.is_compressed:
                    values = [m.payload for m in k7.inner_messages(e)]
                else:
                    with e.payload() as p:
                        values = [bytes(p)]
                for v in values:
                    out.add((topic, int(part), e.offset, v))
    return out


def test_planning_and_decoder_without_spark(log07):
    tasks = planning.plan([str(log07)], planning.Prune(), kafka07=True)
    assert tasks and all(t.kind == planning.KAFKA07 for t in tasks)
    assert planning.plan([str(log07)], planning.Prune()) == []  # other modes: no 0.7 tasks
    got = set()
    for t in tasks:
        for rb in kafka07_record_batches(t, segment_columns=True):
            d = rb.to_pydict()
            assert set(d["key"]) == {None} and set(d["timestamp"]) == {None}
            assert set(d["timestampType"]) == {-1}
            for topic, part, off, v, pos in zip(
                d["topic"], d["partition"], d["offset"], d["value"], d["position"], strict=True
            ):
                assert off == t.base_offset + pos
                got.add((topic, part, off, v))
    assert got == expected(log07)
    pruned = planning.plan(
        [str(log07)], planning.Prune(topic="events", from_offset=1000, to_offset=1500), kafka07=True
    )
    assert 0 < len(pruned) < len([t for t in tasks if t.topic == "events"])
    t = tasks[0]
    assert list(kafka07_record_batches(t, from_time=0)) == []  # no timestamps in 0.7


@pytest.mark.spark
def test_spark_reads_07_partitions(spark, log07):
    df = kseg.spark.read(spark, [str(log07)])
    rows = df.collect()
    got = {(r.topic, r.partition, r.offset, bytes(r.value)) for r in rows}
    assert got == expected(log07)
    assert {r.key for r in rows} == {None} and {r.timestamp for r in rows} == {None}
    assert len(rows) == len(got)  # no duplicate (offset, payload) pairs in the fixture


@pytest.mark.spark
def test_spark_export_of_a_07_log_dir(spark_cli, log07, tmp_path):
    """`kseg spark export` (the real entry point) exports a 0.7 archive with the same job."""
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    r = spark_cli.run("spark", "export", log07, "--out", out, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = pq.read_table(out).to_pylist()
    got = {(r["topic"], int(r["partition"]), r["offset"], r["value"]) for r in rows}
    assert got == expected(log07) and len(rows) == len(got)
    assert {r["timestamp"] for r in rows} == {None} and {r["key"] for r in rows} == {None}
    # stats/verify on Spark read .log segments only: said, 16, as for a root without any
    r = spark_cli.run("spark", "stats", log07, timeout=600)
    assert r.returncode == 16 and b"no Kafka segment (.log file)" in r.stderr
