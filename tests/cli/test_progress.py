"""A progress bar on stderr only where a person watches: a terminal on stderr, no --quiet.
The real entry point; the terminal is a pseudo-tty (python's pty module)."""

from __future__ import annotations

import os
import pty
import select
import subprocess

import pytest

from tests.helpers import kseg_command, run_kseg


def _env(base: dict | None = None) -> dict:
    env = {k: v for k, v in (base or os.environ).items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env["TERM"] = "xterm"
    return env


def run_with_tty_stderr(*args, stdout=subprocess.PIPE, timeout: float = 120, env=None):
    """Run kseg with stderr on a pseudo-terminal; returns (exit code, stdout, terminal bytes).
    ``env``: the subprocess's environment (default: this one, made to look like a terminal's)."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [*kseg_command(), *map(str, args)],
            stdout=stdout,
            stderr=slave,
            stdin=subprocess.DEVNULL,
            env=_env(env),
        )
        os.close(slave)
        seen = b""
        out = b""
        while True:
            ready, _, _ = select.select([master], [], [], timeout)
            if not ready:
                proc.kill()
                raise AssertionError("kseg hung")
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            seen += data
        if proc.stdout is not None:
            out = proc.stdout.read()
        return proc.wait(timeout), out, seen
    finally:
        os.close(master)


@pytest.fixture()
def bad_copy(corrupt_cases, tmp_path):
    import shutil

    case = corrupt_cases[0]
    return shutil.copytree(case.partition_dir, tmp_path / case.partition_dir.name)


def test_no_bar_when_stderr_is_not_a_terminal(tree, bad_copy, tmp_path):
    proc = run_kseg("verify", tree)
    assert proc.returncode == 0 and proc.stderr == b""
    proc = run_kseg("dump", tree / "orders-0", "-f", "json")
    assert proc.returncode == 0 and proc.stderr == b""
    proc = run_kseg("index", "rebuild", bad_copy, "--dry-run")
    assert proc.stderr == b""
    proc = run_kseg("stats", tree)
    assert proc.returncode == 0 and proc.stderr == b""


@pytest.mark.parametrize(
    "args",
    [("verify",), ("index", "rebuild", "--dry-run"), ("dump", "-f", "json"), ("stats",)],
    ids=["verify", "rebuild", "dump-to-a-file", "stats"],
)
def test_a_bar_on_a_terminal_and_the_same_exit_code(bad_copy, args, tmp_path):
    plain = run_kseg(*args, bad_copy)
    with open(tmp_path / "out", "wb") as f:
        code, _, seen = run_with_tty_stderr(*args, bad_copy, stdout=f)
    assert code == plain.returncode
    assert args[0].encode() in seen and b"\x1b[" in seen  # the bar, drawn and cleared
    if args[0] == "dump":
        assert (tmp_path / "out").read_bytes() == plain.stdout  # the data is untouched
    code, _, seen = run_with_tty_stderr(*args, bad_copy, "--quiet", stdout=subprocess.DEVNULL)
    assert code == plain.returncode and args[0].encode() not in seen


def test_dump_to_the_terminal_draws_no_bar(tree):
    """stdout on the terminal too: the data is what the person reads, no bar through it."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.run(
            [*kseg_command(), "dump", tree / "orders-0", "--limit", "3"],
            stdout=slave,
            stderr=slave,
            env=_env(),
            timeout=120,
        )
        os.close(slave)
        seen = b""
        while select.select([master], [], [], 0.5)[0]:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            seen += data
    finally:
        os.close(master)
    assert proc.returncode == 0 and b"Dumping" in seen and b"\x1b[?25l" not in seen


def test_verify_on_a_terminal_prints_data_above_the_bar(bad_copy):
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [*kseg_command(), "verify", bad_copy],
            stdout=slave,
            stderr=slave,
            stdin=subprocess.DEVNULL,
            env=_env(),
        )
        os.close(slave)
        seen = b""
        while True:
            if not select.select([master], [], [], 60)[0]:
                proc.kill()
                raise AssertionError("hung")
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            seen += data
        code = proc.wait(60)
    finally:
        os.close(master)
    assert code == 4
    text = seen.decode("utf-8", "replace")
    assert "corrupt" in text and "1 partitions, 1 segments" in text


