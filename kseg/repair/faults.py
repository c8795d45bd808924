"""Fault points for the kill- and stall-during-repair tests, inert unless a test enables one.

The tests run kseg as a subprocess, so a point is enabled through the environment:
KSEG_TEST_CRASH_AT exits at the named point (status 99, leaving the files as a kill would);
KSEG_TEST_STALL_AT stops there until stdin closes. Nothing is printed (the library never writes
to the terminal): a stall tells the test where it stopped by writing the point's name to the
file KSEG_TEST_STALL_FILE names, which the test waits for.
"""

from __future__ import annotations

import os

CRASH_ENV = "KSEG_TEST_CRASH_AT"  # exit at a named point (kill-during-repair tests)
STALL_ENV = "KSEG_TEST_STALL_AT"  # stop at a named point until stdin closes
STALL_FILE_ENV = "KSEG_TEST_STALL_FILE"  # where a stall writes the point's name


def fault_point(name: str) -> None:
    """A named point of a repair or restore (e.g. ``copied``, ``moved:0``); does nothing
    unless a test named it in the environment."""
    if os.environ.get(CRASH_ENV) == name:
        os._exit(99)
    if os.environ.get(STALL_ENV) == name:
        import sys

        where = os.environ.get(STALL_FILE_ENV)
        if where:  # whole or not at all: the test may read it at any moment
            tmp = f"{where}.tmp"
            with open(tmp, "w") as f:
                f.write(f"{name}\n")
            os.replace(tmp, where)
        sys.stdin.read()  # until the test closes our stdin
