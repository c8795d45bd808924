"""Contract defects operators found (issue 16, item 6), each through the real entry point."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import run_kseg


@pytest.mark.parametrize(
    ("args", "what", "where"),
    [
        (["dump", "--no-such-option", "x"], "No such option: --no-such-option", "kseg dump"),
        (["verify"], "Missing argument", "kseg verify"),
        (["index", "check"], "Missing argument", "kseg index check"),
        (["seek", "x", "--time", "latest", "--offset", "1"], "--time/--offset", "kseg seek"),
        (["verify", "x", "--dry-run"], "--dry-run goes with --repair", "kseg verify"),
        (["no-such-command"], "No such command", "kseg"),
    ],
)
def test_a_usage_error_is_one_line_with_the_help_hint(args, what, where):
    """README: a usage error is one `kseg: ...` line on stderr, exit 16 (it was three: Click's
    usage line, its hint, a blank line and the error)."""
    proc = run_kseg(*args)
    err = proc.stderr.decode()
    assert proc.returncode == 16, err
    assert proc.stdout == b""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("kseg: ") and what in lines[0]
    assert lines[0].endswith(f"(see '{where} --help')"), lines[0]


def test_a_bad_option_value_found_by_the_library_is_one_line(tmp_path):
    """The library's usage mistakes (BadOption) look like Click's: the option named, one line."""
    proc = run_kseg("seek", tmp_path, "--time", "yesterday-ish")
    err = proc.stderr.decode()
    assert proc.returncode == 16 and err.count("\n") == 1, err
    assert err.startswith("kseg: Invalid value for --time: cannot read 'yesterday-ish'")


def test_seek_on_a_root_without_partitions_says_nothing_was_found(tmp_path):
    """A log.dirs root holding only meta.properties: seek answered nothing, silently, exit 0.
    Now the nothing-found line (kseg.storage.tree's kind, exit 16), as for an empty dir."""
    root = tmp_path / "logs"
    root.mkdir()
    (root / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=abc\n")
    for args in (["--time", "latest"], ["--offset", "0"], ["--time", "latest", "-f", "json"]):
        proc = run_kseg("seek", root, *args)
        err = proc.stderr.decode()
        assert proc.returncode == 16, err
        assert proc.stdout == b""
        assert err.count("\n") == 1 and err.startswith(f"kseg: {root}: no Kafka partition"), err
    # the same exit code as a directory with nothing Kafka in it at all
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_kseg("seek", empty, "--time", "latest").returncode == 16


@pytest.mark.parametrize("command", [("index", "check"), ("index", "rebuild")])
def test_index_commands_on_a_root_without_partitions_say_nothing_was_found(tmp_path, command):
    """index check said "0 identical" and rebuild "0 segments", exit 0: nothing to check is
    never clean. Now the same nothing-found line as seek, exit 16, and nothing written."""
    root = tmp_path / "logs"
    root.mkdir()
    (root / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=abc\n")
    proc = run_kseg(*command, root)
    err = proc.stderr.decode()
    assert proc.returncode == 16 and proc.stdout == b"", err
    assert err.count("\n") == 1 and err.startswith(f"kseg: {root}: no Kafka partition"), err
    assert sorted(p.name for p in root.iterdir()) == ["meta.properties"]


def test_demo_refuses_a_directory_that_is_no_earlier_demo(tmp_path):
    """`kseg demo DIR` on a non-empty directory used to dump whatever was there ("using it as it
    is"); now it refuses (16, one line) unless DIR is an earlier demo, and writes nothing."""
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine\n")
    proc = run_kseg("demo", busy)
    err = proc.stderr.decode()
    assert proc.returncode == 16, err
    assert err.count("\n") == 1 and "is no earlier kseg demo" in err
    assert proc.stdout == b""
    assert sorted(p.name for p in busy.iterdir()) == ["notes.txt"]


def test_demo_reuses_an_earlier_demo(tmp_path):
    demo = tmp_path / "demo"
    first = run_kseg("demo", demo)
    assert first.returncode == 0, first.stderr
    assert b"wrote an example log.dirs tree" in first.stderr
    again = run_kseg("demo", demo)
    assert again.returncode == 0, again.stderr
    assert b"holds an earlier demo; using it as it is" in again.stderr
    assert again.stdout == first.stdout  # the same dump of upgrade-0


def test_a_tree_that_only_looks_like_a_demo_is_refused(tmp_path):
    """The demo is recognised by its meta.properties (cluster.id of the demo) and upgrade-0/:
    a real log dir with an upgrade-0 partition is no demo."""
    demo = tmp_path / "demo"
    assert run_kseg("demo", demo).returncode == 0
    real = tmp_path / "real"
    shutil.copytree(demo, real)
    (real / "meta.properties").write_text("version=1\nnode.id=3\ncluster.id=prod\n")
    proc = run_kseg("demo", real)
    assert proc.returncode == 16 and b"is no earlier kseg demo" in proc.stderr


def test_cli_module_stays_a_veneer():
    """Issue 16: the command line well under 400 lines a module (options -> one library call ->
    render -> exit); since issue 28 a package, kseg/cli/."""
    cli = Path(__file__).resolve().parents[2] / "kseg" / "cli"
    modules = sorted(cli.rglob("*.py"))
    assert len(modules) > 5
    for module in modules:
        assert len(module.read_text().splitlines()) < 400, module
