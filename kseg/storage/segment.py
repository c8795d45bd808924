"""Reading segment files: entries of a `.log`, index views, with the file named in every error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..format.errors import CorruptionError
from ..format.log import Entry, iter_entries
from .mapped import open_mapped


def read_batches(path: str | Path, *, validate: bool = True, start: int = 0) -> Iterator[Entry]:
    """Yield every top-level entry (v2 :class:`RecordBatch` or legacy :class:`LegacyEntry`).

    Each batch is a view into the reader of the file (storage.mapped.ShadowMap) and holds a
    reference to it: the file stays open while the generator or any batch it yielded is alive,
    and closes when the last of them goes. A batch kept after the walk has moved on (e.g.
    ``list(read_batches(p))[0].records()``) reads its own bytes again when asked; nothing is
    copied while walking. With ``validate`` (the default) CRCs are checked and the first bad
    entry raises :class:`CorruptionError` naming this file and the byte position.
    """
    buf = open_mapped(path)  # no explicit close: the views keep it alive (reference counting)
    try:
        yield from iter_entries(buf, start, validate=validate, source=str(path))
    except CorruptionError as exc:
        raise exc.in_file(path) from None
