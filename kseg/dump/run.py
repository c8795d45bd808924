"""The dump command as a library call: chunks of events out, the exit status accumulated."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kseg.dump.error_events import UNREADABLE, USAGE
from kseg.dump.options import DumpOptions
from kseg.dump.plan import dump_chunks
from kseg.exitcodes import Exit


class DumpRun:
    """``code``: what the chunks consumed so far have shown (an unreadable file 8, a usage
    mistake 16, anything invalid 4), so that output stopped early (a closed pipe) still exits
    with what was seen."""

    def __init__(self, paths: list[Path], opts: DumpOptions) -> None:
        self.paths = paths
        self.opts = opts
        self.code = Exit.OK

    def chunks(self) -> Iterator[list]:
        for chunk in dump_chunks(self.paths, self.opts):
            yield chunk
            self.code |= _code(chunk)  # once the chunk is consumed (written)


def _code(chunk: list) -> Exit:
    code = Exit.OK
    for ev in chunk:
        if type(ev) is not dict or ev["type"] != "error":  # bytes, or the kernel's Lines
            continue
        kind = ev["kind"]
        code |= (
            Exit.OPERATIONAL
            if kind == UNREADABLE
            else Exit.USAGE
            if kind == USAGE
            else Exit.PROBLEMS
        )
    return code
