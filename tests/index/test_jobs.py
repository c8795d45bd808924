"""`kseg index check|rebuild --jobs N`: the same bytes out (stdout, stderr, exit code) and, for a
rebuild, the same files written as with --jobs 1, over roots of several partitions with damage."""

from __future__ import annotations

import shutil
import signal
import subprocess
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kseg.fixtures import build_corrupt_tree
from tests.helpers import kseg_command, run_kseg


def _damaged_copy(tree: Path, dest: Path) -> Path:
    """The fixture tree with a wrong offset index, an index file that is a directory (unreadable
    when run as root too) and a flipped byte in a log."""
    shutil.copytree(tree, dest)
    index = dest / "orders-0" / "00000000000000000000.index"
    data = bytearray(index.read_bytes())
    data[4] ^= 0x10  # the first entry's position
    index.write_bytes(bytes(data))
    timeindex = next(iter(sorted((dest / "orders-1").glob("*.timeindex"))))
    timeindex.unlink()
    timeindex.mkdir()
    log = next(iter(sorted((dest / "upgrade-0").glob("*.log"))))
    with open(log, "r+b") as f:
        f.seek(log.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    return dest


@pytest.fixture(scope="module")
def roots(tree, tmp_path_factory) -> tuple[Path, Path]:
    """Two log.dirs roots (read-only for tests): the damaged tree and one partition per
    corruption."""
    base = tmp_path_factory.mktemp("jobs")
    a = _damaged_copy(tree, base / "a")
    b = base / "b"
    build_corrupt_tree(b)
    return a, b


def _same(*args) -> None:
    one = run_kseg(*args, "--jobs", "1")
    three = run_kseg(*args, "--jobs", "3")
    assert one.returncode not in (16, 32), one.stderr
    assert (three.returncode, three.stdout, three.stderr) == (
        one.returncode,
        one.stdout,
        one.stderr,
    )


@pytest.mark.parametrize("fmt", ["text", "json", "table"])
def test_index_check_jobs_prints_what_one_job_prints(roots, fmt):
    a, b = roots
    _same("index", "check", a, b, "-f", fmt)


@pytest.mark.parametrize(
    "args",
    [
        ("--topic", "^orders$"),
        ("--partition", "0", "--index-interval-bytes", "1024"),
        ("--kafka-version", "2.2", "--dry-run"),
    ],
    ids=["topic", "partition-interval", "version-dry-run"],
)
@pytest.mark.parametrize("command", ["check", "rebuild"])
def test_index_jobs_with_filters_print_what_one_job_prints(roots, command, args):
    a, b = roots
    if command == "check":
        args = tuple(x for x in args if x != "--dry-run")
    elif "--dry-run" not in args:
        args = (*args, "--dry-run")
    _same("index", command, a, b, *args, "-f", "json")


def _files(root: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
        for p in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_index_rebuild_jobs_writes_what_one_job_writes(roots, tmp_path, fmt):
    """The same files (indexes, the --backup copies) and the same output, each run on a fresh
    copy at the same path."""
    a, b = roots
    seen = []
    for jobs in ("1", "3"):
        work = tmp_path / "work"
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(a, work / "a")
        shutil.copytree(b, work / "b")
        backup = work / "backup"
        proc = run_kseg(
            "index", "rebuild", work / "a", work / "b", "--backup", backup, "--preallocate",
            "-f", fmt, "--jobs", jobs,
        )  # fmt: skip
        seen.append((proc.returncode, proc.stdout, proc.stderr, _files(work)))
    assert seen[0][0] == 12, seen[0][2]  # corrupt logs (4) and the refused directory (8)
    assert any(name.startswith("backup/orders-0/") for name in seen[0][3])
    assert seen[1] == seen[0]


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    command=st.sampled_from(["check", "rebuild"]),
    topic=st.sampled_from([None, "^orders$", "o", "^(txn|torn-tail)$", "^nothing$"]),
    partition=st.sampled_from([None, 0, 1]),
    jobs=st.sampled_from(["2", "3", "5"]),
)
def test_index_jobs_select_what_one_job_selects(roots, command, topic, partition, jobs):
    a, b = roots
    args = ["index", command, a, b, "-f", "json"]
    args += ["--dry-run"] if command == "rebuild" else []
    args += ["--topic", topic] if topic is not None else []
    args += ["--partition", str(partition)] if partition is not None else []
    one = run_kseg(*args, "--jobs", "1")
    many = run_kseg(*args, "--jobs", jobs)
    assert (many.returncode, many.stdout, many.stderr) == (
        one.returncode,
        one.stdout,
        one.stderr,
    )


def test_interrupted_index_rebuild_jobs_leaves_what_one_job_leaves(tmp_path):
    """Interrupted once it has written (the workers reading ahead): one line, exit 32, no temp
    file, and the segments whose `.index` was written are a prefix of the run's order (one
    process writes, segment after segment), each as the rebuild writes it."""
    import kseg

    root = tmp_path / "logs"
    records = [kseg.Record(key=b"k", value=b"v" * 300, timestamp=1_700_000_000_000 + i)
               for i in range(50)]  # fmt: skip
    with kseg.LogWriter(root / "wide-0", segment_bytes=20_000) as w:
        for _ in range(8):
            w.append(records)
    for n in range(1, 60):
        shutil.copytree(root / "wide-0", root / f"wide-{n}")
    wanted = {p: p.read_bytes() for p in root.glob("*/*.index")}
    for p in wanted:
        p.unlink()
    dry = run_kseg("index", "rebuild", root, "--dry-run", "-f", "json", "--jobs", "1")
    order = [
        Path(ev["file"]).with_suffix(".index")
        for ev in map(orjson.loads, dry.stdout.splitlines())
        if ev["type"] == "index_rebuild"
    ]
    assert sorted(order) == sorted(wanted)
    proc = subprocess.Popen(
        [*kseg_command(), "index", "rebuild", str(root), "--jobs", "3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    while not any(p.exists() for p in order):  # the first file written
        assert proc.poll() is None, proc.stderr.read()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 32, err
    assert err.decode().splitlines() == ["kseg: interrupted"]
    assert not [p for p in root.rglob("*") if "kseg-tmp" in p.name]
    written = [p.exists() for p in order]
    assert written == sorted(written, reverse=True)  # True... then False
    assert 0 < written.count(True) < len(written)
    for p in order[: written.count(True)]:
        assert p.read_bytes() == wanted[p]


def test_index_rebuild_holds_one_segments_rebuilt_indexes_at_a_time(tmp_path, monkeypatch):
    """The rebuilt indexes of a segment are let go once written: a partition of many segments
    is rebuilt in the memory of one segment's indexes, not of all of them (as before --jobs)."""
    import kseg
    from kseg.index import rebuild
    from kseg.index.run import RebuildRun
    from kseg.storage.tree import resolve

    records = [kseg.Record(key=b"k", value=b"v" * 300, timestamp=1_700_000_000_000 + i)
               for i in range(50)]  # fmt: skip
    with kseg.LogWriter(tmp_path / "logs" / "wide-0", segment_bytes=20_000) as w:
        for _ in range(8):
            w.append(records)

    live = [0]  # RebuiltIndexes alive (a tuple: no weak reference to count them by)

    class Tracked(rebuild.RebuiltIndexes):
        def __del__(self) -> None:
            live[0] -= 1

    seen: list[int] = []
    real_rebuilt, real_write = rebuild.rebuilt_indexes, rebuild.write_indexes

    def tracked(*args, **kw):
        live[0] += 1
        return Tracked(*real_rebuilt(*args, **kw))

    def write(*args, **kw):
        seen.append(live[0])
        return real_write(*args, **kw)

    monkeypatch.setattr(rebuild, "rebuilt_indexes", tracked)
    monkeypatch.setattr(rebuild, "write_indexes", write)
    run = RebuildRun(resolve([tmp_path / "logs"], None, None, logs_only=True), jobs=1)
    evs = [ev for ev in run.events() if ev["type"] == "index_rebuild"]
    assert len(evs) == len(seen) >= 6
    assert max(seen) <= 2, seen
