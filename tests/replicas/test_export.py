"""`--export-lost`'s writer (kseg.replicas.export): the lost batches of a partition written as a
partition dir Kafka loads (verbatim bytes, re-indexed), as ``kseg dump -f json``'s record lines
and as the Spark export's Parquet rows; refusals; the input never changes."""

from __future__ import annotations

import base64
import hashlib
import itertools
import os
from pathlib import Path
from typing import NamedTuple

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kseg.fixtures import replicas as R
from kseg.format.batch import RecordBatch
from kseg.format.headers import LAZY_HEADERS
from kseg.format.log import iter_entries
from kseg.format.record import Record
from kseg.outcome import BadOption
from kseg.render.lost_records import record_files, write_record_lines
from kseg.replicas import export as X
from kseg.replicas.compare import LostRange
from kseg.replicas.export import RangeMismatch, RecordFiles
from kseg.replicas.run import ReplicasRun
from kseg.storage.tree import resolve, segment_logs
from kseg.storage.writer import LogWriter
from tests.helpers import events, run_kseg

TOPIC, PART = "orders", 3
T0 = 1_700_000_000_000


class Batch(NamedTuple):
    log: Path
    position: int
    size: int
    base: int
    last: int
    control: bool


class Source(NamedTuple):
    pdir: Path
    batches: list[Batch]
    dump: dict[int, dict]  # offset -> `kseg dump -f json`'s record event


def write_source(pdir: Path, last_epoch: int = 3) -> None:
    """Several segments; headers (a null and a binary value), gzip/zstd/lz4 batches, two
    transactions (one committed, one aborted) with their markers, an idempotent producer, three
    leader epochs (0, 1, ``last_epoch``), a binary value, a record of 80 headers (dump streams its
    JSON line in pieces)."""
    clock = itertools.count(T0, 1000).__next__
    with LogWriter(pdir, segment_bytes=600, clock=clock) as w:
        hs = [("trace", b"abc"), ("bin", b"\xff\x00\x01"), ("none", None)]
        w.append([Record(b"k0", b"v0", None, hs, None)])
        w.append([Record(f"k{i}".encode(), b"gz" * i, None, [], None) for i in range(1, 5)],
                 compression="gzip")  # fmt: skip
        w.append([Record(None, b"zstd-%d" % i, None, [("h", b"%d" % i)], None) for i in range(3)],
                 compression="zstd")  # fmt: skip
        w.append([Record(b"t1", b"a", None, [("tx", b"1")], None), Record(b"t2", b"b", None, [],
                 None)], producer_id=7, producer_epoch=0, base_sequence=0, transactional=True)  # fmt: skip
        w.append([Record(b"p", b"plain", None, [], None)], partition_leader_epoch=1)
        w.append_control(commit=True, producer_id=7, producer_epoch=0, partition_leader_epoch=1)
        w.append([Record(b"x%d" % i, b"abort-me", None, [], None) for i in range(3)],
                 producer_id=8, producer_epoch=0, base_sequence=0, transactional=True,
                 compression="lz4", partition_leader_epoch=1)  # fmt: skip
        w.append([Record(b"mid", b"between", None, [("k", b"")], None)], partition_leader_epoch=1)
        w.append_control(commit=False, producer_id=8, producer_epoch=0, partition_leader_epoch=1)
        for i in range(4):
            w.append([Record(b"i%d" % i, b"idem" * 20, None, [], None)], producer_id=9,
                     producer_epoch=0, base_sequence=i, partition_leader_epoch=last_epoch)  # fmt: skip
        w.append(
            [Record(b"bin", b"\x00\xff\xfe binary", None, [], None)],
            partition_leader_epoch=last_epoch,
        )
        many = [("rep", b"same")] * 40 + [(f"h{i}", b"%d" % i) for i in range(40)]  # streamed
        w.append([Record(b"many", b"headers", None, many, None)], partition_leader_epoch=last_epoch)
        w.append([Record(None, None, None, [], None)], partition_leader_epoch=last_epoch)


def batches_of(pdir: Path) -> list[Batch]:
    out = []
    for log in segment_logs(pdir):
        data = log.read_bytes()
        for e in iter_entries(data, validate=True):
            control = isinstance(e, RecordBatch) and e.is_control
            out.append(Batch(log, e.position, e.size, e.base_offset, e.last_offset, control))
    return out


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Source:
    pdir = tmp_path_factory.mktemp("src") / f"{TOPIC}-{PART}"
    write_source(pdir)
    proc = run_kseg("dump", pdir, "-f", "json")
    assert proc.returncode == 0, proc.stderr
    dump = {e["offset"]: e for e in events(proc.stdout) if e["type"] == "record"}
    return Source(pdir, batches_of(pdir), dump)


