"""`--format json`: JSON Lines, one object per event, for every command."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import BinaryIO

import orjson

from kseg.format.header_columns import HeaderColumn, StreamedEvent, StreamedLine, joined
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
            elif t is StreamedLine:  # a record of many headers, in pieces
                for piece in ev:
                    write(piece)
            elif t is StreamedEvent:
                write_streamed_event(ev, write)
            elif t is lines_type():  # (asked only here: the kernel loads while chunks are made)
                put_lines(ev)
            else:
                write(dumps(ev, option=_OPTS))
        yield chunk


def write_streamed_event(ev: dict, write) -> None:
    """The JSON line of an event holding HeaderColumns, written piece by piece: byte for byte
    orjson.dumps of the event with each column a list (compact JSON: ``{"k":v,...}``)."""
    dumps = orjson.dumps
    sep = b"{"
    for k, v in ev.items():
        write(sep + dumps(k) + b":")
        sep = b","
        if type(v) is HeaderColumn:
            write(b"[")
            for piece in joined(dumps(part)[1:-1] for part in v.chunks()):
                write(piece)
            write(b"]")
        else:
            write(dumps(v))
    write(b"}\n")
