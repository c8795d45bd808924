"""`kseg dump --format-string`: records printed with kcat's ``-f`` tokens, for people coming
from kcat (its format.c and usage text are the reference).

| token | what |
|---|---|
| ``%t`` | topic (empty outside a ``<topic>-<n>`` directory) |
| ``%p`` | partition (empty outside a ``<topic>-<n>`` directory) |
| ``%o`` | offset (a Kafka 0.7 message: the byte offset of its entry) |
| ``%k`` / ``%s`` | key / value, raw bytes as stored (nothing for null, as kcat without -Z) |
| ``%K`` / ``%S`` | key / value size in bytes, -1 for null |
| ``%R`` | value size (-1 for null) as a 4-byte big-endian signed integer |
| ``%T`` | timestamp, epoch milliseconds (-1: none, e.g. magic 0 and 0.7) |
| ``%h`` | headers as ``name=value`` joined by ``,`` (raw bytes; a null value prints nothing after ``=``) |
| ``%%`` | a ``%`` |
| ``\\n \\r \\t`` | newline, carriage return, tab |
| ``\\xHH``, ``\\NNN`` | a byte: hex, or a number (decimal; octal with a leading 0), as kcat |

Any other ``%`` token, or a ``%`` at the end, is a usage error (kcat: "Unsupported formatter").
Nothing is added after a record: end the format with ``\\n`` for one line per record.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Iterator

from kseg.format.header_columns import StreamedLine, joined, repeated
from kseg.format.headers import Headers
from kseg.outcome import BadOption

OPTION = "--format-string"
TOKENS = "tpokKsSRTh"
_BE32 = struct.Struct(">i")
_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*")


def _unescape(text: str) -> bytes:
    """kcat's backslash sequences; the rest as the bytes typed (undecodable bytes kept)."""
    raw = text.encode("utf-8", "surrogateescape")
    out = bytearray()
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c != 0x5C or i + 1 >= n:  # not a backslash, or one at the very end
            out.append(c)
            i += 1
            continue
        nxt = chr(raw[i + 1])
        i += 2
        if nxt in "tnr":
            out += {"t": b"\t", "n": b"\n", "r": b"\r"}[nxt]
        elif nxt == "x":
            m = re.match(rb"[0-9a-fA-F]+", raw[i:])
            if m:  # strtoul(s, 16): every hex digit, the low byte kept
                out.append(int(m.group(), 16) & 0xFF)
                i += m.end()
            else:
                out += b"x"
        elif nxt.isdigit():
            m = _NUMBER.match(raw[i - 1 :].decode("latin-1"))
            num = m.group()
            out.append(
                int(num, 0 if num.startswith(("0x", "0X")) else 8 if num[0] == "0" else 10) & 0xFF
            )
            i += m.end() - 1
        else:
            out.append(raw[i - 1])
    return bytes(out)


def compile_format(fmt: str) -> list:
    """The format as a list of literal bytes and token letters; BadOption for a token kcat
    does not have."""
    parts: list = []
    rest = fmt
    while rest:
        at = rest.find("%")
        if at < 0:
            parts.append(_unescape(rest))
            break
        if at:
            parts.append(_unescape(rest[:at]))
        if at + 1 >= len(rest):
            raise BadOption("empty formatter: a '%' at the end (write %% for a '%')", OPTION)
        tok = rest[at + 1]
        if tok == "%":
            parts.append(b"%")
        elif tok in TOKENS:
            parts.append(tok)
        else:
            raise BadOption(
                f"unsupported formatter: %{tok} (kcat's tokens: "
                + " ".join("%" + t for t in TOKENS)
                + " %%)",
                OPTION,
            )
        rest = rest[at + 2 :]
    return parts


def record_formatter(
    parts: list, tags: dict, shown: Callable[[tuple], tuple] | None = None
) -> Callable[[tuple, str], bytes | StreamedLine]:
    """A function (record tuple, file) -> the record's bytes in the format (dump's record
    event maker); ``tags``: the partition's (kseg.dump.plan.partition_tags). A record of many
    headers (kseg.format.headers.Headers) with ``%h`` gives a StreamedLine: its headers are
    written in chunks. ``shown``: (record) -> the (key, value) that ``%k`` and ``%s`` print
    (--payload schema: the decoded values); the sizes stay the stored ones."""
    plain = _plain_formatter(parts, tags, shown)
    if "h" not in parts:
        return plain
    # the format around each %h, for a record whose headers are written in chunks
    around: list[list] = [[]]
    for part in parts:
        if part == "h":
            around.append([])
        else:
            around[-1].append(part)
    pieces = [_plain_formatter(seg, tags, shown) for seg in around]

    def streamed(rec: tuple) -> Iterator[bytes]:
        headers = rec[3]
        yield pieces[0](rec)
        for make_piece in pieces[1:]:
            yield from joined(
                repeated(
                    (
                        (hk.encode("utf-8", "surrogateescape") + b"=" + (hv or b""), n)
                        for hk, hv, n in headers.runs()
                    ),
                    b",",
                )
            )
            yield make_piece(rec)

    def make(rec: tuple, _name: str = "") -> bytes | StreamedLine:
        if type(rec[3]) is Headers:
            return StreamedLine(streamed(rec))
        return plain(rec)

    return make


def _plain_formatter(parts: list, tags: dict, shown=None) -> Callable[[tuple, str], bytes]:
    topic = tags.get("topic")
    partition = tags.get("partition")
    t = b"" if topic is None else topic.encode("utf-8", "surrogateescape")
    p = b"" if partition is None else str(partition).encode()

    def make(rec: tuple, _name: str = "") -> bytes:
        key, value, ts, headers, offset, _seq, _ts_type = rec
        sk, sv = (key, value) if shown is None else shown(rec)
        out = []
        for part in parts:
            if type(part) is bytes:
                out.append(part)
            elif part == "s":
                out.append(sv or b"")
            elif part == "k":
                out.append(sk or b"")
            elif part == "o":
                out.append(b"%d" % offset)
            elif part == "S":
                out.append(b"%d" % (-1 if value is None else len(value)))
            elif part == "K":
                out.append(b"%d" % (-1 if key is None else len(key)))
            elif part == "T":
                out.append(b"%d" % ts)
            elif part == "t":
                out.append(t)
            elif part == "p":
                out.append(p)
            elif part == "R":
                out.append(_BE32.pack(-1 if value is None else len(value)))
            elif part == "h":
                out.append(
                    b",".join(
                        hk.encode("utf-8", "surrogateescape") + b"=" + (hv or b"")
                        for hk, hv in headers
                    )
                )
        return b"".join(out)

    return make