def test_the_source_has_every_shape(source):
    logs = {b.log for b in source.batches}
    assert len(logs) >= 3
    assert sum(b.control for b in source.batches) == 2
    assert any(e["headers"] for e in source.dump.values())
    assert max(len(e["headers"]) for e in source.dump.values()) > LAZY_HEADERS


def export_lost(*args, **kw) -> X.ExportResult:
    """kseg.replicas.export.export_lost with the record files' writers the CLI hands it."""
    return X.export_lost(*args, **{"files": record_files(), **kw})


def lost_ranges(batches: list[Batch], runs: list[tuple[int, int]]) -> list[LostRange]:
    """Runs of batch indices as LostRanges: a run's batches of one `.log` are one range."""
    out = []
    for i, j in runs:
        for log, group in itertools.groupby(batches[i : j + 1], key=lambda b: b.log):
            g = list(group)
            out.append(LostRange(log, g[0].position, g[-1].position + g[-1].size, g[0].base,
                                 g[-1].last))  # fmt: skip
    return out


def tree_hash(path: Path) -> dict[str, object]:
    return {
        p.name: tree_hash(p)
        if p.is_dir()
        else (p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(path.iterdir())
    }


def _bytes(shown, encoding) -> bytes | None:
    if shown is None:
        return None
    return base64.b64decode(shown) if encoding == "base64" else shown.encode()


def check_export(source: Source, runs: list[tuple[int, int]], dest: Path) -> X.ExportResult:
    """Export the runs of batches and hold the result to the source, byte for byte."""
    ranges = lost_ranges(source.batches, runs)
    got = export_lost(source.pdir, ranges, dest, topic=TOPIC, partition=PART)
    chosen = [b for i, j in runs for b in source.batches[i : j + 1]]
    assert got.dir == dest / f"{TOPIC}-{PART}"
    assert (got.batches, got.bytes) == (len(chosen), sum(b.size for b in chosen))
    # one segment per source .log, named by its first batch's base offset, its bytes verbatim
    want: dict[str, bytes] = {}
    for r in ranges:
        name = next((n for n, (log, _) in want.items() if log == r.log), None)
        piece = r.log.read_bytes()[r.start : r.end]
        if name is None:
            want[f"{r.first_offset:020d}.log"] = (r.log, piece)
        else:
            want[name] = (r.log, want[name][1] + piece)
    assert {p.name: p.read_bytes() for p in segment_logs(got.dir)} == {
        n: data for n, (_, data) in want.items()
    }
    names = {p.name for p in got.dir.iterdir()}
    assert "partition.metadata" not in names and not any(n.endswith(".snapshot") for n in names)
    assert {p.name for p in dest.iterdir()} == {got.dir.name, got.jsonl.name, got.parquet.name}
    # the JSON Lines: `kseg dump -f json`'s record events of those offsets, the file the new one
    offsets = {o for b in chosen if not b.control for o in range(b.base, b.last + 1)}
    lines = [orjson.loads(x) for x in got.jsonl.read_bytes().splitlines()]
    assert got.records == len(lines) == len(offsets & set(source.dump))
    for line in lines:
        assert Path(line.pop("file")).parent == got.dir
    assert lines == [
        {k: v for k, v in source.dump[o].items() if k != "file"}
        for o in sorted(offsets & set(source.dump))
    ]
    # the Parquet rows: the same records
    import pyarrow.parquet as pq

    from kseg.spark.arrow import records_schema

    table = pq.read_table(got.parquet)
    assert table.schema == records_schema(include_headers=True, segment_columns=False)
    rows = [
        (
            r["topic"],
            r["partition"],
            r["offset"],
            r["key"],
            r["value"],
            int(r["timestamp"].timestamp() * 1000),
            [(h["key"], h["value"]) for h in r["headers"] or []],
        )
        for r in table.to_pylist()
    ]
    assert rows == [
        (
            e["topic"],
            e["partition"],
            e["offset"],
            _bytes(e["key"], e["key_encoding"]),
            _bytes(e["value"], e["value_encoding"]),
            e["timestamp"],
            [
                (k, _bytes(v, enc))
                for (k, v), enc in zip(e["headers"], e["header_encodings"], strict=True)
            ],
        )
        for e in (source.dump[o] for o in sorted(offsets & set(source.dump)))
    ]
    return got


def assert_kafka_valid(root: Path) -> None:
    """`kseg verify` and `kseg index check` pass on every export under ``root``."""
    proc = run_kseg("verify", root, "-f", "json")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    proc = run_kseg("index", "check", root)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr


def test_every_batch_across_segments_exports_and_verifies(source, tmp_path):
    before = tree_hash(source.pdir)
    got = check_export(source, [(0, len(source.batches) - 1)], tmp_path / "out" / "broker-1")
    assert len(segment_logs(got.dir)) == len({b.log for b in source.batches}) >= 3
    assert got.records == len(source.dump)
    # the aborted transaction's .txnindex entry, as Kafka's recovery writes it
    assert any(p.suffix == ".txnindex" and p.stat().st_size for p in got.dir.iterdir())
    # the leader epochs Kafka's recovery loads: here the source's whole history (0, 1, 3)
    epochs = (got.dir / "leader-epoch-checkpoint").read_bytes()
    assert epochs == (source.pdir / "leader-epoch-checkpoint").read_bytes()
    assert len(epochs.splitlines()) == 2 + 3
    assert_kafka_valid(tmp_path / "out")
    assert tree_hash(source.pdir) == before


@st.composite
def batch_runs(draw, n: int) -> list[tuple[int, int]]:
    """One or two runs of batch indices, in log order, disjoint."""
    i = draw(st.integers(0, n - 1))
    j = draw(st.integers(i, n - 1))
    runs = [(i, j)]
    if j + 2 < n and draw(st.booleans()):
        k = draw(st.integers(j + 2, n - 1))
        runs.append((k, draw(st.integers(k, n - 1))))
    return runs


def test_any_runs_of_batches_export_verbatim(source, tmp_path):
    before = tree_hash(source.pdir)
    root = tmp_path / "exports"
    count = itertools.count()

    @settings(
        max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(batch_runs(len(source.batches)))
    def check(runs):
        check_export(source, runs, root / f"broker-{next(count)}")

    check()
    assert_kafka_valid(root)  # every export of the examples, at once
    assert tree_hash(source.pdir) == before


@pytest.mark.parametrize("taken", ["orders-3", "orders-3.jsonl", "orders-3.parquet"])
def test_refuses_a_destination_that_holds_the_export(source, tmp_path, taken):
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / taken).mkdir() if taken == "orders-3" else (dest / taken).write_bytes(b"mine")
    before = tree_hash(dest)
    with pytest.raises(BadOption, match="exists"):
        export_lost(source.pdir, lost_ranges(source.batches, [(0, 1)]), dest, topic=TOPIC,
                    partition=PART)  # fmt: skip
    assert tree_hash(dest) == before


def test_never_writes_through_a_symlink(source, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    ranges = lost_ranges(source.batches, [(0, 1)])
    with pytest.raises(BadOption, match="symlink"):
        export_lost(source.pdir, ranges, tmp_path / "link", topic=TOPIC, partition=PART)
    assert list(real.iterdir()) == []
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "orders-3.jsonl").symlink_to(real / "x.jsonl")  # dangling: still refused
    with pytest.raises(BadOption, match="exists"):
        export_lost(source.pdir, ranges, dest, topic=TOPIC, partition=PART)
    assert list(real.iterdir()) == [] and os.listdir(dest) == ["orders-3.jsonl"]


def test_refuses_a_destination_inside_the_partition_read(source):
    with pytest.raises(BadOption, match="inside the partition dir"):
        export_lost(source.pdir, lost_ranges(source.batches, [(0, 1)]), source.pdir / "x",
                    topic=TOPIC, partition=PART)  # fmt: skip
    assert not (source.pdir / "x").exists()


def test_a_range_not_of_whole_batches_writes_nothing(source, tmp_path):
    (r,) = lost_ranges(source.batches, [(0, 1)])
    for bad in (r._replace(start=r.start + 1), r._replace(end=r.end - 1),
                r._replace(last_offset=r.last_offset + 1)):  # fmt: skip
        with pytest.raises(RangeMismatch, match=str(r.log)):
            export_lost(source.pdir, [bad], tmp_path / "out", topic=TOPIC, partition=PART)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("exc", "where"),
    [(OSError(28, "No space left on device"), "parquet"), (KeyboardInterrupt(), "jsonl")],
)
def test_a_failed_export_leaves_nothing(source, tmp_path, exc, where):
    """No space while the Parquet file is written, an interrupt (Ctrl-C) while the JSON Lines
    are: the partition dir already renamed into place goes too."""

    def fail(*_a):
        raise exc

    files = record_files()
    files = files._replace(**{where: fail})
    dest = tmp_path / "out"
    with pytest.raises(type(exc)):
        export_lost(source.pdir, lost_ranges(source.batches, [(2, 6)]), dest, topic=TOPIC,
                    partition=PART, files=files)  # fmt: skip
    assert os.listdir(dest) == []


