"""stdout and stderr as kseg uses them: data through one large buffer, messages one line each."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import BinaryIO

_OUT: BinaryIO | None = None
_DIRECT = False  # _OUT writes to descriptor 1 itself: the kernel may write there too


def stdout() -> BinaryIO:
    """stdout as one 1 MiB buffer: small writes become memcpys, flushed in large chunks (a fresh
    buffer per flush, or a syscall per line, costs more than encoding the JSON)."""
    global _OUT, _DIRECT
    if _OUT is None:
        import io

        try:
            fd = sys.stdout.fileno()
            sys.stdout.flush()
            _OUT = io.BufferedWriter(io.FileIO(fd, "wb", closefd=False), buffer_size=1 << 20)
            _DIRECT = fd == 1
        except (AttributeError, OSError, ValueError):  # no real descriptor (embedded, captured)
            _OUT = sys.stdout.buffer
    return _OUT


def lines_writer(out: BinaryIO) -> Callable[[object], object]:
    """How lines the compiled kernel rendered (``kseg._kernel.Lines``) reach ``out``. When
    ``out`` is this process's stdout buffer on descriptor 1, the kernel writes them there from
    its own buffer, after ``out`` is flushed (the order of the output holds): no copy into a
    Python bytes, ~9% of a JSON dump. Anywhere else, as bytes."""
    if out is _OUT and _DIRECT:
        flush = out.flush

        def direct(lines) -> None:
            flush()
            lines.write_stdout()

        return direct
    write = out.write
    return lambda lines: write(bytes(lines))


def flush() -> None:
    if _OUT is not None:
        _OUT.flush()


def reset() -> None:
    """Forget the buffer (a new run in the same process: tests)."""
    global _OUT, _DIRECT
    _OUT = None
    _DIRECT = False


def one_line(text: str) -> str:
    """Control characters (a newline in a file name...) as escapes: a message stays one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def say(message: str) -> None:
    """One line on stderr, ``kseg: message``; the data written so far goes out first (the
    order on a terminal stays the order of events)."""
    try:
        stdout().flush()
    except (OSError, ValueError):
        pass  # stdout is gone, full or closed: the entry point reports that; the message goes out
    sys.stderr.write(f"kseg: {one_line(message)}\n")


def silence_stdout() -> None:
    """Point stdout at /dev/null so that buffered output can be dropped without more errors."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
