"""Running the real entry point under a memory limit (RLIMIT_AS) and a timeout."""

from __future__ import annotations

import resource
import subprocess
from typing import NamedTuple

from tests.helpers import kseg_command

GIB = 1 << 30


def run_limited(*args, limit: int = GIB, timeout: float = 120, stdout=subprocess.PIPE, env=None):
    """kseg as a subprocess whose address space is capped at ``limit`` bytes."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run(
        [*kseg_command(), *map(str, args)],
        stdout=stdout,
        stderr=subprocess.PIPE,
        timeout=timeout,
        preexec_fn=cap,
        env=env,
    )


def assert_clean_failure_modes(proc) -> None:
    """No traceback, no MemoryError, no signal death."""
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}: {err[-500:]}"
    assert "Traceback" not in err and "MemoryError" not in err, err[-2000:]
    assert "internal error" not in err, err[-2000:]


class Measured(NamedTuple):
    """What run_measured saw: the exit code, stderr, the child's peak RSS (wait4's ru_maxrss, in
    bytes), its stdout lines up to LONG bytes, and of each longer line (length, sha256 hex)."""

    returncode: int
    stderr: bytes
    max_rss: int
    lines: list[bytes]
    long_lines: list[tuple[int, str]]


LONG = 1 << 20


# Forks kseg from a fresh, small interpreter and reports its wait4 (exit status, ru_maxrss in
# KiB) to argv[1]: a child forked from the test process itself would count the test process's
# pages (Linux keeps the high-water mark of the forked copy across exec), hundreds of MB late in
# a test session.
_MEASURE = """
import os, resource, sys
out, limit, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
pid = os.fork()
if pid == 0:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    os.execvp(cmd[0], cmd)
_, status, usage = os.wait4(pid, 0)
with open(out, "w") as f:
    f.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""


def run_measured(*args, limit: int = GIB, timeout: float = 120, env=None, cwd=None) -> Measured:
    """kseg as a subprocess under RLIMIT_AS ``limit``, its stdout read as it comes (a line of
    hundreds of MB is hashed, never held) and its peak memory measured by wait4 (forked from a
    fresh interpreter, see _MEASURE)."""
    import hashlib
    import os
    import signal
    import sys
    import tempfile
    import threading

    lines: list[bytes] = []
    long_lines: list[tuple[int, str]] = []
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r") as result:
        proc = subprocess.Popen(
            [sys.executable, "-S", "-c", _MEASURE, result.name, str(limit), *kseg_command()]
            + [str(a) for a in args],
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        timer = threading.Timer(timeout, os.killpg, (proc.pid, signal.SIGKILL))
        timer.start()
        try:
            line, size, digest = bytearray(), 0, None
            while chunk := proc.stdout.read(1 << 20):
                while chunk:
                    cut = chunk.find(b"\n") + 1
                    part, chunk = (chunk[:cut], chunk[cut:]) if cut else (chunk, b"")
                    size += len(part)
                    if digest is None and size > LONG:
                        digest = hashlib.sha256(line)
                    if digest is None:
                        line += part
                    else:
                        digest.update(part)
                    if cut:
                        if digest is None:
                            lines.append(bytes(line))
                        else:
                            long_lines.append((size, digest.hexdigest()))
                        line, size, digest = bytearray(), 0, None
            if digest is not None:  # a last line without its newline
                long_lines.append((size, digest.hexdigest()))
            elif line:
                lines.append(bytes(line))
            proc.stdout.close()
            proc.wait()
        finally:
            timer.cancel()
        assert proc.returncode == 0, f"the measuring interpreter failed: {proc.returncode}"
        code, max_rss = map(int, result.read().split())
        err.seek(0)
        return Measured(code, err.read(), max_rss * 1024, lines, long_lines)


def run_with_rss(
    *args,
    timeout: float = 120,
    env=None,
    limit: int = resource.RLIM_INFINITY,
    keep_stdout: bool = True,
    argv: list | None = None,
):
    """kseg as a subprocess under RLIMIT_AS ``limit``: (exit code, stdout (b"" unless
    ``keep_stdout``), stderr, peak RSS in bytes), measured as run_measured does (forked from a
    fresh interpreter, see _MEASURE). Killed, and the test failed by TimeoutExpired, past
    ``timeout`` seconds. ``argv``: another command line than kseg's with ``args``."""
    import os
    import signal
    import sys
    import tempfile

    command = argv or [*kseg_command(), *args]
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.NamedTemporaryFile("r") as result,
    ):
        proc = subprocess.Popen(
            [sys.executable, "-S", "-c", _MEASURE, result.name, str(limit)]
            + [str(a) for a in command],
            stdin=subprocess.DEVNULL,
            stdout=out if keep_stdout else subprocess.DEVNULL,
            stderr=err,
            env=env,
            start_new_session=True,
        )
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        assert proc.returncode == 0, f"the measuring interpreter failed: {proc.returncode}"
        code, max_rss = map(int, result.read().split())
        out.seek(0)
        err.seek(0)
        return code, out.read(), err.read(), max_rss * 1024
