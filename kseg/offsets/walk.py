"""Walking an internal topic's partition (`__consumer_offsets`, `__share_group_state`,
`__transaction_state`) as its coordinator loads it, one batch at a time: `kseg offsets` and `kseg
txn` (kseg.txn.coordinator) share it. Failures are events; what the walk found is OR-ed into the
walker's ``outcome``."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

from kseg.format.errors import CorruptionError
from kseg.outcome import Outcome
from kseg.storage.partition import Partition


class CoordinatorWalk:
    """A mixin: ``_walk`` and ``_decoded`` for a class with an ``outcome`` (kseg.outcome.Outcome)."""

    outcome: Outcome

    def _walk(self, pdir: Path, each: Callable[[Any, Path], Iterator[dict]]) -> Iterator[dict]:
        """``each(batch, log)`` over every batch of ``pdir``'s segments, in order. A partition or
        segment that cannot be read ends the walk with a failure (8); so does corruption (4):
        Kafka's recovery truncates there, so what follows is not loaded (the answer comes from the
        records before it, and says where)."""
        try:
            segments = Partition(pdir).segments
        except OSError as exc:
            self.outcome |= Outcome.UNREADABLE
            yield {"type": "failure", "message": f"{exc.filename or pdir}: {exc.strerror or exc}"}
            return
        for seg in segments:
            try:
                for batch in seg.batches(validate=True):
                    yield from each(batch, seg.log)
            except CorruptionError as exc:
                self.outcome |= Outcome.INVALID_DATA
                yield {"type": "failure", "message": f"{exc.in_file(seg.log)}; records after it "
                       "are not replayed (Kafka's recovery would truncate there)"}  # fmt: skip
                return
            except OSError as exc:
                self.outcome |= Outcome.UNREADABLE
                yield {"type": "failure", "message": f"{exc.filename or seg.log}: {exc.strerror}"}
                return

    def _decoded(self, decode, rec, batch, log: Path) -> Generator[dict, None, dict | None]:
        """``decode(key, value)`` of one record; a record that does not decode is a failure (4)
        and None: it is skipped, the replay goes on."""
        try:
            return decode(rec.key, rec.value)
        except CorruptionError as exc:
            self.outcome |= Outcome.INVALID_DATA
            exc.position, exc.offset = batch.position, rec.offset
            yield {"type": "failure", "message": f"{exc.in_file(log)} (record at offset "
                   f"{rec.offset} skipped)"}  # fmt: skip
            return None
