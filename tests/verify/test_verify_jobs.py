"""verify --jobs N: the same bytes, order and exit code as --jobs 1; Ctrl-C still one line."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kseg.fixtures import build_corrupt_tree, build_tree
from kseg.verify.run import VerifyOptions, VerifyRun
from tests.helpers import kseg_command, run_kseg


@pytest.fixture(scope="module")
def roots(tmp_path_factory) -> list[Path]:
    """Two log.dirs roots: the clean fixture tree and one partition per kind of damage."""
    base = tmp_path_factory.mktemp("jobs")
    clean = build_tree(base / "clean")
    damaged = base / "damaged"
    build_corrupt_tree(damaged)
    return [clean, damaged]


@pytest.mark.parametrize("fmt", ["text", "json", "table"])
@pytest.mark.parametrize("extra", [[], ["--deep", "--problems-only"]], ids=["plain", "deep"])
def test_jobs_give_the_same_bytes_as_one_job(roots, fmt, extra):
    one = run_kseg("verify", *roots, "-f", fmt, *extra, "--jobs", "1")
    assert one.returncode & 4 and not one.returncode & 8, one.stderr  # damage found
    for n in ("3", None):  # three workers; the default (every core)
        many = run_kseg("verify", *roots, "-f", fmt, *extra, *(["--jobs", n] if n else []))
        assert (many.returncode, many.stdout, many.stderr) == (
            one.returncode,
            one.stdout,
            one.stderr,
        )


def test_jobs_must_be_at_least_one(roots):
    proc = run_kseg("verify", roots[0], "--jobs", "0")
    assert proc.returncode == 16 and b"--jobs" in proc.stderr, proc.stderr


def test_an_unreadable_file_is_reported_in_its_place(tmp_path, roots):
    """A failure (stderr) comes at the same point of the run as with one job."""
    root = tmp_path / "logs"
    shutil.copytree(roots[0], root)
    log = next(root.glob("orders-1/*.log"))
    log.unlink()
    log.mkdir()  # a directory named like a segment: unreadable as a file, even for root
    one = run_kseg("verify", root, "-f", "json", "--jobs", "1")
    many = run_kseg("verify", root, "-f", "json", "--jobs", "4")
    assert one.returncode & 8, one.stderr
    assert (many.returncode, many.stdout, many.stderr) == (one.returncode, one.stdout, one.stderr)


def _events(paths, n: int, **opts) -> tuple[list[dict], tuple]:
    run = VerifyRun(VerifyOptions(jobs=n, **opts))
    evs = list(run.events(paths))
    return evs, (run.outcome, run.counts, run.partitions, run.segments)


@settings(max_examples=12, deadline=None)
@given(
    n=st.integers(2, 5),
    topic=st.sampled_from([None, "orders", "txn", "crc", "nosuch"]),
    partition=st.sampled_from([None, 0, 1]),
    deep=st.booleans(),
    which=st.sampled_from([(0,), (1,), (0, 1)]),
)
def test_selection_with_jobs_is_the_selection_with_one_job(roots, n, topic, partition, deep, which):
    """Every combination of what verify selects: the events and counters of N workers are
    those of one, in the same order."""
    from kseg.storage.tree import InputError

    paths = [roots[i] for i in which]
    opts = {"topic": topic, "partition": partition, "deep": deep}
    try:
        expected = _events(paths, 1, **opts)
    except InputError as exc:  # nothing selected: the same refusal with N workers
        with pytest.raises(InputError, match=str(exc)[:40]):
            _events(paths, n, **opts)
        return
    assert _events(paths, n, **opts) == expected


def _workers(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def test_ctrl_c_to_the_process_group_is_one_line_and_no_worker_is_left(tmp_path):
    """A terminal's Ctrl-C reaches every process of the group: the workers ignore it, the
    parent stops and reaps them, prints one line and exits 32."""
    if not Path("/proc/self/task").is_dir():
        pytest.skip("needs /proc to find the workers")
    import kseg

    root = tmp_path / "logs"
    for p in range(4):
        with kseg.LogWriter(root / f"big-{p}", segment_bytes=1 << 20) as w:
            for b in range(400):
                w.append([kseg.Record(value=bytes([b % 251]) * 900, key=b"k%d" % i)
                          for i in range(40)])  # fmt: skip
    proc = subprocess.Popen(
        [*kseg_command(), "verify", "--deep", str(root), "--jobs", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, as a shell's job
    )
    deadline = time.monotonic() + 120
    while len(workers := _workers(proc.pid)) < 2:
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "the workers never started"
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode & 32, err
    assert err.decode().splitlines() == ["kseg: interrupted"]
    for pid in workers:
        assert not Path(f"/proc/{pid}").exists() or _zombie_of_init(pid)


def _zombie_of_init(pid: int) -> bool:
    """A pid reused by, or reparented to, someone else: not a worker left running."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return "kseg" not in Path(f"/proc/{pid}/cmdline").read_text() or stat.split()[2] == "Z"
