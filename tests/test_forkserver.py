"""run_kseg's fork server (tests/forkserver.py) answers as the console script does: the same
stdout, stderr and exit status as a real `kseg` process for the same command line, stdin, cwd
and environment; a timeout kills the child as subprocess.run does; a call that ends half-way
(an error, an interrupt) leaves the next call its own answer; a command line that needs a fresh
interpreter runs as one."""

from __future__ import annotations

import os
import resource
import signal
import subprocess

import pytest

from tests.helpers import damaged_copy, fork_enabled, fork_server, kseg_command, run_kseg

pytestmark = pytest.mark.skipif(not fork_enabled(), reason="run_kseg runs real processes here")


def real(*args, input=None, cwd=None, env=None):
    return subprocess.run(
        [*kseg_command(), *map(str, args)], input=input, capture_output=True, cwd=cwd, env=env
    )


def reaped() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def forked(*args, **kw):
    """run_kseg, checked to have taken the fork path: a real process would be the caller's
    child, reaped with its CPU time (a Python start alone is tens of ms)."""
    before = reaped()
    proc = run_kseg(*args, **kw)
    assert reaped() == before, "run_kseg ran a real process"
    return proc


def same(forked_run, real_run):
    assert (forked_run.returncode, forked_run.stdout, forked_run.stderr) == (
        real_run.returncode,
        real_run.stdout,
        real_run.stderr,
    )


def test_answers_as_the_console_script(tree, tmp_path):
    damaged = damaged_copy(tree, tmp_path / "tree")
    cases = [
        (("--version",), {}),
        (("verify", damaged), {}),  # exit 4 and 8 bits, findings on stdout and stderr
        (("verify", damaged, "-f", "json"), {}),
        (("dump", "orders-0", "--limit", "2"), {"cwd": damaged}),  # a relative path
        (("verify", damaged, "--bogus"), {}),  # usage: 16
        (("dump", damaged / "orders-0"), {"env": {**os.environ, "KSEG_KERNEL": "no"}}),
        (("seek", damaged / "orders-0", "--time", "0"), {"env": {**os.environ, "NO_COLOR": "1"}}),
    ]
    for args, kw in cases:
        same(forked(*args, **kw), real(*args, **kw))


def test_input_reaches_the_childs_stdin(tree, tmp_path):
    """A repair stalled at a fault point reads stdin to its end, then goes on (kseg.repair.
    faults): with ``input`` given, the fast path and a real process repair alike."""
    env = {**os.environ, "KSEG_TEST_STALL_AT": "copied"}
    logs = []
    for name, run in (("forked", forked), ("real", real)):
        damaged = damaged_copy(tree, tmp_path / name)
        proc = run("verify", damaged / "orders-0", "--repair", input=b"go\n" * 50_000, env=env)
        assert proc.returncode == 1, proc.stderr  # repaired (its report names a time: not compared)
        logs.append({p.name: p.read_bytes() for p in (damaged / "orders-0").glob("*.log")})
    assert logs[0] == logs[1]


def stalled_repair(tree, tmp_path, **kw):
    """A repair that waits on stdin (the caller's fd 0: here a pipe nobody writes to)."""
    damaged = damaged_copy(tree, tmp_path / "tree")
    env = {**os.environ, "KSEG_TEST_STALL_AT": "copied"}
    saved = os.dup(0)
    r, w = os.pipe()
    os.dup2(r, 0)
    try:
        return run_kseg("verify", damaged / "orders-0", "--repair", env=env, **kw)
    finally:
        os.dup2(saved, 0)
        for fd in (saved, r, w):
            os.close(fd)


def live_children() -> set[int]:
    """The pids of the fork server's children (its forked `kseg` processes) still there."""
    server = fork_server().proc.pid
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(server)], capture_output=True)
    return {int(p) for p in out.stdout.split()}


def test_a_timeout_kills_the_child_as_subprocess_run_does(tree, tmp_path):
    with pytest.raises(subprocess.TimeoutExpired):
        stalled_repair(tree, tmp_path, timeout=1)
    assert not live_children()  # killed and collected
    assert forked("verify", "/nonexistent").returncode == 16  # the next call: its own answer


class Alarm(Exception):
    pass


def test_a_call_that_ends_half_way_leaves_the_next_its_own_answer(tree, tmp_path):
    """An exception inside the call (here a signal handler's, as a test's timeout plugin
    raises) kills the child and reads its status: the next call does not get it."""

    def ring(signum, frame):
        raise Alarm

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        with pytest.raises(Alarm):
            stalled_repair(tree, tmp_path, timeout=60)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert not live_children()
    assert forked("verify", "/nonexistent", timeout=30).returncode == 16
    with pytest.raises(TypeError):  # as subprocess.run: input must be bytes
        run_kseg("--version", input="text")
    assert forked("verify", "/nonexistent").returncode == 16
    assert forked("--version").returncode == 0


def test_a_start_up_environment_runs_a_real_process(tree):
    """PYTHON* changes how the interpreter starts: such a call is a real process."""
    before = reaped()
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    same(run_kseg("verify", tree, env=env), real("verify", tree, env=env))
    assert reaped() > before


def test_a_changed_umask_runs_a_real_process(tree):
    """The umask (like blocked signals and resource limits) is the server's in a forked child:
    a call made under another one runs as a real process."""
    forked("--version")  # the server exists, with the umask as it is
    old = os.umask(0o077)
    try:
        before = reaped()
        assert run_kseg("--version").returncode == 0
        assert reaped() > before
    finally:
        os.umask(old)
