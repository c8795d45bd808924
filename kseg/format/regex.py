"""A user's regular expression, matched in linear time: ``--key``/``--value``/``--header``
(record search; the Spark source's key/value/header) and ``--topic`` (every command, the Spark
jobs). Pure: bytes in, a match or not out; the callers name the option a RegexError is about.

Python's ``re`` backtracks: ``(a+)+b`` on 40 bytes of ``a`` runs for hours. So a user's pattern
is compiled by RE2 (the ``google-re2`` binding), never by ``re``:

- the syntax is RE2's (https://github.com/google/re2/wiki/Syntax), plus ``\\Z`` read as RE2's
  ``\\z`` (the end of the text: Python's ``\\Z``), so that ``\\A...\\Z`` keeps working (not inside
  a class, nor in a pattern that uses ``\\Q...\\E``);
- a record pattern (``compile_bytes``) reads one character per byte (RE2's Latin-1 mode: what a
  Python bytes pattern means): ``\\xff`` is the byte 0xff, ``.`` any byte but ``\\n``, a UTF-8
  argument its bytes; a topic pattern (``compile_text``) is UTF-8 text, matched against the topic
  name's UTF-8;
- matching is RE2's: leftmost-first, unanchored for ``search`` (anchor with ``^``/``$``,
  ``\\A``/``\\z``), ``$`` only at the very end without ``(?m)``;
- what RE2 cannot do in linear time (backreferences, lookarounds, atomic groups, possessive
  quantifiers, conditionals, recursion) raises RegexError naming the construct; so does any other
  syntax RE2 refuses, and a pattern whose compiled program would exceed MAX_MEM. Nothing falls
  back to ``re``.
"""

from __future__ import annotations

import functools
import warnings
from re import IGNORECASE as _IGNORECASE  # a flag of the parsed view; nothing matches with re

# RE2's memory budget for one pattern (its programs and the DFA's cache; the DFA falls back to
# the NFA, still linear, when its cache fills up); a pattern whose program does not fit is refused
MAX_MEM = 8 << 20
LINEAR = "kseg matches in linear time; RE2 syntax"
_SHOWN_MAX = 80  # characters of a pattern quoted in a message
# RE2 expands counted repetitions (``x{1000}``) before its compiler meets MAX_MEM: a pattern whose
# counts add up to more than this (at least one instruction each, past what MAX_MEM holds) is
# refused before RE2 parses it, so that a long pattern cannot cost hundreds of MiB first
MAX_REPEATS = 1_000_000

# RE2's "invalid perl operator: X" -> the construct (longest X first)
_OPERATORS = (
    ("(?<=", "lookbehind (?<=...)"),
    ("(?<!", "negative lookbehind (?<!...)"),
    ("(?P=", "backreference (?P=name)"),
    ("(?P>", "recursion (?P>name)"),
    ("(?=", "lookahead (?=...)"),
    ("(?!", "negative lookahead (?!...)"),
    ("(?>", "atomic group (?>...)"),
    ("(?(", "conditional (?(...)...)"),
    ("(?R", "recursion (?R)"),
    ("(?&", "recursion (?&name)"),
    ("(?|", "branch reset (?|...)"),
)


class RegexError(ValueError):
    """A pattern kseg does not match: one line naming the pattern and why (the caller adds the
    option: a usage error)."""


class Pattern:
    """A compiled user pattern. ``search(data, pos=0, endpos=None)``: a match (truthy) or None,
    anywhere in ``data[pos:endpos]`` (bytes or any buffer; ``0 <= pos <= endpos <= len(data)``);
    ``match(data)``: RE2's match from the start, or None. ``text`` is the pattern's bytes as the
    user gave them; ``utf8``: a topic pattern (else one character per byte)."""

    __slots__ = ("text", "utf8", "search", "match")

    def __init__(self, text: bytes, utf8: bool, compiled) -> None:
        self.text = text
        self.utf8 = utf8
        self.search = _direct_search(compiled) or compiled.search
        literal = None if utf8 else _literal(self)
        if literal is not None:
            self.search = _literal_search(literal, self.search)
        self.match = compiled.match

    def search_str(self, s: str) -> bool:
        """Does the pattern occur in this name (its UTF-8; undecodable bytes kept)?"""
        return self.search(s.encode("utf-8", "surrogateescape")) is not None

    def match_str(self, s: str) -> bool:
        """Does the pattern match this name from its first character?"""
        return self.match(s.encode("utf-8", "surrogateescape")) is not None

    def __reduce__(self):
        return _compiled, (self.text, self.utf8)

    def __repr__(self) -> str:
        return f"Pattern({self.text!r})"


