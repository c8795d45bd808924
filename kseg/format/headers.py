"""A record's headers read in place: checked once without an object per header, decoded only
when iterated (a record may hold millions of them in a few KB of compressed input).

A v2 record's headers are ``count`` pairs of (key length varint, key bytes, value length
varint, value bytes or -1 for null). ``scan_headers`` walks them with the same checks, in the
same order and with the same messages as the record decoder always made; ``Headers`` is the
read-only sequence of ``(name, value)`` pairs the decoder hands out for a record of more than
``LAZY_HEADERS`` headers (fewer: a plain list, as before).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice

from kseg.format.errors import INVALID_RECORD, CorruptionError
from kseg.format.varint import read_varint

# records with at most this many headers get a list of (name, value) tuples; more: a Headers view
LAZY_HEADERS = 64
# pairs decoded together by Headers.chunks (what a renderer holds at once)
HEADER_CHUNK = 4096


def _invalid(message: str) -> CorruptionError:
    # no field: the record decoder names the record and the byte (kseg.format.batch)
    return CorruptionError(message, kind=INVALID_RECORD)


def scan_headers(data, pos: int, rec_end: int, count: int) -> int:
    """Check ``count`` headers starting at ``data[pos]`` that must end by ``rec_end``; return
    where they end. Raises CorruptionError (no field set) or IndexError, exactly where and how
    the record decoder's own header loop does; makes no object per header."""
    left = count
    while left:
        start = pos
        b = data[pos]
        if b < 0x80:
            hklen = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            hklen, pos = read_varint(data, pos)
        if hklen < 0 or pos + hklen > rec_end:
            raise _invalid(f"invalid header key length {hklen}")
        pos += hklen
        b = data[pos]
        if b < 0x80:
            hvlen = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            hvlen, pos = read_varint(data, pos)
        if hvlen < 0:
            if hvlen != -1:
                raise _invalid(f"invalid header value length {hvlen}")
        else:
            if pos + hvlen > rec_end:
                raise _invalid(f"header value length {hvlen} exceeds the record")
            pos += hvlen
        left -= 1
        # the same bytes again pass the same checks: a run of them is skipped at memcmp speed
        if left and pos < rec_end and data[pos] == data[start]:
            size = pos - start
            n = _repeats(data, pos, data[start:pos], left, rec_end)
            pos += n * size
            left -= n
    return pos


_RUN_BYTES = 1 << 16  # the most compared at once when a header repeats


def _repeats(data, pos: int, h: bytes, most: int, end: int) -> int:
    """How many copies of ``h`` (at most ``most``) follow at ``data[pos]`` before ``end``:
    compared in doubling steps, so a long run costs a few memcmps and a header that does not
    repeat costs one short comparison."""
    size = len(h)
    cap = max(1, _RUN_BYTES // size)
    n, step = 0, 1
    while n < most:
        k = min(step, most - n)
        span = k * size
        if pos + span <= end and data[pos : pos + span] == (h if k == 1 else h * k):
            pos += span
            n += k
            step = min(step * 2, cap)
        elif k == 1:
            break
        else:
            step = 1
    return n


def _runs(
    data, pos: int, end: int, count: int, most: int
) -> Iterator[tuple[str, bytes | None, int]]:
    # the bytes were checked by scan_headers: no bound checks here
    left = count
    while left:
        start = pos
        b = data[pos]
        if b < 0x80:
            hklen = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            hklen, pos = read_varint(data, pos)
        hkey = data[pos : pos + hklen].decode("utf-8", "replace")
        pos += hklen
        b = data[pos]
        if b < 0x80:
            hvlen = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            hvlen, pos = read_varint(data, pos)
        if hvlen < 0:
            hval = None
        else:
            hval = data[pos : pos + hvlen]
            pos += hvlen
        left -= 1
        n = 1
        if left and most > 1 and pos < end and data[pos] == data[start]:
            size = pos - start
            k = _repeats(data, pos, data[start:pos], min(left, most - 1), end)
            pos += k * size
            left -= k
            n += k
        yield hkey, hval, n


def _pairs(data, pos: int, count: int) -> Iterator[tuple[str, bytes | None]]:
    # the bytes were checked by scan_headers: no bound checks here
    for _ in range(count):
        b = data[pos]
        if b < 0x80:
            hklen = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            hklen, pos = read_varint(data, pos)
        hkey = data[pos : pos + hklen].decode("utf-8", "replace")
        pos += hklen
        b = data[pos]
        if b < 0x80:
            hvlen = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            hvlen, pos = read_varint(data, pos)
        if hvlen < 0:
            yield hkey, None
        else:
            yield hkey, data[pos : pos + hvlen]
            pos += hvlen


class Headers(Sequence):
    """A record's headers as a read-only sequence of ``(name, value)`` pairs (name: str decoded
    with replacement, value: bytes or None), decoded from the record's bytes each time it is
    iterated. ``len``, truth, iteration, indexing (by walking) and ``==`` with a list or tuple
    of pairs behave as the list the decoder gives smaller records. It holds the header bytes
    (a copy of them, or the decompressed batch they lie in), never an object per header."""

    __slots__ = ("_data", "_start", "_end", "_count")

    def __init__(self, data: bytes, start: int, end: int, count: int) -> None:
        self._data, self._start, self._end, self._count = data, start, end, count

    @classmethod
    def of_record(cls, data, start: int, end: int, count: int) -> Headers:
        """Headers ``data[start:end]`` (checked by scan_headers) held without an object per
        header: the decompressed batch itself when they are most of it, else a copy of them."""
        if type(data) is bytes and 2 * (end - start) >= len(data):
            return cls(data, start, end, count)
        return cls(bytes(data[start:end]), 0, end - start, count)

    @property
    def nbytes(self) -> int:
        """The encoded size of the headers."""
        return self._end - self._start

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def __iter__(self) -> Iterator[tuple[str, bytes | None]]:
        return _pairs(self._data, self._start, self._count)

    def runs(self, most: int = HEADER_CHUNK) -> Iterator[tuple[str, bytes | None, int]]:
        """``(name, value, n)``: the pairs in order, ``n`` (at most ``most``) equal ones in a
        row given once (a renderer renders one and repeats it)."""
        return _runs(self._data, self._start, self._end, self._count, most)

    def distinct(self) -> Iterator[tuple[str, bytes | None]]:
        """The pairs, each run of equal ones given once (for a search)."""
        for k, v, _n in _runs(self._data, self._start, self._end, self._count, self._count):
            yield k, v

    def chunks(self, size: int = HEADER_CHUNK) -> Iterator[list[tuple[str, bytes | None]]]:
        """The pairs in lists of about ``size`` (a run of equal pairs is one object repeated)."""
        part: list = []
        for k, v, n in self.runs(size):
            part += [(k, v)] * n
            if len(part) >= size:
                yield part
                part = []
        if part:
            yield part

    def __getitem__(self, index):
        if isinstance(index, slice):
            return _slice(self, index)
        n = self._count
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("header index out of range")
        return next(islice(iter(self), index, None))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (Headers, list, tuple)):
            return NotImplemented
        if len(other) != self._count:
            return False
        return all(tuple(a) == tuple(b) for a, b in zip(self, other, strict=True))

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Headers({self._count} headers, {self.nbytes} bytes)"


def _slice(headers: Headers, index: slice) -> list:
    start, stop, step = index.indices(len(headers))
    if step < 0:  # rare: materialise what was asked for
        return list(headers)[index]
    return list(islice(iter(headers), start, stop, step))
