"""Record timestamps Kafka accepts (any long) but no date holds: null in the row and a warning,
never an exception; dump and verify --deep handle the same file."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kseg
from kseg.format.timestamps import MAX_MS, MIN_MS
from kseg.spark import planning
from kseg.spark.arrow import batch_rows, record_batches
from tests.helpers import events, run_kseg

pytestmark = pytest.mark.spark

ODD = [2**63 - 10, -(2**63) + 10, MAX_MS + 1, MIN_MS - 1]
GOOD = [1_700_000_000_000, MAX_MS, MIN_MS, -1500]


@pytest.fixture(scope="module")
def odd_partition(tmp_path_factory):
    pdir = tmp_path_factory.mktemp("odd") / "odd-0"
    with kseg.LogWriter(pdir, magic=2) as w:
        for i, ts in enumerate(GOOD[:1] + ODD + GOOD[1:]):
            w.append([kseg.Record(key=b"k%d" % i, value=b"v", timestamp=ts)])
    return pdir


def test_arrow_rows_null_the_timestamps_no_date_holds(odd_partition, caplog):
    tasks = planning.plan([str(odd_partition)], planning.Prune())
    rows = [r for t in tasks for b in record_batches(t) for r in b.to_pylist()]
    got = {r["key"]: r["timestamp"] for r in rows}
    assert len(rows) == len(GOOD) + len(ODD)
    for i in range(1, 1 + len(ODD)):
        assert got[b"k%d" % i] is None
    assert got[b"k0"] is not None and got[b"k%d" % (len(ODD) + 1)].year == 9999
    assert got[b"k%d" % (len(ODD) + 2)].year == 1
    # executors never print: the warnings go through logging ("kseg.spark")
    err = "\n".join(r.getMessage() for r in caplog.records if r.name == "kseg.spark")
    assert "outside the years 0001-9999" in err and f"{len(ODD)} record timestamps" in err
    # with no logging configured (an executor's Python worker) they reach stderr
    code = (
        "import sys; from kseg.spark import planning; from kseg.spark.arrow import record_batches;"
        "[b for t in planning.plan([sys.argv[1]], planning.Prune()) for b in record_batches(t)]"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(odd_partition)], capture_output=True)
    assert proc.returncode == 0 and b"kseg: " in proc.stderr and b"record timestamps" in proc.stderr
    # batch rows keep the raw longs
    raw = [r["max_timestamp"] for t in tasks for b in batch_rows(t) for r in b.to_pylist()]
    assert raw == GOOD[:1] + ODD + GOOD[1:]


def test_spark_source_and_stats_per_hour(spark, odd_partition):
    df = kseg.spark.read(spark, [str(odd_partition)])
    assert df.where("timestamp IS NULL").count() == len(ODD)
    hours = kseg.spark.stats(spark, [str(odd_partition)], per_hour=True).collect()
    assert sum(r.records for r in hours) == len(GOOD) + len(ODD)


@pytest.mark.parametrize("fmt", ["text", "json", "table"])
def test_dump_and_deep_verify_show_them_as_numbers(odd_partition, fmt):
    proc = run_kseg("dump", odd_partition / "00000000000000000000.log", "-f", fmt)
    out = proc.stdout.decode()
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    for ts in ODD:
        assert str(ts) in out
    if fmt == "json":
        assert [e["timestamp"] for e in events(out) if e["type"] == "record"] == (
            GOOD[:1] + ODD + GOOD[1:]
        )
    proc = run_kseg("verify", "--deep", odd_partition, "-f", "json")
    found = [e for e in events(proc.stdout.decode()) if e.get("kind") == "timestamp_out_of_range"]
    assert len(found) == len(ODD) and all(f["severity"] == "info" for f in found)


def test_offsets_past_2_63_are_null_not_an_exception(tmp_path, caplog):
    """base offset + offset delta past 2^63-1 (a lie a valid CRC can carry)."""
    pdir = tmp_path / "x-0"
    with kseg.LogWriter(pdir, base_offset=2**63 - 3) as w:
        w.append([kseg.Record(value=b"a", timestamp=1), kseg.Record(value=b"b", timestamp=2)])
        w.append([kseg.Record(value=b"c", timestamp=3), kseg.Record(value=b"d", timestamp=4)])
    tasks = planning.plan([str(pdir)], planning.Prune())
    offsets = [o for t in tasks for b in record_batches(t) for o in b.column("offset").to_pylist()]
    assert offsets == [2**63 - 3, 2**63 - 2, 2**63 - 1, None]
    lasts = [o for t in tasks for b in batch_rows(t) for o in b.column("last_offset").to_pylist()]
    assert lasts == [2**63 - 2, None]
    assert "past 2^63-1" in caplog.text
    proc = run_kseg("dump", pdir, "-f", "json")
    assert proc.returncode == 0 and str(2**63).encode() in proc.stdout


def test_a_partition_number_past_int32_is_not_a_partition(tree, tmp_path):
    import shutil

    shutil.copytree(tree / "orders-0", tmp_path / "orders-99999999999")
    assert planning.plan([str(tmp_path)], planning.Prune()) == []