def _direct_search(compiled):
    """The binding's RE2::Match called directly: ``compiled.search`` builds a generator and a
    match object per call, which was a quarter of a search's time when every record matches
    (measured). Only where the binding has it (google-re2 1.x: ``_regexp.Match(anchor, text,
    pos, endpos)`` -> spans); else None (its public ``search``, the same matcher)."""
    raw = getattr(getattr(compiled, "_regexp", None), "Match", None)
    anchor = getattr(
        getattr(getattr(compiled, "_regexp", None), "Anchor", None), "UNANCHORED", None
    )
    if raw is None or anchor is None:
        return None
    none = (-1, -1)

    def search(data, pos=0, endpos=None):
        span = raw(anchor, data, pos, len(data) if endpos is None else endpos)[0]
        return None if span == none else span

    return search


def _literal(p: Pattern) -> bytes | None:
    """The bytes a pattern made only of literal characters matches (``"sig"``, ``order\\.42``),
    where Python's parser reads it as RE2 does (``parsed``) and no flag applies; else None."""
    tree = parsed(p)
    if tree is None or tree.state.flags & _IGNORECASE:
        return None
    if any(str(op) != "LITERAL" for op, _ in tree.data):
        return None
    return bytes(av for _, av in tree.data)


def _literal_search(literal: bytes, search):
    """``search`` for a literal: the buffer's own ``find`` (a bytes search is several times
    faster than a call into RE2 per record); ``search`` for a buffer without one."""
    n = len(literal)

    def literal_search(data, pos=0, endpos=None):
        find = getattr(data, "find", None)
        if find is None:
            return search(data, pos, endpos)
        at = find(literal, pos, len(data) if endpos is None else endpos)
        return None if at < 0 else (at, at + n)

    return literal_search


def compile_bytes(text: str | bytes) -> Pattern:
    """A record pattern (one character per byte); ``text`` a command-line argument (its bytes as
    typed, undecodable ones kept) or bytes. Raises RegexError."""
    return _compiled(_arg_bytes(text), False)


def compile_text(text: str | bytes) -> Pattern:
    """A topic pattern (UTF-8 text). Raises RegexError."""
    return _compiled(_arg_bytes(text), True)


def escape(name: str) -> str:
    """A pattern matching exactly ``name`` where it stands (RE2 syntax: every character but
    ``[A-Za-z0-9_]`` as ``\\x{...}``)."""
    return "".join(
        c if c.isascii() and (c.isalnum() or c == "_") else f"\\x{{{ord(c):x}}}" for c in name
    )


def _arg_bytes(text: str | bytes) -> bytes:
    return text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape")


@functools.lru_cache(maxsize=64)
def _compiled(text: bytes, utf8: bool) -> Pattern:
    import re2  # google-re2; imported here: most commands compile no pattern

    if _repeats(text) > MAX_REPEATS:
        raise RegexError(_message(text, "pattern too large"))
    try:
        compiled = re2.compile(_re2_syntax(text), _options(utf8))
    except re2.error as exc:
        detail = exc.args[0] if exc.args else b""
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "backslashreplace")
        raise RegexError(_message(text, str(detail))) from None
    return Pattern(text, utf8, compiled)


def _options(utf8: bool):
    import re2

    if not hasattr(re2, "Options"):  # another package's re2 module (some fall back to re)
        raise ImportError(f"kseg needs google-re2's re2 module, not {re2.__file__}")
    opts = re2.Options()
    opts.encoding = re2.Options.Encoding.UTF8 if utf8 else re2.Options.Encoding.LATIN1
    opts.max_mem = MAX_MEM
    opts.log_errors = False  # RE2 would log to stderr; the error is ours to say
    opts.never_capture = True  # only whether it matches counts
    return opts


def _repeats(text: bytes) -> int:
    """The sum of the counts of every ``{n}``, ``{n,}`` and ``{n,m}`` in ``text`` (the larger
    bound of each): what RE2 expands them to, counted cheaply and generously."""
    total, at = 0, text.find(b"{")
    while at >= 0:
        end = text.find(b"}", at + 1, at + 24)
        if end > at:
            low, _, high = text[at + 1 : end].partition(b",")
            if low.isdigit() and (not high or high.isdigit()):
                total += max(int(low), int(high or 0))
        at = text.find(b"{", at + 1)
    return total


