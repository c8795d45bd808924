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

    def runs(self) -> Iterator[tuple]:
        """(item, n): the items in order, n equal ones in a row given once."""
        what, enc = self.what, self.enc
        for k, v, n in self.headers.runs():
            if what == KEYS:
                yield k, n
            elif what == PAIRS:
                yield [k, enc(v)[0]], n
            else:
                yield enc(v)[1], n

    def chunks(self, size: int = HEADER_CHUNK) -> Iterator[list]:
        """The items in lists of about ``size`` (a run of equal items: one object repeated)."""
        part: list = []
        for item, n in self.runs():
            part += [item] * n
            if len(part) >= size:
                yield part
                part = []
        if part:
            yield part

    def triples(self) -> Iterator[tuple]:
        """(name, shown value, encoding, n) of each run of n equal headers (text and table show
        them together)."""
        enc = self.enc
        for k, v, n in self.headers.runs():
            shown, encoding = enc(v)
            yield k, shown, encoding, n

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


def repeated(pieces: Iterable[tuple], sep, size: int = HEADER_CHUNK) -> Iterator:
    """(piece, n) pairs as one ``sep``-separated run, in pieces of about ``size`` items."""
    part: list = []
    for piece, n in pieces:
        part += [piece] * n
        if len(part) >= size:
            yield sep.join(part)
            part = []
    if part:
        yield sep.join(part)


def joined(pieces: Iterable, sep=b","):
    """Pieces of one ``sep``-separated run (each piece is itself already joined)."""
    first = True
    for piece in pieces:
        if first:
            first = False
            yield piece
        else:
            yield sep + piece
