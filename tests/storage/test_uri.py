"""Local paths and URIs behind the same storage objects (kseg.storage.uri): a Segment or
Partition opened from a ``file://`` URI, or from a scheme with no local path at all (a pyarrow
SubTreeFileSystem registered as ``kseg-test://``, standing in for s3/hdfs), gives the same
batches, lookups, index statuses and verify findings as from the local path."""

from __future__ import annotations

import errno
import subprocess
import sys
from pathlib import Path

import pytest

pafs = pytest.importorskip("pyarrow.fs", reason="URIs are read through pyarrow (spark extra)")

import kseg  # noqa: E402
from kseg.fixtures import PARTITIONS  # noqa: E402
from kseg.storage import mapped as mapped_mod  # noqa: E402
from kseg.storage import tree as tree_mod  # noqa: E402
from kseg.storage import uri as uri_mod  # noqa: E402
from kseg.storage.partition import Partition  # noqa: E402
from kseg.storage.segment import OFFSET_INDEX, TIME_INDEX, TXN_INDEX, Segment  # noqa: E402
from kseg.storage.tree import Target, segment_logs  # noqa: E402
from kseg.storage.uri import UriPath, as_path  # noqa: E402
from kseg.verify.partition import verify_target  # noqa: E402

MOCK = "kseg-test"


@pytest.fixture
def mock_scheme(tree):
    """``kseg-test://<dir>/logs/...`` reads ``tree`` through a filesystem that has no local
    paths for kseg (the code path of s3:// or hdfs://)."""
    base = tree.parent.parent
    uri_mod.register_filesystem(MOCK, pafs.SubTreeFileSystem(str(base), pafs.LocalFileSystem()))
    yield f"{MOCK}://{tree.parent.name}/{tree.name}"
    uri_mod.unregister_filesystem(MOCK)


def _forms(tree: Path, mock: str, name: str) -> list[str]:
    return [str(tree / name), f"file://{tree / name}", f"{mock}/{name}"]


def _norm(text, root: str) -> str:
    return None if text is None else str(text).replace(root, "<root>")


def _batches(seg: Segment) -> list[tuple]:
    return [
        (b.position, b.size, b.magic, b.base_offset, b.last_offset, b.crc, b.max_timestamp)
        for b in seg.batches()
    ]


def _index_state(seg: Segment, root: str) -> list[tuple]:
    out = []
    for kind in (OFFSET_INDEX, TIME_INDEX, TXN_INDEX):
        idx = seg.index(kind)
        out.append(
            (
                kind,
                idx.missing,
                idx.usable,
                None if idx.problem is None else idx.problem.message,
                _norm(idx.warning(), root),
                len(idx.view) if idx.usable and kind != TXN_INDEX else None,
            )
        )
    return out


def _partition_facts(p: str, root: str) -> dict:
    part = Partition(p)
    segs = part.segments
    facts = {
        "names": (part.topic, part.partition, part.state),
        "segments": [(s.base_offset, s.size(), _norm(s.log, root)) for s in segs],
        "batches": [_batches(s) for s in segs],
        "indexes": [_index_state(s, root) for s in segs],
        "log_start": part.log_start_offset(),
        "log_end": part.log_end_offset(),
        "max_ts": [part.max_timestamp(s) for s in segs],
        "indexed_max_ts": [part.indexed_max_timestamp(s) for s in segs],
    }
    looks = []
    for s in segs:
        for off in (s.base_offset, s.base_offset + 3, s.base_offset + 50):
            pos = part.start_position(s, off)
            looks.append((off, pos, [e.position for e in part.batches_for(s, off)][:3]))
        for ts in (0, 1_700_000_000_000, 1_700_000_030_000, 1 << 62):
            looks.append((ts, part.time_start_offset(s, ts)))
    facts["lookups"] = looks
    facts["warnings"] = [_norm(w, root) for w in part.warnings]
    facts["bytes_read"] = part.bytes_read
    return facts


