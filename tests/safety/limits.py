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
