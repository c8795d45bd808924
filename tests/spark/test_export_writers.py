"""`spark export`'s two Parquet writers: pyarrow on the executors (kseg.spark.parquet_out) and
Spark's own write the same table, and the Arrow writer's commit step never shows a partial or
duplicated file (the session fixture is local[2,2]: a task may fail once and be retried)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kseg.spark
from kseg.outcome import BadOption
from kseg.spark import parquet_out
from tests.spark.test_spark import as_set, expected_records

pytestmark = pytest.mark.spark

ORDER = ("topic", "partition", "offset")


def _rows(spark, out) -> list:
    df = spark.read.parquet(str(out))
    return [tuple(r) for r in df.orderBy(*ORDER).collect()]


def _files(out) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())


def _parts(out) -> list[str]:
    return [f for f in _files(out) if f.endswith(".parquet")]


@pytest.mark.parametrize(
    ("partition_by", "headers"),
    [(("topic", "partition"), True), ((), True), (("partition",), False)],
)
def test_arrow_writer_equals_spark_writer(spark, tree, tmp_path, partition_by, headers):
    """Every fixture partition (every codec, legacy magic 0/1, transactions, log-append time,
    compaction): the same schema as Spark reads it, the same rows, the same directories."""
    outs = {}
    for writer in ("arrow", "spark"):
        outs[writer] = tmp_path / writer
        n = kseg.spark.export(
            spark,
            [str(tree)],
            str(outs[writer]),
            partition_by=partition_by,
            include_headers=headers,
            writer=writer,
        )
        assert n == len(expected_records(tree))
    arrow, sparks = (spark.read.parquet(str(outs[w])) for w in ("arrow", "spark"))
    assert arrow.schema == sparks.schema
    assert arrow.count() == sparks.count() == len(expected_records(tree))
    assert _rows(spark, outs["arrow"]) == _rows(spark, outs["spark"])
    if headers:
        assert as_set(arrow) == expected_records(tree)
    dirs = {
        w: sorted(str(p.relative_to(o)) for p in o.rglob("*") if p.is_dir())
        for w, o in outs.items()
    }
    assert dirs["arrow"] == dirs["spark"]
    assert (outs["arrow"] / "_SUCCESS").is_file() and not (outs["arrow"] / "_temporary").exists()
    # timestamps are INT64 micros, UTC (not Spark's deprecated INT96): any Parquet reader
    one = pq.ParquetFile(outs["arrow"] / _parts(outs["arrow"])[0])
    assert one.schema_arrow.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert not set(partition_by) & set(one.schema_arrow.names)


def test_real_broker_data_through_both_writers(spark, real_root, tmp_path):
    outs = [tmp_path / w for w in ("arrow", "spark")]
    for out, writer in zip(outs, ("arrow", "spark"), strict=True):
        kseg.spark.export(spark, [str(real_root)], str(out), writer=writer)
    assert _rows(spark, outs[0]) == _rows(spark, outs[1]) != []


def test_a_retried_task_is_committed_once(spark, tree, tmp_path):
    """Task 1's first attempt writes its whole file, then fails: Spark retries it, and only the
    retry's file is committed (one part file per task, each row once)."""
    out = tmp_path / "out"
    n = parquet_out.export(spark, [str(tree)], str(out), fail_task=1)
    assert n == len(expected_records(tree))
    parts = _parts(out)
    tasks = [p.rsplit("/", 1)[-1].split("-")[1] for p in parts]
    assert len(tasks) == len(set(tasks)) and "00001" in tasks
    assert as_set(spark.read.parquet(str(out))) == expected_records(tree)
    assert spark.read.parquet(str(out)).count() == n
    assert (out / "_SUCCESS").is_file() and not (out / "_temporary").exists()


def test_a_failed_job_leaves_no_part_file_and_the_old_output(spark, tree, tmp_path):
    out = tmp_path / "new"
    with pytest.raises(Exception, match="task 1 attempt 1 fails"):
        parquet_out.export(spark, [str(tree)], str(out), fail_task=1, fail_attempts=2)
    assert not out.exists()  # created by the job, removed with its _temporary

    old = tmp_path / "old"
    kseg.spark.export(spark, [str(tree)], str(old), topic="^orders$", writer="arrow")
    before = {f: (old / f).read_bytes() for f in _files(old)}
    assert before and "_SUCCESS" in before
    with pytest.raises(Exception, match="task 1 attempt 1 fails"):
        parquet_out.export(spark, [str(tree)], str(old), fail_task=1, fail_attempts=2)
    assert {f: (old / f).read_bytes() for f in _files(old)} == before


@pytest.mark.parametrize("writer", ["arrow", "spark"])
def test_an_existing_output_is_replaced(spark, tree, tmp_path, writer):
    """As Spark's writer has always done (overwrite mode): what --out held goes."""
    out = tmp_path / "out"
    (out / "topic=gone" / "partition=0").mkdir(parents=True)
    (out / "topic=gone" / "partition=0" / "part-0.parquet").write_bytes(b"old")
    (out / "keep.txt").write_text("x")
    n = kseg.spark.export(spark, [str(tree)], str(out), topic="^txn$", writer=writer)
    assert n == len(expected_records(tree, ["txn-0"])) > 0
    names = {p.name for p in out.iterdir()}
    assert "keep.txt" not in names and "topic=gone" not in names and "topic=txn" in names


def test_nothing_selected_writes_an_empty_table(spark, tree, tmp_path):
    out = tmp_path / "out"
    n = kseg.spark.export(
        spark, [str(tree)], str(out), partition_by=(), fromTime=1 << 60, writer="arrow"
    )
    assert n == 0 and spark.read.parquet(str(out)).count() == 0
    assert spark.read.parquet(str(out)).columns[:2] == ["key", "value"]


def test_what_the_arrow_writer_does_not_serve(spark, tree, tmp_path):
    for kw, why in [
        ({"fmt": "json"}, "Spark's writer only"),
        ({"partition_by": ("offset",)}, "not offset"),
        ({"writer": "pandas"}, "arrow or spark"),
    ]:
        with pytest.raises(BadOption, match=why):
            kseg.spark.export(spark, [str(tree)], str(tmp_path / "x"), **{"writer": "arrow", **kw})
    assert not (tmp_path / "x").exists()
    assert parquet_out.unserved("parquet", ("topic",), "s3a://bucket/x", "snappy")
    assert parquet_out.unserved("parquet", (), str(tmp_path), "lzo")
    assert parquet_out.unserved("parquet", ("partition", "topic"), str(tmp_path), "zstd") is None
    # by default, Spark's writer takes what the Arrow writer does not serve
    out = tmp_path / "by-offset"
    n = kseg.spark.export(
        spark, [str(tree)], str(out), topic="^txn$", partition_by=("timestampType",)
    )
    assert n > 0 and (out / "timestampType=0").is_dir()


def test_uri_output_goes_through_pyarrow_fs(spark, tree, tmp_path):
    out = tmp_path / "out"
    n = kseg.spark.export(spark, [str(tree)], "file://" + str(out), writer="arrow")
    assert n == len(expected_records(tree)) and (out / "_SUCCESS").is_file()
    assert as_set(spark.read.parquet(str(out))) == expected_records(tree)


def test_partition_values_are_escaped_as_spark_does():
    assert parquet_out.escape_path_name("a.b_c-1") == "a.b_c-1"
    assert parquet_out.escape_path_name("a/b=c%") == "a%2Fb%3Dc%25"
