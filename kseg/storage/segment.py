"""Reading segment files: entries of a `.log`, index views, with the file named in every error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..format.errors import CorruptionError
from ..format.log import Entry, iter_entries
from .mapped import mapped


def read_batches(path: str | Path, *, validate: bool = True, start: int = 0) -> Iterator[Entry]:
    """Yield every top-level entry (v2 :class:`RecordBatch` or legacy :class:`LegacyEntry`).

    The file is memory-mapped for as long as the iteration runs: use each batch (and its
    ``records()``) before advancing past it. With ``validate`` (the default) CRCs are checked and
    the first bad entry raises :class:`CorruptionError` naming this file and the byte position.
    """
    with mapped(path) as buf:
        try:
            yield from iter_entries(buf, start, validate=validate, source=str(path))
        except CorruptionError as exc:
            raise exc.in_file(path) from None
