"""The Spark source and jobs equal the single-process core, row for row."""

from __future__ import annotations

import struct

import pytest

import kseg
from kseg.cli.exit import exit_status
from kseg.fixtures import PARTITIONS
from kseg.spark import planning
from kseg.spark.arrow import TIMESTAMP_TYPE_IDS
from kseg.storage.tree import segment_logs
from tests.helpers import copy_partition, events, run_cli

pytestmark = pytest.mark.spark


def expected_records(root, names=PARTITIONS, include_control=False):
    out = set()
    for name in names:
        topic, part = name.rsplit("-", 1)
        for log in segment_logs(root / name):
            for b in kseg.read_batches(log):
                if b.is_control and not include_control:
                    continue
                for r in b.records():
                    headers = tuple((k, v) for k, v in r.headers) or None
                    out.add(
                        (
                            topic,
                            int(part),
                            r.offset,
                            r.key,
                            r.value,
                            r.timestamp,
                            TIMESTAMP_TYPE_IDS[r.timestamp_type],
                            headers,
                        )
                    )
    return out


def as_set(df) -> set:
    """Rows of a records DataFrame as the tuples expected_records() makes."""
    rows = df.selectExpr("*", "unix_micros(timestamp) AS ts_us").collect()

    def b(v):
        return None if v is None else bytes(v)

    return {
        (
            r.topic,
            r.partition,
            r.offset,
            b(r.key),
            b(r.value),
            r.ts_us // 1000,
            r.timestampType,
            None if r.headers is None else tuple((h.key, b(h.value)) for h in r.headers),
        )
        for r in rows
    }


def spark_records(spark, path, **options):
    return as_set(kseg.spark.read(spark, [str(path)], includeHeaders=True, **options))


def test_schema_is_sparks_kafka_source(spark, tree):
    df = kseg.spark.read(spark, [str(tree)], includeHeaders=True)
    got = [(f.name, f.dataType.simpleString(), f.nullable) for f in df.schema.fields]
    assert got == [
        ("key", "binary", True),
        ("value", "binary", True),
        ("topic", "string", True),
        ("partition", "int", True),
        ("offset", "bigint", True),
        ("timestamp", "timestamp", True),
        ("timestampType", "int", True),
        ("headers", "array<struct<key:string,value:binary>>", True),
    ]
    plain = spark.read.format("kseg").load(str(tree))  # raw API, no kseg session helpers
    assert plain.columns == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
    ]


def test_records_equal_the_core_row_for_row(spark, tree):
    assert spark_records(spark, tree) == expected_records(tree)
    with_control = spark_records(spark, tree, includeControl=True)
    assert with_control == expected_records(tree, include_control=True)
    assert len(with_control) > len(expected_records(tree))


def test_batches_equal_dump(spark, tree, monkeypatch, capsysbinary):
    code, out, _ = run_cli(monkeypatch, capsysbinary, "dump", tree, "--batches-only", "-f", "json")
    want = sorted(
        (
            e["file"],
            e["position"],
            e["base_offset"],
            e["last_offset"],
            e["count"],
            e["compression"],
            e["crc"],
            e["max_timestamp"],
        )
        for e in events(out)
        if e["type"] == "batch"
    )
    rows = kseg.spark.read(spark, [str(tree)], mode="batches").collect()
    got = sorted(
        (
            r.file,
            r.position,
            r.base_offset,
            r.last_offset,
            r["count"],
            r.compression,
            r.crc,
            r.max_timestamp,
        )
        for r in rows
    )
    assert got == want


def test_findings_equal_kseg_verify(spark, corrupt_cases, monkeypatch, capsysbinary):
    root = corrupt_cases[0].partition_dir.parent
    code, out, _ = run_cli(monkeypatch, capsysbinary, "verify", root, "--deep", "-f", "json")
    want = sorted(
        (e["severity"], e["kind"], e["file"], e["position"], e["offset"], e["message"])
        for e in events(out)
        if e["type"] == "finding"
    )
    found, summary = kseg.spark.verify(spark, [str(root)], deep=True)
    got = sorted(
        (f["severity"], f["kind"], f["file"], f["position"], f["offset"], f["message"])
        for f in found
    )
    assert got == want and len(got) >= 8
    assert exit_status(summary["outcome"]) == code == 4
    assert summary["partitions"] == len(corrupt_cases)


def test_clean_tree_verifies_clean_on_spark(spark, tree, monkeypatch, capsysbinary):
    code, out, _ = run_cli(
        monkeypatch, capsysbinary, "spark", "verify", tree, "-f", "json", "--master", "local[2]"
    )
    evs = events(out)
    assert code == 0 and evs[-1]["type"] == "summary" and evs[-1]["errors"] == 0
    assert evs[-1]["partitions"] == len(PARTITIONS)


def _big_partition(tmp_path):
    pdir = tmp_path / "big-0"
    with kseg.LogWriter(pdir, index_interval_bytes=4096, clock=lambda: 1_700_000_000_000) as w:
        for b in range(400):
            w.append(
                [
                    kseg.Record(
                        key=b"k%d" % i, value=b"%0200d" % i, timestamp=1_700_000_000_000 + b
                    )
                    for i in range(20)
                ],
                compression=["none", "gzip"][b % 2],
            )
    return pdir


