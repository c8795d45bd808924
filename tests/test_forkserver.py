"""run_kseg's fork server (tests/forkserver.py) answers as the console script does: the same
stdout, stderr and exit status as a real `kseg` process for the same command line, stdin, cwd
and environment; a timeout kills the child as subprocess.run does; a command line that needs a
fresh interpreter runs as one."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.helpers import damaged_copy, fork_server, kseg_command, run_kseg

pytestmark = pytest.mark.skipif(fork_server() is None, reason="run_kseg runs real processes here")


def real(*args, input=None, cwd=None, env=None):
    return subprocess.run(
        [*kseg_command(), *map(str, args)], input=input, capture_output=True, cwd=cwd, env=env
    )


def same(forked, exec_):
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        exec_.returncode,
        exec_.stdout,
        exec_.stderr,
    )


def test_answers_as_the_console_script(tree, tmp_path):
    tree = damaged_copy(tree, tmp_path / "tree")
    log = sorted((tree / "orders-0").glob("*.log"))[0]
    cases = [
        (("--version",), {}),
        (("verify", tree), {}),  # exit 4 and 8 bits, findings on stdout and stderr
        (("verify", tree, "-f", "json"), {}),
        (("dump", "-", "-f", "json"), {"input": log.read_bytes()}),  # stdin
        (("dump", "orders-0", "--limit", "2"), {"cwd": tree}),  # a relative path
        (("verify", tree, "--bogus"), {}),  # usage: 16
        (("dump", tree / "orders-0", "-f", "json"), {"env": {**os.environ, "KSEG_KERNEL": "no"}}),
        (("seek", tree / "orders-0", "--time", "0"), {"env": {**os.environ, "NO_COLOR": "1"}}),
    ]
    for args, kw in cases:
        same(run_kseg(*args, **kw), real(*args, **kw))


def test_a_timeout_kills_the_child_as_subprocess_run_does(tree, tmp_path):
    """Without ``input`` the child reads the caller's fd 0, as subprocess.run's would: here a
    pipe nobody writes to, where a repair stalled at a fault point waits (kseg.repair.faults)
    until the timeout kills it."""
    damaged = damaged_copy(tree, tmp_path / "tree")
    env = {**os.environ, "KSEG_TEST_STALL_AT": "copied"}
    saved = os.dup(0)
    r, w = os.pipe()
    os.dup2(r, 0)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            run_kseg("verify", damaged / "orders-0", "--repair", timeout=1, env=env)
    finally:
        os.dup2(saved, 0)
        for fd in (saved, r, w):
            os.close(fd)
    assert run_kseg("--version").returncode == 0  # and the server serves the next call


def test_its_children_are_not_the_callers(tree):
    """The forked child is the server's: the caller's wait() has nothing to collect (evidence
    the fast path ran, not a real process)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    run_kseg("verify", tree)
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime == before


def test_a_start_up_environment_runs_a_real_process(tree):
    """PYTHON* changes how the interpreter starts: such a call is a real process."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    same(run_kseg("verify", tree, env=env), real("verify", tree, env=env))
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime > before