def test_problems_only_leaves_out_ok_segments(tree, bad_copy):
    proc = run_kseg("verify", tree, "--problems-only")
    lines = proc.stdout.decode().splitlines()
    assert proc.returncode == 0 and not [ln for ln in lines if ": ok (" in ln]
    assert lines[-1].startswith("7 partitions,")  # the summary still counts them all
    full = run_kseg("verify", tree).stdout.decode()
    assert full.count(": ok (") > 10
    proc = run_kseg("verify", bad_copy, "--problems-only", "-f", "json")
    assert b'"status":"corrupt"' in proc.stdout and b'"status":"ok"' not in proc.stdout


# --- the bar follows the walk within a segment ---------------------------------------------


class _Shown:
    """Stands in for rich's Progress: records every ``completed`` the bar shows."""

    def __init__(self) -> None:
        self.shown: list[int] = []

    def update(self, task, completed=None, **kw) -> None:
        if completed is not None:
            self.shown.append(completed)

    def refresh(self) -> None:  # the bar redraws itself (no thread), at most 5 times a second
        pass

    def stop(self) -> None:
        pass


def _one_segment(tmp_path):
    from kseg import LogWriter, Record

    pdir = tmp_path / "logs" / "big-0"
    with LogWriter(pdir, clock=lambda: 1_700_000_000_000) as w:
        for i in range(300):
            w.append([Record(b"k%d" % i, b"v" * 200, 1_700_000_000_000 + i)])
    (log,) = pdir.glob("*.log")
    return pdir, log


def _runs(pdir):
    from kseg.index.run import RebuildRun
    from kseg.stats.stats import StatsOptions, StatsRun
    from kseg.storage.tree import resolve
    from kseg.verify.run import VerifyOptions, VerifyRun

    opts = VerifyOptions(deep=False, repair=False, dry_run=False, keep_later_segments=False,
                         quarantine=None, force=False, index_interval_bytes=4096, topic=None,
                         partition=None)  # fmt: skip
    return {
        "verify": lambda: VerifyRun(opts).events([pdir]),
        "stats": lambda: StatsRun(resolve([pdir]), StatsOptions()).events(),
        "index rebuild": lambda: RebuildRun(resolve([pdir]), dry_run=True).events(),
    }


@pytest.mark.parametrize("command", ["verify", "stats", "index rebuild"])
def test_the_bar_moves_within_a_segment(tmp_path, monkeypatch, command):
    """One large segment no longer holds the bar at 0 until its end: the walk reports how far
    it has read between blocks of rows (here blocks of 16 batches), the bar shows it, and the
    segment's own event then counts it once (the bar ends at the total, not past it)."""
    from kseg.render import progress
    from kseg.storage import kernel_walk, walked

    monkeypatch.setattr(kernel_walk, "CHUNK_BATCHES", 16)
    monkeypatch.setattr(walked, "_EVERY_ROWS", 16)
    pdir, log = _one_segment(tmp_path)
    size = log.stat().st_size
    bar = progress.Bar(False, command, size)
    shown = _Shown()
    bar._progress, bar._task = shown, 0  # a drawn bar, minus the drawing
    monkeypatch.setattr(bar, "due", lambda every=0.1: True)  # the 10/s throttle is a clock
    bar._previous_watcher, bar._watched = walked.watch(bar.walked), True
    before_event = None
    try:
        for ev in progress.per_segment(_runs(pdir)[command](), bar):
            if (
                ev["type"] in ("segment", "index_rebuild", "partition_stats")
                and before_event is None
            ):
                before_event = list(shown.shown)
    finally:
        bar.close()
    assert not walked.watching()  # closing the bar stops the watching
    inside = sorted({n for n in before_event if 0 < n < size})
    assert len(inside) >= 5, before_event  # moved several times within the one segment
    assert shown.shown == sorted(shown.shown)  # never backwards
    assert shown.shown[-1] == size and not bar._reading  # counted once, nothing left over
