"""The dump command as a library call: chunks of events out, what they showed accumulated."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kseg.dump.options import DumpOptions
from kseg.dump.plan import dump_chunks
from kseg.outcome import Outcome, combined, outcome_of_kind


class DumpRun:
    """``outcome``: what the chunks consumed so far have shown (an unreadable file, a usage
    mistake, anything invalid), so that output stopped early (a closed pipe) still exits with
    what was seen."""

    def __init__(self, paths: list[Path], opts: DumpOptions) -> None:
        self.paths = paths
        self.opts = opts
        self.outcome = Outcome.OK

    def chunks(self) -> Iterator[list]:
        finding = None  # --payload schema --strict: a schema_finding is invalid data
        if self.opts.strict:
            from kseg.dump.schema_events import FINDING as finding
        for chunk in dump_chunks(self.paths, self.opts):
            yield chunk
            self.outcome |= _found(chunk, finding)  # once the chunk is consumed (written)


_FOUND = ("error", "skipped")  # a skipped range (--resync) is invalid data as its error was


def _found(chunk: list, finding: str | None = None) -> Outcome:
    """The chunk's error and skipped events' kinds (dump's: unreadable, usage, or a
    corruption's); an event of type ``finding`` is invalid data."""
    found = combined(
        outcome_of_kind(ev["kind"])
        for ev in chunk
        if type(ev) is dict and ev["type"] in _FOUND  # not bytes, nor the kernel's Lines
    )
    if finding is not None and any(type(ev) is dict and ev["type"] == finding for ev in chunk):
        found |= Outcome.INVALID_DATA
    return found
