"""kseg's signal handlers: SIGINT/SIGTERM raise ``Interrupted``, installed first thing by the
process entry (kseg.cli.entry) and again after anything that installs its own (pyspark's
SparkContext: kseg.cli.commands.spark).

Python turns SIGINT into KeyboardInterrupt, which typer converts into a silent exit 130 and
which libraries (pyspark, click) catch and translate; SIGTERM kills the process outright. kseg
raises ``Interrupted`` instead: a BaseException that no ``except Exception`` and no ``except
KeyboardInterrupt`` swallows, so ``finally`` blocks run (temp files are removed) and the entry
point exits 32 with one line on stderr. The library never names it: what it must do on an
interrupt (verify keeps what it found before it) it does for any BaseException that is no
Exception."""

from __future__ import annotations

import signal

from kseg.outcome import Outcome


class Interrupted(BaseException):
    """Raised by the signal handler. ``outcome``: what the run had found before it (verify keeps
    it: the bitmask); kseg.cli.exit.exit_status makes it an exit status (32, OR-ed with that)."""

    def __init__(self, signum: int = signal.SIGINT, outcome: Outcome = Outcome.OK) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.outcome = outcome | Outcome.INTERRUPTED


SIGNALS = (signal.SIGINT, signal.SIGTERM)


_received: list[int] = []


_IMPORT_MACHINERY = "<frozen importlib._bootstrap"  # also matches ..._bootstrap_external
_RETRY_SECONDS = 0.02
_held: list[int] = []  # a signal that arrived inside an import, to raise once it is done


def _importing(frame) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith(_IMPORT_MACHINERY):
            return True
        frame = frame.f_back
    return False


def _raise(signum, frame) -> None:
    _received.append(signum)
    if _importing(frame):
        # An exception raised while a module is being imported can reach a C extension's init
        # (orjson's segfaults, status -11): hold the signal until the import is over.
        _held.append(signum)
        signal.signal(signal.SIGALRM, _retry)
        signal.setitimer(signal.ITIMER_REAL, _RETRY_SECONDS)
        return
    raise Interrupted(signum)


def _retry(signum, frame) -> None:
    """SIGALRM after a held signal: raise it now, or look again shortly if still importing."""
    if not _held:
        return
    if _importing(frame):
        signal.setitimer(signal.ITIMER_REAL, _RETRY_SECONDS)
        return
    if signal.getsignal(signal.SIGINT) is not _raise:  # deferred or restored meanwhile
        _late.extend(_held)
        _held.clear()
        return
    held = _held[0]
    _held.clear()
    raise Interrupted(held)


def redeliver(signum: int) -> None:
    """An Interrupted that Python could not raise (the signal arrived in a finalizer or a
    generator being closed, which print "Exception ignored in" and go on): raise it again
    shortly, where it can be (kseg.cli.entry's unraisable hook calls this)."""
    if signal.getsignal(signal.SIGINT) is not _raise:  # finishing already: only remember it
        _late.append(signum)
        return
    _held.append(signum)
    signal.signal(signal.SIGALRM, _retry)
    signal.setitimer(signal.ITIMER_REAL, _RETRY_SECONDS)


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
            if _held:
                _cancel_retry()


def defer() -> None:
    """While finishing (flushing, cleaning up): only remember a signal; see ``arrived``."""
    for s in SIGNALS:
        signal.signal(s, _remember)


def _cancel_retry() -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)
    _late.extend(_held)
    _held.clear()


def block() -> None:
    """Hold SIGINT and SIGTERM pending for the rest of the process (it is about to exit)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, (*SIGNALS, signal.SIGALRM))
    _cancel_retry()


def exit_now(code: int) -> None:
    """Say so (one line on stderr) and exit with ``code`` (an interrupt's exit status: 32);
    a second signal meanwhile changes nothing."""
    import os
    import sys

    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    _cancel_retry()
    try:
        sys.stderr.write("kseg: interrupted\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(int(code))
