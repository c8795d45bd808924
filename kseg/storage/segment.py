"""Reading segment files: entries of a `.log`, index views, with the file named in every error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..format.errors import CorruptionError
from ..format.log import Entry, iter_entries
from .mapped import map_file


def read_batches(path: str | Path, *, validate: bool = True, start: int = 0) -> Iterator[Entry]:
    """Yield every top-level entry (v2 :class:`RecordBatch` or legacy :class:`LegacyEntry`).

    Each batch is a view into a read-only memory map of the file, and holds a reference to it:
    the map stays open while the generator or any batch it yielded is alive (``records()`` works
    on a batch kept after the loop, e.g. ``list(read_batches(p))[0].records()``) and is unmapped
    when the last of them goes. Nothing is copied. With ``validate`` (the default) CRCs are checked
    and the first bad entry raises :class:`CorruptionError` naming this file and the byte position.
    """
    buf = map_file(path)  # no explicit close: the views keep it alive (reference counting)
    try:
        yield from iter_entries(buf, start, validate=validate, source=str(path))
    except CorruptionError as exc:
        raise exc.in_file(path) from None
