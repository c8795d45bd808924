"""Record search for `kseg dump`: which records a ``--key``/``--value``/``--header``/``--key-eq``/
``--value-contains`` filter keeps, and a sound pre-check on a batch's record bytes that lets
dump skip batches no record of which can match without decoding them.

Semantics (the single definition; the CLI and the Spark source use these objects):

- a regex is an RE2 pattern on bytes (kseg.format.regex: one character per byte, linear time;
  what RE2 cannot do in linear time is a usage error naming the construct), matched with
  ``search`` (anywhere in the bytes; anchor with ``^...$`` or ``\\A...\\z`` for a whole-value
  match), on the raw key, value or header value bytes (before any --payload encoding);
- ``--key-eq B``: the key is exactly the bytes B; ``--value-contains B``: B occurs in the value;
  ``--header NAME``: a header named NAME exists; ``--header NAME=REGEX``: a header named NAME
  whose value matches REGEX (the first ``=`` splits);
- every option given, and each repetition, must hold (AND);
- a null key or value (or null header value) never matches a regex or a literal;
- control records (transaction markers, KRaft control) never match: they carry no user data.
"""

from __future__ import annotations

from re import IGNORECASE  # a flag of the parsed view (regex.parsed); nothing matches with re
from typing import NamedTuple

from kseg.format import compression as codecs
from kseg.format import regex
from kseg.format.batch import HEADER_SIZE, RecordBatch
from kseg.format.errors import CorruptionError
from kseg.format.headers import Headers
from kseg.format.regex import Pattern, RegexError
from kseg.outcome import BadOption


class RecordFilter(NamedTuple):
    keys: tuple[Pattern, ...] = ()
    values: tuple[Pattern, ...] = ()
    headers: tuple[tuple[str, Pattern | None], ...] = ()
    key_eq: tuple[bytes, ...] = ()
    value_contains: tuple[bytes, ...] = ()
    # what must occur in a batch's record bytes if any record in it matches (see _needles)
    needles: tuple = ()

    def matches(self, key, value, headers) -> bool:
        """Does a record with these raw ``key``/``value`` (bytes or None) and ``headers``
        ([(name, value bytes or None)]) pass every condition?"""
        if self.key_eq or self.keys:
            if key is None:
                return False
            for k in self.key_eq:
                if key != k:
                    return False
            for p in self.keys:
                if p.search(key) is None:
                    return False
        if self.value_contains or self.values:
            if value is None:
                return False
            for v in self.value_contains:
                if v not in value:
                    return False
            for p in self.values:
                if p.search(value) is None:
                    return False
        lazy = type(headers) is Headers  # many headers: walked, never made a list
        for name, p in self.headers:
            for hk, hv in headers.distinct() if lazy else headers:
                if hk == name and (p is None or (hv is not None and p.search(hv) is not None)):
                    break
            else:
                return False
        return True

    def may_match(self, data, start: int, end: int) -> bool:
        """False only if no record in ``data[start:end]`` (a batch's record bytes, decompressed)
        can match: a key, value or header value is a contiguous slice of those bytes, so each
        needle must be found there."""
        find = getattr(data, "find", None)
        for n in self.needles:
            if type(n) is bytes:
                if find is not None:
                    if find(n, start, end) < 0:
                        return False
                elif n not in memoryview(data)[start:end].tobytes():
                    return False
            elif n.search(data, start, end) is None:
                return False
        return True

    def batch_may_match(self, entry, max_decompressed: int) -> bool:
        """False only when no record of this v2 batch can match (``may_match`` on the batch's
        record bytes, decompressed within ``max_decompressed``); anything else (a legacy entry,
        bytes no longer mapped, a codec failure: the decode reports it) is to be decoded."""
        if not isinstance(entry, RecordBatch) or not self.needles:
            return True
        buf, base, size = entry.buf, entry.position, entry.size
        covers = getattr(buf, "covers", None)  # a buffer read on demand (storage.mapped)
        if covers is not None and not covers(base, base + size):
            return True
        cid = entry.compression_id
        if cid == codecs.NONE:
            return self.may_match(buf, base + HEADER_SIZE, base + size)
        try:
            with memoryview(buf) as mv:
                data = codecs.decompress(
                    cid, mv[base + HEADER_SIZE : base + size], max_decompressed
                )
        except CorruptionError:
            return True
        return self.may_match(data, 0, len(data))


