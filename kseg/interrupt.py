"""SIGINT/SIGTERM as an exception that nothing but the entry point catches.

Python turns SIGINT into KeyboardInterrupt, which typer converts into a silent exit 130 and
which libraries (pyspark, click) catch and translate; SIGTERM kills the process outright. kseg
raises ``Interrupted`` instead: a BaseException that no ``except Exception`` and no
``except KeyboardInterrupt`` swallows, so ``finally`` blocks run (temp files are removed) and
the entry point exits 32 with one line on stderr.
"""

from __future__ import annotations

import signal

from .exitcodes import Exit

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """Raised by the signal handler. ``code`` is the exit code (32, OR-ed by verify with what it
    had already found)."""

    def __init__(self, signum: int = signal.SIGINT, code: int = Exit.INTERRUPTED) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.code = int(code) | Exit.INTERRUPTED


_received: list[int] = []


def _raise(signum, frame) -> None:
    _received.append(signum)
    raise Interrupted(signum)


def received() -> bool:
    """Did a signal arrive? (cleanup code may have replaced the Interrupted by its own error)"""
    return bool(_received) or bool(_late)


_late: list[int] = []


def _remember(signum, frame) -> None:
    _late.append(signum)


def install() -> dict:
    """From now on SIGINT and SIGTERM raise Interrupted (call it first thing, and again after
    anything that installs its own handler, e.g. pyspark's SparkContext). Returns the previous
    handlers, for ``restore`` when kseg runs inside another program (tests)."""
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    for s in SIGNALS:
        signal.signal(s, _raise)
    return previous


def restore(previous: dict) -> None:
    """Put back a host program's handlers; kseg's own process keeps its (and any deferral) to
    the end, so that a late signal is not a traceback."""
    for s, handler in previous.items():
        if handler is not None and handler not in (_raise, _remember):
            signal.signal(s, handler)


def defer() -> None:
    """While finishing (flushing, cleaning up): only remember a signal; see ``arrived``."""
    for s in SIGNALS:
        signal.signal(s, _remember)


def block() -> None:
    """Hold SIGINT and SIGTERM pending for the rest of the process (it is about to exit)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)


def exit_now(code: int = Exit.INTERRUPTED) -> None:
    """Say so (one line on stderr) and exit; a second signal meanwhile changes nothing."""
    import os
    import sys

    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    try:
        sys.stderr.write("kseg: interrupted\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(int(code) | Exit.INTERRUPTED)
