"""dump's events as finished JSON lines, made without building their dicts (the dict costs
more than the encoding), and the compiled kernel's JSON renderers for a dump (kseg.dump.kernel_json's
json_records): DumpOptions.json_lines is JSON_LINES when the output is JSON Lines. dump walks
and selects; the JSON text of its lines is made here or by the kernel, byte for byte what
orjson.dumps of the event dicts gives (tests hold them equal)."""

from __future__ import annotations

from binascii import b2a_base64
from collections.abc import Iterator

import orjson

from kseg.dump import kernel_json
from kseg.dump import payload as P
from kseg.format.header_columns import StreamedLine, joined, repeated
from kseg.format.headers import Headers

_RECORD_LINE = (
    b'{"type":"record","file":%s,"offset":%d,"timestamp":%d,"timestamp_type":"%s","key_size":%d,'
    b'"value_size":%d,"sequence":%d,"key":%s,"key_encoding":%s,"value":%s,"value_encoding":%s,'
    b'"headers":%s,"header_encodings":%s}\n'
)

_NO_HEADERS = b'"headers":[],"header_encodings":[]}\n'


def file_json(name: str, tags: dict | None) -> bytes:
    """The file and the partition tags right after it, as record_event_maker orders them."""
    return orjson.dumps({"file": name, **(tags or {})})[len(b'{"file":') : -1]


def record_json_maker(name: str, mode: str, tags: dict | None = None):
    """A function (record tuple, file) -> the JSON line of its event, byte for byte what
    orjson.dumps(kseg.dump.record_events.record_event_maker(...)(rec)) + newline gives (a test
    holds them equal), without building the dict: the dict costs more than the JSON encoding.
    None when not applicable."""
    if mode == "none":
        return None
    dumps = orjson.dumps
    file_part = file_json(name, tags)
    ts_types = {t: t.encode() for t in ("CreateTime", "LogAppendTime", "NoTimestampType")}
    line = _RECORD_LINE
    b64 = b2a_base64
    enc = P.encoder(mode)

    def field(data):
        if mode == "base64":
            return (
                (b"null", b"null")
                if data is None
                else (b'"' + b64(data, newline=False) + b'"', b'"base64"')
            )
        shown, encoding = enc(data)
        return dumps(shown), b"null" if encoding is None else b'"' + encoding.encode() + b'"'

    def headers_json(headers) -> tuple[bytes, bytes]:
        parts = [(hk, field(hv)) for hk, hv in headers]
        hs = b"[" + b",".join(b"[" + dumps(hk) + b"," + f[0] + b"]" for hk, f in parts) + b"]"
        return hs, b"[" + b",".join(f[1] for _, f in parts) + b"]"

    def streamed_headers(start: bytes, headers) -> Iterator[bytes]:
        # a record of many headers: its line up to them, then the headers in pieces, a run of
        # equal ones rendered once
        yield start + b'"headers":['
        yield from joined(
            repeated(
                (
                    (b"[" + dumps(hk) + b"," + field(hv)[0] + b"]", n)
                    for hk, hv, n in headers.runs()
                ),
                b",",
            )
        )
        yield b'],"header_encodings":['
        yield from joined(repeated(((field(hv)[1], n) for _, hv, n in headers.runs()), b","))
        yield b"]}\n"

    def streamed(line: bytes, headers) -> StreamedLine:
        # ``line``: the record's line made with empty headers
        return StreamedLine(streamed_headers(line[: -len(_NO_HEADERS)], headers))

    if mode == "base64":  # the common scripting mode, inlined: it runs once per record
        # one template per null/non-null key and value, quotes included: no concatenations
        def variant(key_null: bool, value_null: bool) -> bytes:
            k = b'null,"key_encoding":null' if key_null else b'"%s","key_encoding":"base64"'
            v = b'null,"value_encoding":null' if value_null else b'"%s","value_encoding":"base64"'
            return (
                b'{"type":"record","file":%s,"offset":%d,"timestamp":%d,"timestamp_type":"%s",'
                b'"key_size":%d,"value_size":%d,"sequence":%d,"key":'
                + k
                + b',"value":'
                + v
                + b',"headers":%s,"header_encodings":%s}\n'
            )

        both, no_key, no_value, neither = (
            variant(False, False),
            variant(True, False),
            variant(False, True),
            variant(True, True),
        )

        def make(rec: tuple, _name: str = name) -> bytes | StreamedLine:
            key, value, ts, headers, offset, seq, ts_type = rec
            if type(headers) is Headers:
                return streamed(make(rec[:3] + ((),) + rec[4:]), headers)
            hs, he = headers_json(headers) if headers else (b"[]", b"[]")
            t = ts_types[ts_type]
            if key is not None and value is not None:
                return both % (
                    file_part,
                    offset,
                    ts,
                    t,
                    len(key),
                    len(value),
                    seq,
                    b64(key, newline=False),
                    b64(value, newline=False),
                    hs,
                    he,
                )
            if value is not None:
                return no_key % (
                    file_part,
                    offset,
                    ts,
                    t,
                    -1,
                    len(value),
                    seq,
                    b64(value, newline=False),
                    hs,
                    he,
                )
            if key is not None:
                return no_value % (
                    file_part,
                    offset,
                    ts,
                    t,
                    len(key),
                    -1,
                    seq,
                    b64(key, newline=False),
                    hs,
                    he,
                )
            return neither % (file_part, offset, ts, t, -1, -1, seq, hs, he)

        return make

    def make(rec: tuple, _name: str = name) -> bytes | StreamedLine:
        key, value, ts, headers, offset, seq, ts_type = rec
        if type(headers) is Headers:
            return streamed(make(rec[:3] + ((),) + rec[4:]), headers)
        k, ke = field(key)
        v, ve = field(value)
        hs, he = headers_json(headers) if headers else (b"[]", b"[]")
        ks = -1 if key is None else len(key)
        vs = -1 if value is None else len(value)
        return line % (file_part, offset, ts, ts_types[ts_type], ks, vs, seq, k, ke, v, ve, hs, he)

    return make


class DumpJsonLines:
    """What a dump asks for when its output is JSON Lines (kseg.dump.options.JsonLines): record
    lines made here, and the kernel's renderers of a file's record and batch lines (None
    whenever the kernel is not active or does not render the mode: dump takes the core's
    path)."""

    __slots__ = ()

    def record_maker(self, name: str, mode: str, tags: dict):
        return record_json_maker(name, mode, tags)

    def kernel_records(self, name: str, tags: dict, opts):
        return kernel_json.json_records(
            file_json(name, tags),
            opts.payload,
            opts.from_offset,
            opts.to_offset,
            opts.from_time,
            opts.to_time,
        )

    def kernel_batches(self, opts):
        # batch lines carry no payload: any mode the kernel renders will do
        return kernel_json.json_records(
            b"", "base64", opts.from_offset, opts.to_offset, opts.from_time, opts.to_time
        )

    def batch_fields(self, name: str, tags: dict) -> tuple[bytes, bytes]:
        """The file name as JSON, and the partition tags as ``,"key":value``... (the end of a
        batch line, after its fields)."""
        batch_tail = orjson.dumps(tags)[1:-1] if tags else b""
        if batch_tail:
            batch_tail = b"," + batch_tail
        return orjson.dumps(name), batch_tail


JSON_LINES = DumpJsonLines()
