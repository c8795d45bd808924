"""`--format json`: JSON Lines, one object per event, for every command."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import BinaryIO

import orjson

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
    """Chunks of events; an event that is already a JSON line (bytes) is written as it is."""
    dumps = orjson.dumps
    write = out.write
    for chunk in chunks:
        for ev in chunk:
            write(ev if type(ev) is bytes else dumps(ev, option=_OPTS))
        yield chunk
