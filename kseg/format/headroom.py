"""Stopping before the address space runs out: a state that grows with its input (the
`__consumer_offsets` replay's groups) checks here now and then, and raises MemoryError while a
few MiB are still free, so that unwinding and saying "out of memory" have room.

Running into the limit itself can hang CPython 3.11: an exception unwinding through a
generator's frame allocates (the handler's position, a Python int); when that allocation fails
the interpreter unwinds to the same handler again, forever. Only the address-space limit
(RLIMIT_AS, ``prlimit --as``, ``ulimit -v``) is known ahead; without one this does nothing.
"""

from __future__ import annotations

import os
import resource

RESERVE = 16 << 20  # left free when the check fails: unwinding, the message, the exit


def _limit() -> int | None:
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft


def address_space() -> int | None:
    """The process's address space in bytes (VmSize), None when /proc does not tell."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def check(what: str) -> None:
    """Raise MemoryError when the address space is within RESERVE of its limit (``what``: the
    state that grew, for the message)."""
    limit = _limit()
    if limit is None:
        return
    used = address_space()
    if used is not None and used > limit - RESERVE:
        raise MemoryError(f"{what}: {used} of the {limit} bytes of address space allowed in use")
