"""The kseg Spark source's ``isolation`` option and `kseg spark export --isolation`: the rows
of read_committed are the records `kseg dump --isolation read_committed` shows, also when a
segment is split into several tasks (each task decides its batches alone)."""

from __future__ import annotations

import orjson
import pytest

import kseg
from kseg.fixtures.transactions import build_control_only, build_payments
from tests.helpers import run_kseg

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("iso-spark")
    build_payments(root / "payments-0")
    build_control_only(root / "audit-0")
    return root


def _dump(root, *args) -> set[tuple]:
    proc = run_kseg("dump", root, "-f", "json", *args)
    assert proc.returncode == 0, proc.stderr
    return {
        (e["topic"], e["partition"], e["offset"], e["key"])
        for e in map(orjson.loads, proc.stdout.splitlines())
        if e["type"] == "record"
    }


def _rows(df) -> set[tuple]:
    return {
        (r.topic, r.partition, r.offset, r.key.decode())
        for r in df.select("topic", "partition", "offset", "key").collect()
    }


@pytest.mark.parametrize("max_bytes", [None, 200])  # 200: a task per few batches
def test_source_read_committed_is_dumps(spark, root, max_bytes):
    want = _dump(root, "--isolation", "read_committed")
    assert len(want) == 15
    df = kseg.spark.read(
        spark, [str(root)], isolation="read_committed", maxPartitionBytes=max_bytes
    )
    assert _rows(df) == want
    assert _rows(kseg.spark.read(spark, [str(root)])) == _dump(root)  # default: every record


def test_source_read_committed_with_search_and_control(spark, root):
    want = _dump(root, "--isolation", "read_committed", "--key", "^(a|b)-")
    got = kseg.spark.read(
        spark, [str(root)], isolation="read_committed", key="^(a|b)-", includeControl=True
    )
    assert _rows(got) == want and want


def test_source_isolation_is_checked(spark, root):
    with pytest.raises(Exception, match="isolation"):
        kseg.spark.read(spark, [str(root)], isolation="serializable").count()
    with pytest.raises(Exception, match="mode=records"):
        kseg.spark.read(spark, [str(root)], mode="batches", isolation="read_committed").count()


@pytest.mark.parametrize("writer", ["arrow", "spark"])
def test_export_read_committed(spark, root, tmp_path, writer):
    out = tmp_path / "out"
    n = kseg.spark.export(spark, [str(root)], str(out), writer=writer, isolation="read_committed")
    assert n == 15
    assert _rows(spark.read.parquet(str(out))) == _dump(root, "--isolation", "read_committed")


def test_cli_export_read_committed(spark_cli, root, tmp_path):
    out = tmp_path / "cli-out"
    proc = spark_cli.run(
        "spark", "export", root, "--out", out, "--isolation", "read_committed", "--quiet",
        "--master", "local[1]", timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert b"wrote 15 records" in proc.stderr
