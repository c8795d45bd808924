"""Every `kseg spark` command in every output format, as an operator runs it: the real entry
point as a subprocess, on one small partition. The runs attach to the test worker's Spark JVM
(``spark_cli``: tests/spark_gateway.py), as under spark-submit; the JVM's own start is tested
where it shows (`-q` below, tests/spark/test_spark_workers.py)."""

from __future__ import annotations

import shutil

import orjson
import pytest

from tests.helpers import events, run_kseg

pytestmark = pytest.mark.spark

SPARK = ("--master", "local[1]", "--conf", "spark.ui.enabled=false")


@pytest.fixture(scope="module")
def small_root(tree, tmp_path_factory):
    """A log.dirs root holding one small partition of the fixture tree (and its checkpoints)."""
    root = tmp_path_factory.mktemp("spark-cli") / "logs"
    root.mkdir()
    shutil.copytree(tree / "txn-0", root / "txn-0")
    return root


def _ok(proc) -> str:
    err = proc.stderr.decode()
    assert "Traceback" not in err and "internal error" not in err, err
    return err


@pytest.mark.parametrize("fmt", ["text", "json", "table"])
def test_spark_verify_every_format(spark_cli, small_root, fmt):
    proc = spark_cli.run("spark", "verify", small_root, "-f", fmt, *SPARK)
    _ok(proc)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    if fmt == "json":
        summary = events(out)[-1]
        assert summary["type"] == "summary" and summary["partitions"] == 1
        assert summary["exit_code"] == 0 and summary["errors"] == 0
    elif fmt == "text":
        assert out.splitlines()[-1].startswith("1 partitions: 0 errors, 0 warnings")
    else:
        assert "summary" in out and "partitions" in out


@pytest.mark.parametrize("fmt", ["table", "json", "text"])
def test_spark_stats_every_format(spark_cli, small_root, fmt):
    proc = spark_cli.run("spark", "stats", small_root, "-f", fmt, *SPARK)
    _ok(proc)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    if fmt == "json":
        (row,) = events(out)
        assert (row["type"], row["topic"], row["partition"]) == ("stats", "txn", 0)
        assert row["records"] > 0 and row["transactional_share"] > 0
    else:
        assert "txn" in out and "records" in out and "compression_ratio" in out


@pytest.mark.parametrize(
    ("fmt", "writer"), [("parquet", ()), ("parquet", ("--writer", "spark")), ("json", ())]
)
def test_spark_export_every_format(spark_cli, small_root, tmp_path, fmt, writer):
    out = tmp_path / "out"
    proc = spark_cli.run(
        "spark", "export", small_root, "--out", out, "--format", fmt, *writer, *SPARK
    )
    err = _ok(proc)
    assert proc.returncode == 0, err
    last = err.splitlines()[-1]
    assert last.startswith("kseg: wrote ") and int(last.split()[2]) > 0
    files = list(out.rglob(f"*.{fmt}"))
    assert files and (out / "topic=txn" / "partition=0").is_dir()
    if fmt == "json":
        keys = set()  # Spark's JSON writer leaves out null fields: look at every line
        for f in files:
            for line in f.read_bytes().splitlines():
                keys |= set(orjson.loads(line))
        assert {"key", "value", "offset", "timestamp", "timestampType", "headers"} <= keys


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (("--writer", "arrow", "--format", "json"), "--format json is written by Spark's writer"),
        (("--writer", "arrow", "--partition-by", "offset"), "topic and partition only"),
        (("--writer", "pyarrow"), "arrow or spark"),
    ],
)
def test_spark_export_writer_that_cannot_serve_is_usage(small_root, tmp_path, args, why):
    """Found before Spark starts: exit 16, one line, nothing written."""
    out = tmp_path / "out"
    proc = run_kseg("spark", "export", small_root, "--out", out, *args, *SPARK, timeout=60)
    err = proc.stderr.decode()
    assert proc.returncode == 16 and why in err and "--writer" in err, err
    assert err.count("\n") == 1 and not out.exists()


@pytest.mark.parametrize(
    "args",
    [
        ("spark", "verify"),
        ("spark", "stats"),
        ("spark", "stats", "-f", "json"),
        ("spark", "export", "--out", "OUT"),
    ],
)
def test_spark_on_nothing_is_one_line_and_usage_exit(tmp_path, args):
    """An empty directory, or partition dirs without segments: one line, exit 16, no Spark."""
    empty = tmp_path / "empty"
    empty.mkdir()
    args = tuple(str(tmp_path / "out") if a == "OUT" else a for a in args)
    proc = run_kseg(*args, empty, *SPARK, timeout=60)
    err = proc.stderr.decode()
    assert proc.returncode == 16, err
    assert proc.stdout == b""
    assert err.count("\n") == 1 and "no Kafka partition" in err and str(empty) in err
    if args[1] != "verify":  # partitions without any .log: nothing to read either
        (empty / "orders-0").mkdir()
        (empty / "orders-0" / "leader-epoch-checkpoint").write_text("0\n0\n")
        proc = run_kseg(*args, empty, *SPARK, timeout=60)
        err = proc.stderr.decode()
        assert proc.returncode == 16 and err.count("\n") == 1, err
        assert "no Kafka segment (.log file) found" in err


def test_spark_job_draws_a_bar_on_a_terminal(spark_cli, small_root):
    from tests.cli.test_progress import run_with_tty_stderr

    try:
        code, out, seen = run_with_tty_stderr(
            "spark", "stats", small_root, "-f", "json", *SPARK, timeout=300, env=spark_cli.env()
        )
    finally:
        spark_cli.reset()
    assert code == 0 and b"spark stats" in seen
    assert events(out.decode())[0]["topic"] == "txn"


def test_quiet_means_quiet(small_root):
    """`-q` used to let the JVM's start-up lines through (log4j's profile and WARN lines,
    "Setting default log level", the JDK's incubator-module warning): now stderr stays empty on
    a clean run, and stdout holds the same rows as without -q."""
    proc = run_kseg("spark", "stats", small_root, "-f", "json", "-q", *SPARK, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b""
    loud = run_kseg("spark", "stats", small_root, "-f", "json", *SPARK, timeout=300)
    assert loud.returncode == 0 and loud.stderr != b""  # the check above can fail
    assert sorted(events(proc.stdout.decode()), key=str) == sorted(
        events(loud.stdout.decode()), key=str
    )