def test_without_pyarrow_no_parquet(source, tmp_path):
    got = export_lost(source.pdir, lost_ranges(source.batches, [(2, 6)]), tmp_path / "out",
                      topic=TOPIC, partition=PART,
                      files=RecordFiles(write_record_lines, None))  # fmt: skip
    assert got.parquet is None
    assert sorted(os.listdir(tmp_path / "out")) == ["orders-3", "orders-3.jsonl"]


def test_without_record_writers_the_partition_dir_alone(source, tmp_path):
    """The library alone (no writers handed in): the dir, its records counted from the batches
    (the control batches' not)."""
    runs = [(2, 9)]
    got = X.export_lost(source.pdir, lost_ranges(source.batches, runs), tmp_path / "out",
                        topic=TOPIC, partition=PART)  # fmt: skip
    assert (got.jsonl, got.parquet) == (None, None)
    assert os.listdir(tmp_path / "out") == ["orders-3"]
    chosen = source.batches[2:10]
    assert got.records == sum(b.last - b.base + 1 for b in chosen if not b.control)
    assert any(b.control for b in chosen)


def tag_at(spec: R.ReplicaSpec, offset: int) -> str:
    """The run (tag) of the fixture replica that wrote ``offset``."""
    start = 0
    for run in spec.runs:
        if start <= offset < start + run.count:
            return run.tag
        start += run.count
    raise AssertionError(offset)


