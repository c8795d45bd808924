"""`kseg seek -f reset-csv`: ``topic,partition,offset`` rows, the input of
``kafka-consumer-groups.sh --reset-offsets --from-file`` (exactly three columns, no header)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import BinaryIO


def write_reset_csv(events: Iterable[dict], out: BinaryIO) -> Iterator[dict]:
    """One row per ``reset`` event (kseg.lookup.seek_run.SeekRun.reset_events)."""
    for ev in events:
        if ev["type"] == "reset":
            out.write(f"{ev['topic']},{ev['partition']},{ev['offset']}\n".encode())
        yield ev
