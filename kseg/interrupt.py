"""``Interrupted``: SIGINT/SIGTERM as an exception that nothing but the entry point catches.

Python turns SIGINT into KeyboardInterrupt, which typer converts into a silent exit 130 and
which libraries (pyspark, click) catch and translate; SIGTERM kills the process outright. kseg
raises ``Interrupted`` instead (its signal handlers: kseg.cli.signals): a BaseException that no
``except Exception`` and no ``except KeyboardInterrupt`` swallows, so ``finally`` blocks run
(temp files are removed) and the entry point exits 32 with one line on stderr. The library
only needs to recognise it (verify keeps what it found before it), hence this low module.
"""

from __future__ import annotations

import signal

from kseg.exitcodes import Exit


class Interrupted(BaseException):
    """Raised by the signal handler. ``code`` is the exit code (32, OR-ed by verify with what it
    had already found)."""

    def __init__(self, signum: int = signal.SIGINT, code: int = Exit.INTERRUPTED) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.code = int(code) | Exit.INTERRUPTED
