"""Defects an operator trial of kseg found, each through the real `kseg` entry point."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import copy_partition, run_kseg
from tests.verify.test_verify import snapshot_tree

READ_ONLY = [  # (command, options after the PATH)
    (["verify"], []),
    (["dump"], []),
    (["stats"], []),
    (["index", "check"], []),
    (["seek"], ["--offset", "3"]),
]


@pytest.mark.parametrize(("cmd", "opts"), READ_ONLY, ids=lambda c: " ".join(c))
@pytest.mark.parametrize("dot", [".", "./"])
def test_dot_inside_a_partition_dir_is_that_partition(tree, cmd, opts, dot):
    """`cd <root>/orders-0 && kseg verify .` was refused (16, "'.' ... is not named
    <topic>-<partition>"): the name check read the literal `.`. A PATH is judged by the directory
    it resolves to (kseg.storage.tree.layout), and the partition is worked on by its absolute
    path, as "$PWD" is: the same output and exit code as "$PWD"."""
    pdir = tree / "orders-0"
    by_dot = run_kseg(*cmd, dot, *opts, cwd=pdir)
    by_pwd = run_kseg(*cmd, pdir, *opts, cwd=pdir)
    assert by_pwd.returncode in (0, 1), by_pwd.stderr
    assert by_dot.returncode == by_pwd.returncode, by_dot.stderr.decode()
    assert by_dot.stdout == by_pwd.stdout
    assert by_dot.stderr == by_pwd.stderr
    assert b"orders" in by_dot.stdout


def test_dot_in_a_root_keeps_relative_paths(tree):
    """`.` naming a log.dirs root was always a root: its partitions are still shown relative
    to it (as given), not made absolute."""
    proc = run_kseg("seek", ".", "--offset", "3", "--topic", "^orders$", cwd=tree)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b" in orders-0/00000000000000000000.log at byte" in proc.stdout


def _repair_copy(corrupt_cases, log_dir: Path) -> None:
    case = next(c for c in corrupt_cases if c.name == "crc-flip")
    copy_partition(case.partition_dir, log_dir)
    proc = run_kseg("verify", log_dir, "--repair")
    assert proc.returncode == 1, proc.stderr.decode()


def test_restore_takes_the_kseg_quarantine_dir_the_runbook_names(corrupt_cases, tmp_path):
    """README's runbook: "removed bytes are in ../kseg-quarantine/". `kseg restore` on that dir
    said "no manifest.json here or in its subdirectories" (16): its manifests are three levels
    down (<log.dir name>/<run>/<partition>/). Now it is taken as a quarantine root is: a single
    run is restored; several runs, also of several log dirs, are refused (16), named newest
    first, with nothing changed."""
    logs = tmp_path / "logs"
    _repair_copy(corrupt_cases, logs)
    qtop = tmp_path / "kseg-quarantine"
    (run,) = (qtop / "logs").iterdir()
    proc = run_kseg("restore", qtop)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"undid" in proc.stdout
    manifest = json.loads(next(run.glob("*/manifest.json")).read_text())
    assert manifest["status"] == "restored"
    # a second repair run: which run first matters
    assert run_kseg("verify", logs, "--repair").returncode == 1
    runs = sorted((qtop / "logs").iterdir())
    assert len(runs) == 2
    before = snapshot_tree(tmp_path)
    proc = run_kseg("restore", qtop)
    err = proc.stderr.decode()
    assert proc.returncode == 16 and err.count("\n") == 1, err
    assert "2 repair runs" in err
    assert f"newest first: {runs[1]}, {runs[0]} (e.g. kseg restore {runs[1]})" in err
    assert snapshot_tree(tmp_path) == before
    # the quarantines of two log dirs: refused the same way, both named
    _repair_copy(corrupt_cases, tmp_path / "logs-b")
    shutil.rmtree(qtop / "logs")
    _repair_copy(corrupt_cases, tmp_path / "logs-c")
    proc = run_kseg("restore", qtop)
    err = proc.stderr.decode()
    assert proc.returncode == 16 and err.count("\n") == 1, err
    assert "2 log dirs" in err and "2 repair runs" in err
    assert str(qtop / "logs-b") in err and str(qtop / "logs-c") in err


@pytest.mark.parametrize(
    "search", [[], ["--key-eq", "key-1", "--from-offset", "0", "--to-offset", "100"]]
)
def test_dump_count_problem_lines_name_the_file(corrupt_cases, search):
    """`dump --count` prints no `Dumping <file>` line, so its problem lines said only "ERROR
    crc_mismatch at byte 3391 ...". README "Conventions": every problem names the file and the
    byte position: in --count they carry the file, as verify's lines do."""
    case = next(c for c in corrupt_cases if c.name == "crc-flip")
    (log,) = sorted(case.partition_dir.glob("*.log"))
    proc = run_kseg("dump", case.partition_dir, *search, "--count")
    assert proc.returncode == 4, proc.stderr.decode()
    problems = [ln for ln in proc.stdout.decode().splitlines() if ln.startswith("ERROR ")]
    assert problems
    for line in problems:
        kind = line.split()[1]
        assert line.startswith(f"ERROR {kind} {log} at byte "), line
    assert "crc_mismatch" in {ln.split()[1] for ln in problems}
