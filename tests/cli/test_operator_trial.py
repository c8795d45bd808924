"""Defects an operator trial of kseg found, each through the real `kseg` entry point."""

from __future__ import annotations

import pytest

from tests.helpers import run_kseg

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