@pytest.mark.parametrize("name", ["unclean", "twice"])
def test_the_run_exports_exactly_the_records_a_follower_loses(tmp_path, name):
    """kseg.replicas.run on the fixture scenarios (a segment per batch: a loss spans
    segments): each losing follower's export holds its records from the offset it truncates to,
    as it wrote them, and nothing of the leader's."""
    roots = tmp_path / "roots"
    R.build(roots, name, segment_bytes=200)
    before = tree_hash(roots)
    out = tmp_path / "lost"
    run = ReplicasRun(resolve([roots]), export_lost=out, record_files=record_files())
    evs = list(run.events())
    rows = {Path(e["log_dir"]).name: e for e in evs if e["type"] == "replica"}
    exports = [e for e in evs if e["type"] == "export"]
    sc = R.SCENARIOS[name]
    assert {Path(e["log_dir"]).name for e in exports} == {r for r, n in sc.lost.items() if n}
    for e in exports:
        root = Path(e["log_dir"]).name
        row = rows[root]
        assert e["records"] == row["lost_records"] == sc.lost[root]
        assert Path(e["dir"]) == out / root / f"{R.TOPIC}-{R.PARTITION}"
        assert len(segment_logs(Path(e["dir"]))) >= 2
        lines = [orjson.loads(x) for x in Path(e["jsonl"]).read_bytes().splitlines()]
        offsets = list(range(row["lost_first_offset"], row["lost_last_offset"] + 1))
        assert [x["offset"] for x in lines] == offsets
        spec = sc.replicas[root]
        assert [(x["key"], x["value"], x["timestamp"]) for x in lines] == [
            (r.key.decode(), r.value.decode(), r.timestamp)
            for r in (R.record(o, tag_at(spec, o)) for o in offsets)
        ]
    assert tree_hash(roots) == before
    assert_kafka_valid(out)


def test_the_run_refuses_an_export_dir_before_reading(tmp_path):
    """kseg.replicas.run: a DIR/<root name> already holding a replica's export (even one that
    loses nothing), or two roots of one name, is a usage error before any replica is read."""
    roots = tmp_path / "roots"
    R.build(roots, "unclean")
    out = tmp_path / "lost"
    (out / "broker-2" / f"{R.TOPIC}-{R.PARTITION}.jsonl").parent.mkdir(parents=True)
    (out / "broker-2" / f"{R.TOPIC}-{R.PARTITION}.jsonl").write_bytes(b"mine\n")
    with pytest.raises(BadOption, match="exists"):
        ReplicasRun(resolve([roots]), export_lost=out, record_files=record_files())
    assert sorted(p.name for p in out.rglob("*")) == ["broker-2", "orders-0.jsonl"]
    other = tmp_path / "elsewhere" / "broker-1"
    R.write_root(other, 4, R.SCENARIOS["unclean"].replicas["broker-1"])
    with pytest.raises(BadOption, match="two roots named broker-1"):
        ReplicasRun(resolve([roots / "broker-1", roots / "broker-3", other]),
                    export_lost=tmp_path / "lost2")  # fmt: skip
    assert not (tmp_path / "lost2").exists()