def _findings(p: str, root: str) -> tuple:
    pdir = as_path(p)
    report = verify_target(Target(pdir, segment_logs(pdir)), deep=True)
    rows = sorted(
        (f.severity, f.kind, _norm(f.file, root), f.position, f.offset, f.message)
        for f in report.all_findings
    )
    scans = [
        (s.base_offset, s.size, s.valid_bytes, s.batches, s.offset_index, s.time_index)
        for s in report.scans
    ]
    return rows, scans, report.log_end_offset, report.log_start_offset, report.clean_shutdown


@pytest.mark.parametrize("name", PARTITIONS)
def test_a_partition_from_a_uri_equals_the_local_one(tree, mock_scheme, name):
    local, file_uri, mock = _forms(tree, mock_scheme, name)
    roots = (str(tree), f"file://{tree}", mock_scheme)
    got = [_partition_facts(p, r) for p, r in zip((local, file_uri, mock), roots, strict=True)]
    assert got[0]["segments"] and got[0]["batches"][0]
    assert got[1] == got[0]
    assert got[2] == got[0]
    found = [_findings(p, r) for p, r in zip((local, file_uri, mock), roots, strict=True)]
    assert found[1] == found[0] and found[2] == found[0]


def test_damaged_partitions_give_the_same_findings_from_a_uri(corrupt_cases):
    for case in corrupt_cases:
        pdir = case.partition_dir
        root = str(pdir.parent)
        local = _findings(str(pdir), root)
        remote = _findings(f"file://{pdir}", f"file://{root}")
        assert remote == local, case.name
        assert local[0], case.name  # every damaged case has findings


def test_segment_and_read_batches_take_uri_strings_and_uripaths(tree):
    log = segment_logs(tree / "orders-0")[0]
    uri = f"file://{log}"
    want = [(b.position, b.crc) for b in kseg.read_batches(log)]
    assert [(b.position, b.crc) for b in kseg.read_batches(uri)] == want
    seg = Segment(UriPath(uri))
    assert seg.base_offset == 0 and str(seg.log) == uri and isinstance(seg.log, UriPath)
    assert str(seg.file(OFFSET_INDEX)) == f"file://{log.with_suffix('.index')}"
    # a batch kept after the walk moved on reads its own bytes again (a ranged read)
    kept = list(kseg.read_batches(uri))
    assert [len(list(b.records())) for b in kept] == [
        len(list(b.records())) for b in kseg.read_batches(log)
    ]


def test_a_uri_log_is_read_in_bounded_ranges_never_whole(tmp_path, monkeypatch):
    pdir = tmp_path / "big-0"
    with kseg.LogWriter(pdir, clock=lambda: 1_700_000_000_000) as w:
        for b in range(300):
            w.append([kseg.Record(key=b"k", value=b"%01000d" % b) for _ in range(20)])
    log = segment_logs(pdir)[0]
    size = log.stat().st_size
    step = 32 << 10
    monkeypatch.setattr(mapped_mod, "FILL_STEP", step)
    monkeypatch.setattr(mapped_mod, "KEEP_BEHIND", 2 * step)
    reads: list[int] = []
    real = mapped_mod.RemoteMap._read_into

    def spy(self, view, pos):
        reads.append(len(view))
        return real(self, view, pos)

    monkeypatch.setattr(mapped_mod.RemoteMap, "_read_into", spy)
    seg = Segment(f"file://{log}")
    lows = []
    with seg.mapped() as buf:
        assert isinstance(buf, mapped_mod.RemoteMap)
        n = 0
        for _ in kseg.iter_entries(buf):
            n += 1
            lows.append(buf.lo)
    largest_batch = max(b.size for b in kseg.read_batches(log))
    assert n == 300 and size > 10 * step
    assert sum(reads) == size  # every byte read once
    assert max(reads) <= step + largest_batch  # in ranges, never the whole file
    assert max(lows) > size // 2  # what the walk passed was let go


