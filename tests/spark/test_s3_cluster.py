"""Spark at scale, for real: s3:// URIs from an S3 API server (moto, on 127.0.0.1) in every mode of
the source, and `kseg spark export|verify|stats` submitted with spark-submit to a standalone
cluster (a master and two workers: executors in their own JVMs and Python processes) reading
s3://. Every answer is compared with the single-process core on the local copy of the same data.
"""

from __future__ import annotations

import subprocess
import sys

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kseg.spark
from tests.helpers import doc, events
from tests.spark.services import BUCKET, workers_with_tasks
from tests.spark.test_spark import _rows, expected_records

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def on_s3(s3, tree, corrupt_cases):
    """The clean fixture tree and the damaged one, uploaded: {local root: s3:// URI}."""
    damaged = corrupt_cases[0].partition_dir.parent
    return {tree: s3.upload(tree, "tree"), damaged: s3.upload(damaged, "damaged")}


def _norm(found: list[dict], root: str) -> list[tuple]:
    return sorted(
        tuple((k, str(v).replace(root, "<root>")) for k, v in sorted(f.items())) for f in found
    )


@pytest.mark.parametrize(
    "mode, options",
    [
        ("records", {"includeHeaders": True, "segmentColumns": True, "includeControl": True}),
        ("batches", {"computeUncompressed": True}),
        ("segments", {}),
        ("findings", {"deep": True}),
    ],
)
def test_every_mode_reads_s3_row_for_row(spark, on_s3, mode, options):
    """`spark.read.format("kseg").load("s3://...")`: the local copy's rows, clean and damaged."""
    for root, uri in on_s3.items():
        df = spark.read.format("kseg").option("mode", mode)
        for k, v in options.items():
            df = df.option(k, str(v).lower())
        remote = _rows(df.load(uri), uri)
        local = _rows(kseg.spark.read(spark, [str(root)], mode=mode, **options), str(root))
        assert remote and remote == local, (mode, uri)


def _core_findings(root) -> tuple[list[dict], int]:
    from tests.helpers import run_kseg

    proc = run_kseg("verify", root, "--deep", "-f", "json")
    evs = events(proc.stdout)
    found = [{k: v for k, v in e.items() if k != "type"} for e in evs if e["type"] == "finding"]
    return found, proc.returncode


def _ok(cluster, proc) -> None:
    err = proc.stderr.decode(errors="replace")
    # kseg's own lines are on stdout: spark-submit merges the Python driver's stderr into it
    assert proc.returncode in (0, 4), proc.stdout.decode(errors="replace")[-2000:] + err[-4000:]
    assert "Traceback" not in err and "internal error" not in err, err[-4000:]
    # the job ran in executors of both workers, each its own JVM and Python workers
    assert workers_with_tasks(cluster, proc.stderr) == {"worker1", "worker2"}, err[-4000:]