def test_large_segment_is_split_at_batch_boundaries(spark, tmp_path):
    pdir = _big_partition(tmp_path)
    log = segment_logs(pdir)[0]
    tasks = planning.plan([str(pdir)], planning.Prune(), max_bytes=64 << 10)
    assert len(tasks) > 5
    starts = {b.position for b in kseg.read_batches(log)}
    assert all(t.start in starts for t in tasks) and tasks[-1].end == log.stat().st_size
    assert [t.start for t in tasks[1:]] == [t.end for t in tasks[:-1]]
    got = spark_records(spark, pdir, maxPartitionBytes=64 << 10)
    assert got == expected_records(tmp_path, ["big-0"])
    assert kseg.spark.read(
        spark, [str(pdir)], maxPartitionBytes=64 << 10
    ).rdd.getNumPartitions() == len(tasks)


def test_a_lying_index_never_splits_inside_a_batch(tmp_path):
    pdir = _big_partition(tmp_path)
    log = segment_logs(pdir)[0]
    index = log.with_suffix(".index")
    data = bytearray(index.read_bytes())
    for n in range(0, len(data) // 8, 3):
        rel, pos = struct.unpack_from(">ii", data, n * 8)
        struct.pack_into(
            ">ii", data, n * 8, rel, pos + 7
        )  # every third entry points inside a batch
    index.write_bytes(bytes(data))
    tasks = planning.plan([str(pdir)], planning.Prune(), max_bytes=64 << 10)
    starts = {b.position for b in kseg.read_batches(log)}
    assert len(tasks) > 3 and all(t.start in starts for t in tasks)


def test_pruning_by_offset_time_topic_and_pushed_filters(spark, tree):
    from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual

    from kseg.spark.source import KsegPushdownReader

    full = planning.plan([str(tree)], planning.Prune())
    by_topic = planning.plan([str(tree)], planning.Prune(topic="^orders$"))
    assert {t.topic for t in by_topic} == {"orders"} and len(by_topic) < len(full)
    late = planning.plan([str(tree)], planning.Prune(topic="^orders$", from_offset=150))
    assert len(late) < len(by_topic) and all(t.base_offset >= 100 for t in late)
    newer = planning.plan([str(tree)], planning.Prune(topic="^txn$", from_time=1_700_000_050_000))
    assert 0 < len(newer) < len([t for t in full if t.topic == "txn"])
    reader = KsegPushdownReader({"path": str(tree), "filterPushdown": "true"})
    filters = [EqualTo(("topic",), "orders"), GreaterThanOrEqual(("offset",), 150)]
    assert list(reader.pushFilters(filters)) == filters  # Spark still applies them to rows
    assert len(reader.partitions()) == len(late)
    df = kseg.spark.read(spark, [str(tree)]).where("topic = 'orders' AND offset >= 150")
    assert df.count() == len(
        [r for r in expected_records(tree, ["orders-0", "orders-1"]) if r[2] >= 150]
    )


def test_export_and_stats(spark, tree, tmp_path, monkeypatch, capsysbinary):
    out = tmp_path / "export"
    n = kseg.spark.export(spark, [str(tree)], str(out))
    assert n == len(expected_records(tree))
    back = spark.read.parquet(str(out))
    assert "headers" in back.columns and {p.name for p in out.iterdir() if p.is_dir()} >= {
        "topic=orders",
        "topic=txn",
    }
    rows = {(r.topic, r.partition): r for r in kseg.spark.stats(spark, [str(tree)]).collect()}
    for name in PARTITIONS:
        topic, part = name.rsplit("-", 1)
        want = len(expected_records(tree, [name]))
        assert rows[(topic, int(part))].records == want, name
    assert rows[("txn", 0)].transactional_share > 0.5 and rows[("orders", 0)].producers == 1
    assert rows[("orders", 1)].compression_ratio > 1
    code, out_text, _ = run_cli(
        monkeypatch, capsysbinary, "spark", "stats", tree, "--master", "local[2]"
    )
    assert code == 0 and "orders" in out_text and "compression_ratio" in out_text
    json_out = tmp_path / "json"
    code, _, err = run_cli(
        monkeypatch,
        capsysbinary,
        "spark",
        "export",
        tree,
        "--out",
        json_out,
        "--format",
        "json",
        "--partition-by",
        "",
        "--master",
        "local[2]",
    )
    assert code == 0 and "wrote" in err and list(json_out.glob("*.json"))


def test_corrupt_segment_keeps_records_before_the_damage(spark, corrupt_cases, tmp_path):
    case = next(c for c in corrupt_cases if c.name == "crc-flip")
    pdir = copy_partition(case.partition_dir, tmp_path)
    got = spark_records(spark, pdir)
    want = set()
    with open(case.file, "rb") as f:
        data = f.read()
    for b in kseg.iter_entries(data[: case.valid_bytes]):
        for r in b.records():
            want.add(r.offset)
    assert {r[2] for r in got} == want


def test_map_in_arrow_fallback_equals_the_source(spark, tree):
    df = kseg.spark.read_map_in_arrow(spark, [str(tree)], include_headers=True)
    assert as_set(df) == expected_records(tree)


def test_uris_go_through_pyarrow_fs_with_the_same_result(spark, tree, tmp_path):
    """file:// takes the remote path (pyarrow.fs listing and ranged reads), as s3:// or hdfs://."""
    from kseg.spark import fs

    assert fs.is_uri("file:///x") and not fs.is_uri("/x")
    uri = "file://" + str(tree)
    local_tasks = planning.plan([str(tree)], planning.Prune())
    uri_tasks = planning.plan([uri], planning.Prune())
    assert [(t.topic, t.partition, t.start, t.end) for t in uri_tasks] == [
        (t.topic, t.partition, t.start, t.end) for t in local_tasks
    ]
    assert all(t.path.startswith("file:///") for t in uri_tasks)
    big = _big_partition(tmp_path)
    assert spark_records(
        spark, "file://" + str(big), maxPartitionBytes=64 << 10
    ) == expected_records(tmp_path, ["big-0"])
    assert spark_records(spark, uri) == expected_records(tree)


def _rows(df, root: str) -> list[tuple]:
    """Every row, with the root of its paths left out (a URI's rows name URIs), sorted."""

    def norm(v):
        if isinstance(v, str):
            return v.replace(root, "<root>")
        if isinstance(v, (bytes, bytearray)):
            return bytes(v)
        if isinstance(v, list):
            return tuple(norm(x) for x in v)
        if hasattr(v, "asDict"):
            return tuple(sorted((k, norm(x)) for k, x in v.asDict().items()))
        return v

    return sorted((tuple(norm(v) for v in r) for r in df.collect()), key=repr)


@pytest.mark.parametrize(
    "mode, options",
    [
        ("records", {"includeHeaders": True, "segmentColumns": True, "includeControl": True}),
        ("batches", {"computeUncompressed": True}),
        ("segments", {}),
        ("findings", {"deep": True}),
    ],
)
def test_every_mode_reads_file_uris_row_for_row(spark, tree, corrupt_cases, mode, options):
    """records, batches, segments and findings: a file:// URI (read through pyarrow.fs) gives
    the local path's rows, on the clean tree and on every damaged case."""
    damaged = corrupt_cases[0].partition_dir.parent
    for root in (tree, damaged):
        local = _rows(kseg.spark.read(spark, [str(root)], mode=mode, **options), str(root))
        uri = _rows(
            kseg.spark.read(spark, [f"file://{root}"], mode=mode, **options), f"file://{root}"
        )
        assert local and uri == local, (mode, root)
    if mode == "findings":  # the damaged root has findings beyond the summary rows
        assert any(r[2] == "error" for r in local)


def test_spark_verify_on_a_uri_equals_the_local_run(spark, corrupt_cases):
    root = corrupt_cases[0].partition_dir.parent
    local, local_summary = kseg.spark.verify(spark, [str(root)], deep=True)
    remote, remote_summary = kseg.spark.verify(spark, [f"file://{root}"], deep=True)

    def norm(found, prefix):
        return sorted(tuple(str(v).replace(prefix, "<root>") for v in f.values()) for f in found)

    assert norm(remote, f"file://{root}") == norm(local, str(root)) and len(local) >= 8
    assert remote_summary == local_summary


def test_executor_functions_read_a_scheme_without_local_paths(tree):
    """The executors' code (tasks planned and read) on a scheme that has no local path at all
    (a pyarrow SubTreeFileSystem registered as kseg-test://, as s3:// or hdfs:// would be): the
    same rows as from the local path. In-process: Spark's workers would not see the registration."""
    import pyarrow.fs as pafs

    from kseg.spark.arrow import batch_rows, record_batches
    from kseg.spark.checks import findings, segment_rows
    from kseg.storage import uri

    mock = f"kseg-test://{tree.parent.name}/{tree.name}"
    uri.register_filesystem(
        "kseg-test", pafs.SubTreeFileSystem(str(tree.parent.parent), pafs.LocalFileSystem())
    )
    try:
        for maker in (
            lambda t: record_batches(t, include_headers=True, segment_columns=True),
            lambda t: batch_rows(t, compute_uncompressed=True),
            segment_rows,
        ):
            out = []
            for root in (str(tree), mock):
                tasks = planning.plan([root], planning.Prune(), max_bytes=4 << 10)
                rows = [
                    tuple(str(v).replace(root, "<root>") for v in row.values())
                    for t in tasks
                    for b in maker(t)
                    for row in b.to_pylist()
                ]
                out.append(rows)
            assert out[0] and out[1] == out[0]
        got = []
        for root in (str(tree), mock):
            rows = []
            for t in planning.partition_tasks([root], planning.Prune()):
                for b in findings(t, deep=True):
                    rows += [
                        tuple(str(v).replace(root, "<root>") for v in r.values())
                        for r in b.to_pylist()
                    ]
            got.append(sorted(rows))
        assert len(got[0]) >= len(PARTITIONS) and got[1] == got[0]
    finally:
        uri.unregister_filesystem("kseg-test")
