"""`kseg spark replicas`: on every fixture scenario of kseg.fixtures.replicas, the same events
and outcome as `kseg replicas`' library (kseg.replicas.run.ReplicasRun), every field included;
through the real entry point, the same JSON and exit codes."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from kseg.fixtures import replicas as R
from kseg.outcome import Outcome
from kseg.replicas.run import ReplicasRun
from kseg.storage.tree import resolve
from tests.helpers import events, run_kseg

pytestmark = pytest.mark.spark

SPARK = ("--master", "local[1]", "--conf", "spark.ui.enabled=false")


def local(directory: Path) -> tuple[list[dict], Outcome]:
    run = ReplicasRun(resolve([directory]))
    evs = list(run.events())
    return evs, run.outcome


def on_spark(spark, paths: list[str], **kw) -> tuple[list[dict], Outcome]:
    from kseg.spark.replicas import SparkReplicasRun

    run = SparkReplicasRun(spark, paths, **kw)
    evs = list(run.events())
    return evs, run.outcome


@pytest.mark.parametrize("name", sorted(R.SCENARIOS))
def test_spark_replicas_equals_local(spark, tmp_path, name):
    R.build(tmp_path, name)
    want, outcome = local(tmp_path)
    got, found = on_spark(spark, [str(tmp_path)])
    assert got == want
    assert found == outcome
    bad = any(s in ("diverged", "damaged") for s in R.SCENARIOS[name].status.values())
    assert found == (Outcome.INVALID_DATA if bad else Outcome.OK)


def test_spark_replicas_unclean_shutdown_recovery_cut(spark, tmp_path):
    """Without .kafka_cleanshutdown Kafka's recovery cuts the damaged replica at its bad batch:
    its log end (10) comes from kseg verify's prediction, on the executor, as locally."""
    R.build(tmp_path, "damaged")
    (tmp_path / "broker-2" / ".kafka_cleanshutdown").unlink()
    (tmp_path / "broker-2" / "recovery-point-offset-checkpoint").write_bytes(
        R.encode_offset_checkpoint([R.TopicPartitionOffset(R.TOPIC, R.PARTITION, 0)])
    )
    want, outcome = local(tmp_path)
    got, found = on_spark(spark, [str(tmp_path)])
    assert got == want and found == outcome
    row = next(e for e in got if e["type"] == "replica" and e["log_dir"].endswith("broker-2"))
    assert (row["log_end_offset"], row["status"]) == (10, "damaged")


def test_spark_replicas_leader_given_and_roots_in_order(spark, tmp_path):
    """--leader and several roots given one by one (their order kept), as locally."""
    R.build(tmp_path, "unclean")
    roots = [tmp_path / "broker-3", tmp_path / "broker-1", tmp_path / "broker-2"]
    run = ReplicasRun(resolve(roots), leader=roots[1])
    want = list(run.events())
    got, found = on_spark(spark, [str(r) for r in roots], leader=roots[1])
    assert got == want and found == run.outcome
    assert [e["log_dir"] for e in got if e["type"] == "replica"] == [
        str(roots[1]),
        str(roots[0]),
        str(roots[2]),
    ]


def test_spark_replicas_reads_uris(spark, tmp_path):
    """file:// URIs (read through pyarrow.fs, as s3:// is): the same answer, the paths as
    URIs."""
    R.build(tmp_path, "twice")
    want, outcome = local(tmp_path)
    got, found = on_spark(spark, [f"file://{tmp_path}"])
    text = orjson.dumps(got).decode().replace(f"file://{tmp_path}", str(tmp_path))
    assert orjson.loads(text) == want and found == outcome


def _ok(proc) -> None:
    err = proc.stderr.decode()
    assert "Traceback" not in err and "internal error" not in err, err


def test_spark_replicas_cli_json_and_exit_4(spark_cli, tmp_path):
    R.build(tmp_path, "unclean")
    want, _ = local(tmp_path)
    proc = spark_cli.run("spark", "replicas", tmp_path, "-f", "json", *SPARK)
    _ok(proc)
    assert proc.returncode == 4, proc.stderr
    assert events(proc.stdout.decode()) == want


def test_spark_replicas_cli_consistent_exit_0(spark_cli, tmp_path):
    R.build(tmp_path, "lag")
    proc = spark_cli.run("spark", "replicas", tmp_path, *SPARK)
    _ok(proc)
    assert proc.returncode == 0, proc.stderr
    assert "behind" in proc.stdout.decode()


def test_spark_replicas_one_root_is_usage_16_before_spark(tmp_path):
    """No partition with replicas in two or more roots: exit 16 before a JVM starts (the
    check runs first; no Spark option is even needed)."""
    R.build(tmp_path, "match")
    proc = run_kseg("spark", "replicas", tmp_path / "broker-1", "--master", "bogus://x")
    _ok(proc)
    assert proc.returncode == 16
    assert b"two or more of the roots" in proc.stderr


def test_spark_replicas_leader_not_a_root_is_usage_16(tmp_path):
    R.build(tmp_path, "match")
    proc = run_kseg("spark", "replicas", tmp_path, "--leader", tmp_path / "nowhere",
                    "--master", "bogus://x")  # fmt: skip
    _ok(proc)
    assert proc.returncode == 16
    assert b"--leader" in proc.stderr


def test_spark_replicas_follower_above_leaders_loaded_epoch(spark, tmp_path):
    """A follower whose latest epoch is above the leader's loaded cache (--leader a replica
    whose own entry loading dropped) truncates to the leader's end as locally (the leader's
    cache as it leads, kseg.replicas.rejoin.elected): Spark's loss is that truncation's,
    not the whole log kept."""
    R.write_root(tmp_path / "broker-1", 1, R.ReplicaSpec((R.Run(0, 10), R.Run(1, 10, "b"))))
    R.write_root(tmp_path / "broker-2", 2, R.ReplicaSpec((R.Run(0, 10),)))
    lead = tmp_path / "broker-2"
    run = ReplicasRun(resolve([tmp_path]), leader=lead)
    want = list(run.events())
    row = next(e for e in want if e["type"] == "replica" and e["role"] == "follower")
    assert (row["truncate_to"], row["lost_records"]) == (10, 10)
    got, found = on_spark(spark, [str(tmp_path)], leader=lead)
    assert got == want and found == run.outcome