@pytest.fixture(scope="module")
def readme_verify(cluster, on_s3, corrupt_cases, tmp_path_factory):
    """The README's spark-submit command, verbatim (only the master's port and the bucket are
    this cluster's), run once from a fresh directory whose .venv is this venv: `verify
    s3://... --deep -f json` on the damaged tree. Two tests read its answer (a cluster job
    costs a driver and two executor JVMs). None outside a venv (the recipe runs a venv's
    .venv/bin/python)."""
    if sys.prefix == sys.base_prefix:
        return None
    damaged = corrupt_cases[0].partition_dir.parent
    command = _readme_recipe()
    assert "PYSPARK_PYTHON=.venv/bin/python" in command and "s3://bucket/kafka-logs" in command
    command = command.replace("spark://127.0.0.1:7077", cluster.master)
    command = command.replace("s3://bucket/kafka-logs", on_s3[damaged])
    where = tmp_path_factory.mktemp("readme-recipe")
    (where / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    env = {k: v for k, v in cluster.env.items() if not k.startswith("PYSPARK_")}
    return subprocess.run(
        ["bash", "-c", command], cwd=where, env=env, capture_output=True, timeout=600
    )


def test_cluster_verify_on_s3_equals_kseg_verify(cluster, readme_verify, on_s3, corrupt_cases):
    """spark-submit ... verify s3://...: kseg verify's findings on the local copy, and its exit
    code: a corrupt object fails no job, it is a finding with its URI and byte position."""
    damaged = corrupt_cases[0].partition_dir.parent
    uri = on_s3[damaged]
    proc = readme_verify or cluster.submit("verify", uri, "--deep", "-f", "json")
    _ok(cluster, proc)
    evs = events(proc.stdout)
    found = [{k: v for k, v in e.items() if k != "type"} for e in evs if e["type"] == "finding"]
    want, code = _core_findings(damaged)
    assert code == proc.returncode == 4
    assert _norm(found, uri) == _norm(want, str(damaged)) and len(want) >= 8
    assert any(f["file"].startswith(uri) and f["position"] is not None for f in found)
    assert evs[-1]["type"] == "summary" and evs[-1]["partitions"] == len(corrupt_cases)


def test_cluster_export_to_s3_equals_the_core(cluster, s3, on_s3, tree):
    """spark-submit ... export s3://... --out s3://... (the Arrow writer, in the executors): the
    core's records, each once, and no leftover of the task attempts."""
    out = f"s3://{BUCKET}/exports/tree"
    proc = cluster.submit("export", on_s3[tree], "--out", out)
    _ok(cluster, proc)
    import pyarrow.fs as pafs

    fs, path = pafs.FileSystem.from_uri(out)
    names = [i.path for i in fs.get_file_info(pafs.FileSelector(path, recursive=True))]
    assert f"{path}/_SUCCESS" in names and not any("_temporary" in n for n in names)
    table = pq.read_table(path, filesystem=fs)
    micros = table.column("timestamp").cast(pa.int64()).to_pylist()
    got = {
        (
            str(r["topic"]),
            int(r["partition"]),
            r["offset"],
            r["key"],
            r["value"],
            None if us is None else us // 1000,
            r["timestampType"],
            tuple((h["key"], h["value"]) for h in r["headers"]) if r["headers"] else None,
        )
        for r, us in zip(table.to_pylist(), micros, strict=True)
    }
    want = expected_records(tree)
    assert table.num_rows == len(want) and got == want


def test_cluster_stats_on_s3_equal_the_local_run(cluster, spark, on_s3, tree, tmp_path):
    """spark-submit ... stats s3://...: the rows the single-process session computes locally.
    Submitted from a directory holding a `kseg/` that is not the installed one: the Python
    workers the driver starts (the data source's planning) import the installed kseg all the
    same (they start with PYTHONSAFEPATH=1; `python -m` used to put that directory first)."""
    (tmp_path / "kseg").mkdir()
    (tmp_path / "kseg" / "__init__.py").write_text('raise ImportError("not the installed kseg")\n')
    uri = on_s3[tree]
    proc = cluster.submit("stats", uri, "-f", "json", cwd=tmp_path)
    _ok(cluster, proc)
    got = [
        {k: v for k, v in e.items() if k != "type"}
        for e in map(orjson.loads, proc.stdout.splitlines())
        if e.get("type") == "stats"
    ]
    want = [r.asDict() for r in kseg.spark.stats(spark, [str(tree)]).collect()]
    assert got and _norm(got, uri) == _norm(want, str(tree))


def _readme_recipe() -> str:
    """The spark-submit command of docs/spark.md's "A standalone cluster", as written."""
    readme = doc("spark.md")
    section = readme.split("## A standalone cluster", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return block[block.index("PYSPARK_PYTHON=") :]


def test_readme_standalone_recipe_runs_as_written(readme_verify, on_s3, corrupt_cases):
    """The README's command, verbatim, from a fresh directory whose .venv is this venv
    (``readme_verify``): `PYSPARK_PYTHON=.venv/bin/python` is relative and the executors start
    in their own directories; kseg makes it absolute before Spark starts (it used to fail every
    task, exit 8, with a 10 KB line). The answer is kseg verify's on the local copy."""
    if readme_verify is None:
        pytest.skip("the recipe runs a venv's .venv/bin/python")
    damaged = corrupt_cases[0].partition_dir.parent
    proc = readme_verify
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 4, err[-4000:] + proc.stdout.decode(errors="replace")[-2000:]
    assert "Traceback" not in err and "internal error" not in err, err[-4000:]
    evs = events(proc.stdout)
    found = [{k: v for k, v in e.items() if k != "type"} for e in evs if e["type"] == "finding"]
    want, code = _core_findings(damaged)
    assert code == 4 and _norm(found, on_s3[damaged]) == _norm(want, str(damaged))
