"""Shared test helpers: run the CLI in-process, parse JSON Lines, copy fixture partitions."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import orjson
import pytest

from kseg.cli.entry import run_app

DOCS = Path(__file__).resolve().parents[1] / "docs"  # the documentation site's pages (mkdocs)


def doc(page: str) -> str:
    """The text of a documentation page, e.g. ``doc("runbooks/stuck-transaction.md")``."""
    return (DOCS / page).read_text()


def run_cli(monkeypatch, capsysbinary, *args) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["kseg", *map(str, args)])
    with pytest.raises(SystemExit) as exc:
        run_app()
    out, err = capsysbinary.readouterr()
    return exc.value.code, out.decode(), err.decode()


def events(text: str | bytes) -> list[dict]:
    return [orjson.loads(line) for line in text.splitlines() if line.strip()]


def copy_partition(src: Path, dest_root: Path) -> Path:
    dest = dest_root / src.name
    shutil.copytree(src, dest)
    return dest


def kseg_command() -> list[str]:
    """The real entry point, as an operator runs it: the venv's `kseg` script when installed."""
    script = Path(sys.executable).with_name("kseg")
    return [str(script)] if script.exists() else [sys.executable, "-m", "kseg"]


_fork_server: list = []  # this test process's tests.forkserver.ForkServer, once started


def fork_enabled() -> bool:
    """Whether run_kseg forks its processes (tests/forkserver.py): not with KSEG_TEST_FORK=0,
    nor without a console script (``python -m kseg`` is then the entry point, run as a real
    process)."""
    import os

    from tests.forkserver import ENV

    return os.environ.get(ENV, "1") != "0" and len(kseg_command()) == 1


def fork_server():
    """The fork server run_kseg uses, started on first need (and again if the last one broke
    or died), or None (``fork_enabled``)."""
    if not fork_enabled():
        return None
    if not _fork_server or not _fork_server[0].usable():
        from tests.forkserver import ForkServer

        if _fork_server:
            _fork_server[0].close()
        _fork_server[:] = [ForkServer(kseg_command()[0])]
    return _fork_server[0]


def run_kseg(
    *args, input: bytes | None = None, timeout: float = 120, cwd=None, env=None, fork=True
):
    """Run kseg as a subprocess; returns CompletedProcess with bytes stdout/stderr. The process
    is forked from a server that has kseg imported (tests/forkserver.py: the console script's
    entry point, in a process of its own) unless the call needs a fresh interpreter or
    ``fork`` is False (a fresh one: e.g. its own string-hash seed)."""
    import subprocess

    argv = [*kseg_command(), *map(str, args)]
    server = fork_server() if fork else None
    done = server and server.run(argv, input=input, timeout=timeout, cwd=cwd, env=env)
    if done is not None:
        return done
    return subprocess.run(
        argv,
        input=input,
        capture_output=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
    )


def copy_log07(log07: Path, tmp_path: Path) -> Path:
    """A writable copy of the 0.7 log dir (its .kafka_cleanshutdown too): its events-0."""
    dst = tmp_path / "logs"
    shutil.copytree(log07, dst)
    return dst / "events-0"


def segments07(pdir: Path) -> list[Path]:
    return sorted(pdir.glob("*.kafka"))


def damaged_copy(tree: Path, dest: Path) -> Path:
    """A copy of the fixture tree with damage in two partitions: a flipped byte in a segment of
    orders-0 (a CRC error) and, in orders-1, a directory where a segment should be (unreadable,
    also when the suite runs as root)."""
    shutil.copytree(tree, dest)
    log = sorted((dest / "orders-0").glob("*.log"))[1]
    data = bytearray(log.read_bytes())
    data[200] ^= 0xFF
    log.write_bytes(bytes(data))
    hole = sorted((dest / "orders-1").glob("*.log"))[0]
    hole.unlink()
    hole.mkdir()
    return dest


def same_with_jobs(*args, jobs: int = 3):
    """Run kseg with ``--jobs 1`` and ``--jobs N``: stdout, stderr and the exit code must be the
    same; returns the --jobs 1 run."""
    one = run_kseg(*args, "--jobs", "1")
    # a fresh interpreter: its string-hash seed is not the forked run's, so output that
    # depends on a set's order differs between the two
    many = run_kseg(*args, "--jobs", str(jobs), fork=False)
    assert many.stderr == one.stderr
    assert many.stdout == one.stdout
    assert many.returncode == one.returncode
    return one