def _needles(f: RecordFilter) -> tuple:
    """Literals (bytes) and patterns whose match does not depend on what surrounds it (see
    _context_free) that every record ``f`` keeps holds in its key, value or headers."""
    got: list = [*f.key_eq, *f.value_contains]
    for p in (*f.keys, *f.values, *(p for _name, p in f.headers if p is not None)):
        got.append(p if _context_free(p) else _required_literal(p))
    for name, _p in f.headers:
        if "\ufffd" not in name:  # a name read from invalid UTF-8 has other bytes
            got.append(name.encode("utf-8"))
    return tuple(n for n in got if n)  # an empty needle is found everywhere


def _context_free(p: Pattern) -> bool:
    """A pattern without anchors or word boundaries (RE2 has no lookarounds): if it matches a
    slice of a buffer it matches the buffer (searched over the slice's range) too. Anything else
    (or a pattern kseg.format.regex.parsed cannot show us) gets no pre-check."""
    tree = regex.parsed(p)
    if tree is None:
        return False
    try:
        from re import _parser as sre_parse  # CPython 3.11+
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_parse  # type: ignore[no-redef]
    banned = {"AT", "ASSERT", "ASSERT_NOT", "GROUPREF_EXISTS"}
    stack: list = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, sre_parse.SubPattern):
            stack.extend(node.data)
        elif isinstance(node, (list, tuple)):
            if node and str(node[0]) in banned:
                return False
            stack.extend(node)
    return True


def _required_literal(p: Pattern) -> bytes | None:
    """The longest run of literal bytes in the pattern's top-level sequence (e.g. ``key-42``
    in ``^key-42$``): every match contains it, anchors or not. None when there is none, the
    pattern ignores case, or kseg.format.regex.parsed cannot show it."""
    tree = regex.parsed(p)
    if tree is None or tree.state.flags & IGNORECASE:
        return None
    best = run = b""
    for op, av in tree.data:
        if str(op) == "LITERAL":
            run += bytes((av,))
            continue
        if len(run) > len(best):
            best = run
        run = b""  # anything else (an anchor, a class, a group) ends the run
    if len(run) > len(best):
        best = run
    return best or None


def _compile(text: str, option: str) -> Pattern:
    try:
        return regex.compile_bytes(text)
    except RegexError as exc:
        raise BadOption(str(exc), option) from None


def _arg_bytes(text: str) -> bytes:
    """A command-line argument as the bytes the user typed (undecodable bytes kept)."""
    return text.encode("utf-8", "surrogateescape")


def record_filter(
    key: list[str] | None = None,
    value: list[str] | None = None,
    header: list[str] | None = None,
    key_eq: list[str | bytes] | None = None,
    value_contains: list[str | bytes] | None = None,
) -> RecordFilter | None:
    """The filter for these options (None when none is given); a bad regex raises BadOption
    naming the option."""
    if not (key or value or header or key_eq or value_contains):
        return None
    headers = []
    for h in header or ():
        name, eq, rx = h.partition("=")
        if not name:
            raise BadOption(f"a header name is needed before '=': {h!r}", "--header")
        headers.append((name, _compile(rx, "--header") if eq else None))
    f = RecordFilter(
        keys=tuple(_compile(k, "--key") for k in key or ()),
        values=tuple(_compile(v, "--value") for v in value or ()),
        headers=tuple(headers),
        key_eq=tuple(b if isinstance(b, bytes) else _arg_bytes(b) for b in key_eq or ()),
        value_contains=tuple(
            b if isinstance(b, bytes) else _arg_bytes(b) for b in value_contains or ()
        ),
    )
    return f._replace(needles=_needles(f))
