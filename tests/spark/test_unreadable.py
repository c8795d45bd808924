"""A segment that cannot be read fails no job: the records of everything else, a warning naming
it (and, from the export, a line per segment and exit 8), and a finding from verify. Made
deterministic with a directory named like a segment (listed, left out of the plan on the driver:
no regular file, kseg.spark.planning.unreadable_segments) and an S3 object deleted after planning
(a task's read fails on the executor)."""

from __future__ import annotations

import logging
import shutil

import pytest

import kseg.spark
from kseg.cli.exit import exit_status
from kseg.spark import arrow, planning
from tests.spark.test_spark import expected_records, spark_records

pytestmark = pytest.mark.spark

HOLE = "00000000000000099999.log"


@pytest.fixture(scope="module")
def with_hole(tree, tmp_path_factory):
    """A copy of the fixture tree whose orders-0 also lists a 'segment' that is a directory."""
    root = tmp_path_factory.mktemp("hole") / "logs"
    shutil.copytree(tree, root)
    (root / "orders-0" / HOLE).mkdir()
    return root


def test_records_skip_an_unreadable_segment_and_keep_the_rest(spark, tree, with_hole):
    assert not any(t.path.endswith(HOLE) for t in planning.plan([str(with_hole)], planning.Prune()))
    (said,) = planning.unreadable_segments([str(with_hole)], planning.Prune())
    assert said.startswith(f"{with_hole / 'orders-0' / HOLE}: unreadable: a directory")
    assert spark_records(spark, with_hole) == expected_records(tree)


def test_verify_reports_an_unreadable_segment(spark, with_hole):
    found, summary = kseg.spark.verify(spark, [str(with_hole)])
    hole = [f for f in found if f["file"].endswith(HOLE)]
    assert [(f["severity"], f["kind"]) for f in hole] == [("error", "unreadable")]
    assert exit_status(summary["outcome"]) & 8


def test_arrow_export_says_which_segment_it_left_out(spark, tree, with_hole, tmp_path):
    unreadable: list[str] = []
    n = kseg.spark.export(spark, [str(with_hole)], str(tmp_path / "out"), unreadable=unreadable)
    assert n == len(expected_records(tree))
    assert len(unreadable) == 1 and unreadable[0].startswith(str(with_hole / "orders-0" / HOLE))
    assert "not a regular file" in unreadable[0]


def test_spark_export_cli_exits_8_and_names_the_segment(spark_cli, with_hole, tmp_path):
    out = tmp_path / "out"
    proc = spark_cli.run(
        "spark", "export", with_hole, "--out", out, "-q", "--master", "local[1]",
        "--conf", "spark.ui.enabled=false", timeout=300,
    )  # fmt: skip
    err = proc.stderr.decode()
    assert proc.returncode == 8, err
    lines = err.splitlines()
    assert any(
        line.startswith(f"kseg: {with_hole / 'orders-0' / HOLE}: unreadable") for line in lines
    )
    assert lines[-1].endswith("; 1 unreadable segments left out"), err
    assert (out / "_SUCCESS").exists()


def test_an_object_gone_after_planning_is_a_warning(s3, tree, caplog):
    """On an executor (the task's functions, no Spark): the object a task names was deleted
    after planning: no rows, no exception, one warning naming the URI."""
    uri = s3.upload(tree / "orders-1", "gone/orders-1")
    tasks = [t for t in planning.plan([uri], planning.Prune()) if t.end > t.start]
    assert tasks
    key = tasks[0].path.removeprefix("s3://kseg/")
    s3.client().delete_object(Bucket="kseg", Key=key)
    arrow.UNREADABLE.clear()
    with caplog.at_level(logging.WARNING, logger="kseg.spark"):
        rows = list(arrow.record_batches(tasks[0]))
    assert rows == []
    assert len(arrow.UNREADABLE) == 1 and arrow.UNREADABLE[0].startswith(f"{tasks[0].path}: ")
    assert tasks[0].path in caplog.text
