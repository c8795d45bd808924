"""Issue 35, item 7: a dangling or looping symlink, or a FIFO, named like a segment is skipped by
every Spark job as by the local commands: a line naming it, the rest done, the same exit code
(`spark stats` also says the invalid data `kseg stats` reports: 12 for both). One JVM per job."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.helpers import events, run_kseg
from tests.verify.test_verify import _corrupt_middle_segment

pytestmark = pytest.mark.spark

SPARK = ("-q", "--master", "local[1]", "--conf", "spark.ui.enabled=false")


def _special(pdir) -> list:
    dangling, fifo = pdir / "00000000000000099999.log", pdir / "00000000000000099996.log"
    a, b = pdir / "00000000000000099997.log", pdir / "00000000000000099998.log"
    dangling.symlink_to(pdir.parent / "gone.log")
    a.symlink_to(b)
    b.symlink_to(a)
    os.mkfifo(fifo)
    return [fifo, a, b, dangling]


JOBS = {  # job: (its local command, a corrupt partition beside?)
    "stats": (("stats", "-f", "json"), True),
    "verify": (("verify", "-f", "json"), True),
    "export": (("dump", "--batches-only", "-f", "json"), False),
}


@pytest.mark.parametrize("job", sorted(JOBS))
def test_spark_jobs_skip_special_files_with_the_local_exit_code(spark_cli, tree, tmp_path, job):
    local_args, corrupt = JOBS[job]
    root = tmp_path / "logs"
    shutil.copytree(tree / "orders-0", root / "orders-0")
    outside = tmp_path / "outside"  # read through links: a partition dir, a .log, an .index
    shutil.copytree(tree / "orders-1", outside / "orders-1")
    (root / "orders-1").symlink_to(outside / "orders-1")
    for name in ("00000000000000000000.log", "00000000000000000000.index"):
        shutil.move(root / "orders-0" / name, outside / name)
        (root / "orders-0" / name).symlink_to(outside / name)
    if corrupt:
        pdir, _, _ = _corrupt_middle_segment(tree, tmp_path)  # tmp_path/logs/txn-0
        assert pdir.parent == root
    special = _special(root / "orders-0")
    local = run_kseg(*local_args, root, timeout=60)
    extra = ("--out", tmp_path / "out") if job == "export" else ("-f", "json")
    proc = spark_cli.run("spark", job, root, *extra, *SPARK, timeout=600)
    err = proc.stderr.decode()
    assert "Traceback" not in err and "internal error" not in err, err[-3000:]
    assert proc.returncode == local.returncode == (12 if corrupt else 8), (local.stderr, err)
    said = (proc.stdout + proc.stderr).decode()
    for path in special:  # each named, once per path at most on stderr
        assert str(path) in said, said[-3000:]
        assert len([line for line in err.splitlines() if f"{path}:" in line]) <= 1
    records = {
        (e["topic"], e["partition"]): e["records"]
        for e in events(run_kseg("stats", root, "-f", "json").stdout)
        if e["type"] == "partition_stats"
    }
    if job == "stats":
        rows = {
            (r["topic"], r["partition"]): r for r in events(proc.stdout) if r["type"] == "stats"
        }
        assert {k: r["records"] for k, r in rows.items()} == records
        assert set(rows) == {("orders", 0), ("orders", 1), ("txn", 0)}
        assert f"kseg: {pdir}/" in err and "crc" in err
    elif job == "export":
        last = err.splitlines()[-1]
        assert last.endswith("; 4 unreadable segments left out"), err
        assert f"wrote {sum(records.values())} records" in last
        assert (tmp_path / "out" / "_SUCCESS").exists()
