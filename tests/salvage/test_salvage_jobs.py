"""kseg salvage --jobs N: the partitions scanned and planned by N workers (kseg.storage.jobs), the
writing done one partition after another by kseg itself; the output, the exit code and the
salvaged files are those of --jobs 1, and `kseg restore` undoes both."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kseg.format import checkpoint as cp
from tests.helpers import run_kseg
from tests.salvage.cases import damaged, hashes, write_partition

# the partitions of the roots: damaged ones (each as tests.salvage.cases damages it), clean ones
LAYOUT = {
    "logs-a": ("flip", "clean", "zero_page", "lying_base_offset", "unreadable"),
    "logs-b": ("middle_segment", "magic", "clean"),
}
STAMP = re.compile(rb"/\d{8}T\d{6}Z(-\d+)?/")  # a quarantine run dir's name: the time of the run


def build(root: Path) -> list[Path]:
    """The log dirs of LAYOUT under ``root``, each partition its own topic (``t<n>-0``)."""
    scratch = root / "scratch"
    dirs = []
    for name, parts in LAYOUT.items():
        log_dir = root / name
        log_dir.mkdir(parents=True)
        entries = []
        for n, damage in enumerate(parts):
            pdir = log_dir / f"t{n}-0"
            if damage in ("clean", "unreadable"):
                write_partition(pdir)
                if damage == "unreadable":  # an index kseg cannot read: not salvaged (8)
                    index = sorted(pdir.glob("*.index"))[1]
                    index.unlink()
                    index.mkdir()
            else:
                case = damaged(scratch / f"{name}-{n}", damage)
                shutil.move(case.pdir, pdir)
            entries.append(cp.TopicPartitionOffset(f"t{n}", 0, 0))
        for f in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint"):
            (log_dir / f).write_bytes(cp.encode_offset_checkpoint(entries))
        dirs.append(log_dir)
    shutil.rmtree(scratch)
    return dirs


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pristine")
    build(root)
    return root


def same_output(a, b) -> None:
    assert (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr)


@pytest.mark.parametrize("fmt", ["text", "json", "table"])
def test_dry_run_jobs_3_says_what_jobs_1_says(pristine, fmt):
    roots = [pristine / name for name in LAYOUT]
    one = run_kseg("salvage", *roots, "--dry-run", "-f", fmt, "--jobs", "1")
    three = run_kseg("salvage", *roots, "--dry-run", "-f", fmt, "--jobs", "3")
    assert one.returncode == 4 | 8, one.stderr
    assert b"could not be read" in one.stderr
    same_output(one, three)
    one = run_kseg("salvage", roots[0], "--dry-run", "-f", fmt, "-j", "1", "--topic", "t[023]")
    three = run_kseg("salvage", roots[0], "--dry-run", "-f", fmt, "-j", "3", "--topic", "t[023]")
    assert one.returncode == 4 and b"t1-0" not in one.stdout
    same_output(one, three)


def _salvage_copy(pristine: Path, work: Path, jobs: str):
    """Salvage a copy of the pristine roots at ``work`` (the same path for every --jobs: the
    output names it), after a salvage of one partition killed midway (resumed by the run)."""
    shutil.copytree(pristine, work, symlinks=True)
    roots = [work / name for name in LAYOUT]
    env = {**os.environ, "KSEG_TEST_CRASH_AT": "manifest"}
    assert run_kseg("salvage", roots[1] / "t0-0", env=env).returncode == 99
    proc = run_kseg("salvage", *roots, "-f", "json", "--jobs", jobs)
    after = {name: hashes(work / name) for name in LAYOUT}
    evs = [json.loads(line) for line in proc.stdout.splitlines()]
    qdirs = sorted({e["quarantine"] for e in evs if e.get("quarantine")})
    return proc, after, qdirs


def test_salvage_jobs_3_writes_what_jobs_1_writes_and_restore_undoes_both(pristine, tmp_path):
    work = tmp_path / "work"
    before = {name: hashes(pristine / name) for name in LAYOUT}
    done = []
    for jobs in ("1", "3"):
        proc, after, qdirs = _salvage_copy(pristine, work, jobs)
        assert proc.returncode == 1 | 8, proc.stderr
        assert b'"repair_resumed"' in proc.stdout
        assert after != before
        for q in reversed(qdirs):
            assert run_kseg("restore", q).returncode == 0, q
        assert {name: hashes(work / name) for name in LAYOUT} == before, jobs
        done.append((proc.returncode, STAMP.sub(b"/T/", proc.stdout), proc.stderr, after))
        shutil.rmtree(work)
    assert done[0] == done[1]


def test_salvage_to_jobs_3_writes_what_jobs_1_writes(pristine, tmp_path):
    roots = [pristine / "logs-a"]
    out = []
    for jobs in ("1", "3"):
        to = tmp_path / "spare"
        proc = run_kseg("salvage", *roots, "--to", to, "--jobs", jobs)
        out.append((proc.returncode, proc.stdout, proc.stderr, hashes(to)))
        shutil.rmtree(to)
    assert out[0][0] == 1 | 8, out[0][2]
    assert out[0] == out[1]


@settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    topic=st.sampled_from([None, "t0", "t[12]", "t[0-4]", "x"]),
    partition=st.sampled_from([None, 0, 1]),
    jobs=st.integers(2, 4),
)
def test_a_selection_salvaged_dry_by_jobs_n_as_by_one(pristine, topic, partition, jobs):
    from kseg.salvage.run import SalvageRun
    from kseg.storage.tree import InputError
    from kseg.verify.run import VerifyOptions

    roots = [pristine / name for name in LAYOUT]
    out = []
    for n in (1, jobs):
        opts = VerifyOptions(repair=True, dry_run=True, topic=topic, partition=partition, jobs=n)
        run = SalvageRun(opts)
        try:
            out.append((list(run.events(roots)), run.outcome))
        except InputError as exc:  # nothing selected
            out.append(str(exc))
    assert out[0] == out[1]