def test_a_uri_index_is_size_checked_before_it_is_read(tree, monkeypatch):
    pdir = tree / "orders-0"
    log = segment_logs(pdir)[0]
    index_size = log.with_suffix(".index").stat().st_size
    monkeypatch.setattr(uri_mod.UriPath.read_bytes, "__defaults__", (index_size - 1,))
    seg = Segment(f"file://{log}")
    idx = seg.index(OFFSET_INDEX)
    assert isinstance(idx.error, OSError) and idx.error.errno == errno.EFBIG
    assert not idx.usable and seg.offset_index() is None
    assert idx.warning().startswith(f"file://{log.with_suffix('.index')}: unusable (")
    assert seg.start_for(10).position == 0  # a lookup then scans from the start


def test_missing_files_and_bad_uris(tree, tmp_path):
    pdir = tmp_path / "t-0"
    pdir.mkdir()
    log = segment_logs(tree / "orders-0")[0]
    (pdir / log.name).write_bytes(log.read_bytes())  # no indexes beside it
    seg = Segment(f"file://{pdir / log.name}")
    assert seg.index(OFFSET_INDEX).missing and seg.index(TIME_INDEX).missing
    assert seg.index(OFFSET_INDEX).warning() == (
        f"file://{pdir}/{log.with_suffix('.index').name}: missing; scanning the segment instead"
    )
    with pytest.raises(FileNotFoundError) as exc:
        Segment(f"file://{pdir}/00000000000000000099.log").size()
    assert exc.value.filename == f"file://{pdir}/00000000000000000099.log"
    with pytest.raises(tree_mod.InputError) as err:
        tree_mod.layout(f"file://{tmp_path}/nowhere")
    assert err.value.kind == tree_mod.NO_SUCH_PATH
    with pytest.raises(tree_mod.InputError) as err:
        tree_mod.layout("nosuchscheme-kseg://x/y")
    assert err.value.kind == "usage"
    with pytest.raises(tree_mod.InputError) as err:
        tree_mod.layout(f"file://{tree}?x=1")
    assert err.value.kind == "usage" and "query" in str(err.value)
    with pytest.raises(mapped_mod.NotRegularFileError), mapped_mod.mapped(f"file://{pdir}"):
        pass


def test_the_tree_walk_is_the_same_for_uris(tree, mock_scheme):
    local = tree_mod.layout(str(tree))
    for root in (f"file://{tree}", mock_scheme):
        lay = tree_mod.layout(root)
        assert lay.kind == local.kind == tree_mod.ROOT
        assert [(str(p).replace(root, ""), n) for _, p, n in lay.partitions] == [
            (str(p).replace(str(tree), ""), n) for _, p, n in local.partitions
        ]


def test_uripath_names_like_a_path():
    p = UriPath("s3://bucket/a/b/00000000000000000007.log/")
    assert str(p) == "s3://bucket/a/b/00000000000000000007.log"
    assert p.name == "00000000000000000007.log" and p.suffix == ".log"
    assert str(p.parent) == "s3://bucket/a/b" and str(p.parent.parent.parent) == "s3://bucket/"
    assert str(p.with_suffix(".index")) == "s3://bucket/a/b/00000000000000000007.index"
    assert p.parent / p.name == p and hash(p.parent / p.name) == hash(p)
    import pickle

    assert pickle.loads(pickle.dumps(p)) == p
    assert as_path("/x/y") == Path("/x/y") and isinstance(as_path("file:///x"), UriPath)


def test_local_paths_never_import_pyarrow(tree):
    """A run on local paths (verify's scan, a Partition's lookups, batches) loads no pyarrow; the
    first URI does."""
    code = f"""
import sys
from pathlib import Path
import kseg
from kseg.storage.partition import Partition
from kseg.storage.tree import Target, segment_logs, layout
from kseg.verify.partition import verify_target
root = Path({str(tree)!r})
layout(str(root))
for name in {list(PARTITIONS)!r}:
    part = Partition(root / name)
    part.log_end_offset()
    for seg in part.segments:
        part.max_timestamp(seg)
        list(seg.batches())
    verify_target(Target(root / name, segment_logs(root / name)), deep=True)
assert "pyarrow" not in sys.modules, sorted(m for m in sys.modules if "arrow" in m)
Partition("file://" + str(root / {PARTITIONS[0]!r})).log_end_offset()
assert "pyarrow" in sys.modules
print("ok")
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
