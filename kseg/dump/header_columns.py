"""A record event whose record has many headers (kseg.format.headers.Headers): its header
fields are produced while it is written, in chunks, never as one list or one string.

- ``HeaderColumn``: the value of ``header_keys``, ``headers`` or ``header_encodings`` in such an
  event: iterable (and in lists of at most HEADER_CHUNK items), with len and truth.
- ``StreamedEvent``: the event (a dict); the renderers write it piece by piece.
- ``StreamedLine``: a ready line (a JSON line, a --format-string record) as an iterable of
  bytes pieces, where other records are one bytes.

Each renders byte for byte what the plain list or bytes would have (tests hold them equal).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice

from kseg.format.headers import HEADER_CHUNK, Headers

KEYS, PAIRS, ENCODINGS = 0, 1, 2


class HeaderColumn:
    """``header_keys`` (names), ``headers`` ([name, shown value]) or ``header_encodings`` of a
    record event, from its Headers and the payload mode's encoder ``enc``."""

    __slots__ = ("headers", "enc", "what")

    def __init__(self, headers: Headers, enc, what: int) -> None:
        self.headers, self.enc, self.what = headers, enc, what

    def __len__(self) -> int:
        return len(self.headers)

    def __bool__(self) -> bool:
        return bool(self.headers)

    def __iter__(self) -> Iterator:
        what, enc = self.what, self.enc
        if what == KEYS:
            for k, _ in self.headers:
                yield k
        elif what == PAIRS:
            for k, v in self.headers:
                yield [k, enc(v)[0]]
        else:
            for _, v in self.headers:
                yield enc(v)[1]

    def chunks(self, size: int = HEADER_CHUNK) -> Iterator[list]:
        it = iter(self)
        while True:
            part = list(islice(it, size))
            if not part:
                return
            yield part

    def triples(self) -> Iterator[tuple]:
        """(name, shown value, encoding) of each header (text and table show them together)."""
        enc = self.enc
        for k, v in self.headers:
            shown, encoding = enc(v)
            yield k, shown, encoding

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HeaderColumn):
            other = list(other)
        if not isinstance(other, list):
            return NotImplemented
        return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        name = ("header_keys", "headers", "header_encodings")[self.what]
        return f"HeaderColumn({name}, {len(self)} headers)"


class StreamedEvent(dict):
    """A record event holding HeaderColumns (see the module)."""

    __slots__ = ()


class StreamedLine:
    """A ready line as bytes pieces (iterate it once)."""

    __slots__ = ("pieces",)

    def __init__(self, pieces: Iterable[bytes]) -> None:
        self.pieces = pieces

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.pieces)


def joined(pieces: Iterable, sep=b","):
    """Pieces of one ``sep``-separated run (each piece is itself already joined)."""
    first = True
    for piece in pieces:
        if first:
            first = False
            yield piece
        else:
            yield sep + piece
