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
        if self.opts.payload != "schema" or self.opts.batches_only:
            for chunk in dump_chunks(self.paths, self.opts):
                yield chunk
                self.outcome |= _found(chunk)  # once the chunk is consumed (written)
            return
        # --payload schema: findings counted (invalid data with --strict), and a summary
        from kseg.dump.schema_events import FINDING, summary_event

        findings = 0
        for chunk in dump_chunks(self.paths, self.opts, planned=self._planned):
            yield chunk
            self.outcome |= _found(chunk)
            n = sum(1 for ev in chunk if type(ev) is dict and ev["type"] == FINDING)
            if n:
                findings += n
                if self.opts.strict:
                    self.outcome |= Outcome.INVALID_DATA
        opts = self._plan
        if opts is not None and opts.schemas is not None and not opts.count:
            yield [summary_event(opts, findings)]

    _plan = None

    def _planned(self, opts: DumpOptions) -> None:
        """The options as the plan made them (with the schemas' decoder)."""
        self._plan = opts


_FOUND = ("error", "skipped")  # a skipped range (--resync) is invalid data as its error was


def _found(chunk: list) -> Outcome:
    """The chunk's error and skipped events' kinds (dump's: unreadable, usage, or a
    corruption's)."""
    return combined(
        outcome_of_kind(ev["kind"])
        for ev in chunk
        if type(ev) is dict and ev["type"] in _FOUND  # not bytes, nor the kernel's Lines
    )
