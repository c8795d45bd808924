"""Running the real entry point under a memory limit (RLIMIT_AS) and a timeout."""

from __future__ import annotations

import resource
import subprocess

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


def run_measured(*args, timeout: float = 120, env=None):
    """kseg as a subprocess: (exit code, stdout, stderr, peak RSS in bytes from wait4's
    ru_maxrss). Killed (and the test failed by TimeoutExpired) past ``timeout`` seconds."""
    import os
    import tempfile
    import threading

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([*kseg_command(), *map(str, args)], stdout=out, stderr=err, env=env)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        if proc.returncode == -9:
            raise subprocess.TimeoutExpired(args, timeout)
        out.seek(0)
        err.seek(0)
        return proc.returncode, out.read(), err.read(), usage.ru_maxrss * 1024
