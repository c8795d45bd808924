"""`--format json`: JSON Lines, one object per event, for every command."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import BinaryIO

import orjson

from kseg.kernel import lines_type
from kseg.render.streams import lines_writer

_OPTS = orjson.OPT_APPEND_NEWLINE


def write_json(events: Iterable[dict], out: BinaryIO) -> Iterator[dict]:
    """JSON Lines. ``out`` should be a large fixed buffer (see render.streams): one small write
    per event then costs a memcpy, not a syscall or an allocation."""
    dumps = orjson.dumps
    write = out.write
    for ev in events:
        write(dumps(ev, option=_OPTS))
        yield ev


def write_json_chunks(chunks: Iterable[list], out: BinaryIO) -> Iterator[list]:
    """Chunks of events; an event that is already a JSON line (bytes) is written as it is, and
    so are lines the compiled kernel rendered (kseg.kernel.lines_type: see
    streams.lines_writer)."""
    dumps = orjson.dumps
    write = out.write
    put_lines = lines_writer(out)
    for chunk in chunks:
        for ev in chunk:
            t = type(ev)
            if t is bytes:
                write(ev)
            elif t is dict:
                write(dumps(ev, option=_OPTS))
            elif t is lines_type():  # (asked only here: the kernel loads while chunks are made)
                put_lines(ev)
            else:
                write(dumps(ev, option=_OPTS))
        yield chunk