def _re2_syntax(text: bytes) -> bytes:
    """``text`` with each ``\\Z`` outside a class as ``\\z`` (unchanged when it uses ``\\Q``:
    there a backslash may be a literal)."""
    if b"\\Z" not in text or b"\\Q" in text:
        return text
    out = bytearray()
    i, n, in_class = 0, len(text), False
    while i < n:
        c = text[i : i + 1]
        if c == b"\\":
            pair = text[i : i + 2]
            out += b"\\z" if pair == b"\\Z" and not in_class else pair
            i += 2
            continue
        if in_class:
            if c == b"[" and text[i + 1 : i + 2] == b":":  # [:alpha:] inside a class
                end = text.find(b":]", i + 2)
                if end >= 0:
                    out += text[i : end + 2]
                    i = end + 2
                    continue
            elif c == b"]":
                in_class = False
        elif c == b"[":
            in_class = True
            out += c
            i += 1
            if text[i : i + 1] == b"^":
                out += b"^"
                i += 1
            if text[i : i + 1] == b"]":  # a ']' first in a class is itself
                out += b"]"
                i += 1
            continue
        out += c
        i += 1
    return bytes(out)


def _message(text: bytes, detail: str) -> str:
    """The one line for a pattern RE2 refused with ``detail``."""
    shown = _shown(text)
    detail = "".join(c if c.isprintable() else repr(c)[1:-1] for c in detail)  # one line
    if len(detail) > 2 * _SHOWN_MAX:  # RE2 quotes the rest of the pattern from the error on
        detail = detail[: 2 * _SHOWN_MAX - 3] + "..."
    construct = _construct(text, detail)
    if construct is not None:
        return f"{shown}: {construct} is not supported ({LINEAR})"
    if detail.startswith("pattern too large"):
        return f"{shown}: too large (its RE2 program would exceed {MAX_MEM >> 20} MiB)"
    return f"not a valid regular expression: {shown} (RE2 syntax: {detail})"


def _construct(text: bytes, detail: str) -> str | None:
    """The construct RE2 cannot match in linear time that ``detail`` names, or None."""
    what, _, frag = detail.partition(": ")
    if what == "invalid escape sequence":
        if frag[1:2].isdigit():
            return f"backreference {frag}"
        if frag in ("\\k", "\\g"):
            return f"backreference {frag}"
    elif what == "invalid perl operator":
        if frag == "(?P":  # RE2 names only the prefix: the first one not a named group
            at = text.find(b"(?P")
            while at >= 0 and text[at + 3 : at + 4] == b"<":
                at = text.find(b"(?P", at + 3)
            if at >= 0:
                frag = text[at : at + 4].decode("ascii", "replace")
        for op, name in _OPERATORS:
            if frag.startswith(op):
                return name
        if frag[2:].lstrip("+-")[:1].isdigit():
            return f"recursion {frag})"
    elif what == "bad repetition operator" and len(frag) > 1 and frag.endswith("+"):
        return f"possessive quantifier {frag}"
    return None


def _shown(text: bytes) -> str:
    s = text.decode("utf-8", "backslashreplace")
    if len(s) > _SHOWN_MAX:
        s = s[: _SHOWN_MAX - 3] + "..."
    return f"'{s}'" if s.isprintable() and "'" not in s else repr(s)


def parsed(p: Pattern):
    """The pattern as Python's parser reads it (``re._parser.parse``'s tree), only where Python
    reads it as RE2 does (else None): for reasoning about a pattern (e.g. a literal every match
    holds), never for matching. Python refuses most RE2-only syntax (``\\Q``, ``\\z``, ``\\pL``,
    ``\\x{41}``, ``(?U)``, flags not at the start); where it accepts RE2 syntax with another
    meaning it is stricter (``a{,3}``: RE2's literal, Python's repetition), except POSIX classes
    (``[[:alpha:]]``: Python's class ``[[:alpha:]`` then a literal ``]``): those get None."""
    if p.utf8 or b"[:" in p.text:
        return None
    try:
        from re import _parser as sre_parse  # CPython 3.11+
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_parse  # type: ignore[no-redef]
    try:
        with warnings.catch_warnings():  # "possible nested set" and the like: not ours to show
            warnings.simplefilter("ignore")
            return sre_parse.parse(p.text, 0)
    except Exception:  # noqa: BLE001 - None (no reasoning) is always correct
        return None
