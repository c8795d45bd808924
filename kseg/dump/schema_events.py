"""`--payload schema`: keys and values framed by a Schema Registry client shown as the values
their producers wrote (kseg.schemas), and a ``schema_finding`` event for each one that does not
decode.

- A framed key or value (magic byte 0) is decoded by the schema its id names: the event's
  ``key``/``value`` is the decoded JSON value, ``key_encoding``/``value_encoding`` says ``avro``,
  ``protobuf`` or ``json-schema``, and ``key_schema_id``/``value_schema_id`` the id.
- One that does not decode (an unknown id, a payload its schema does not read, a truncated
  frame, a schema that does not parse) is shown as ``--payload auto`` shows bytes, with its
  ``*_schema_id`` when the frame has one, and is followed by a ``schema_finding`` naming the
  record (file, offset), the field and why.
- Anything else (null, a plain string key) is shown as ``--payload auto`` shows it.
- Header values are shown as ``auto`` shows them (a header carries no frame).

A search (``--key``, ``--value``, ``--key-eq``, ``--value-contains``) matches the decoded value
as text: a decoded string as itself, anything else as compact JSON (``{"id":7}``); a field that
is not decoded, as its bytes. ``--format-string``'s ``%k`` and ``%s`` print the same text;
``%K``/``%S``/``%R`` stay the stored sizes (kcat's ``-s avro`` prints them so).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import orjson

from kseg.dump.record_events import record_event_maker
from kseg.format.header_columns import StreamedLine
from kseg.format.headers import Headers

FINDING = "schema_finding"


def finding_event(name: str, offset: int | None, field: str | None, sid, message: str) -> dict:
    return {
        "type": FINDING,
        "file": name,
        "offset": offset,
        "field": field,
        "schema_id": sid,
        "message": message,
    }


def as_text(value) -> bytes:
    """A decoded value as search and --format-string see it (see the module)."""
    if type(value) is str:
        return value.encode("utf-8", "surrogatepass")
    return orjson.dumps(value)


class Found:
    """Findings made while records are made, each with the number of the record it follows
    (records are numbered as the maker makes them, in the order they are shown)."""

    def __init__(self) -> None:
        self.made = 0
        self.pending: list[tuple[int, dict]] = []


HEADER_IDS = {"__key_schema_id": "key", "__value_schema_id": "value"}


def header_ids(headers) -> dict[str, str]:
    """field -> the header that names its schema (Confluent Platform 8's schema ids in headers:
    a GUID; the field's bytes then have no frame). Usually empty."""
    if not headers:
        return {}
    pairs = headers.distinct() if type(headers) is Headers else headers
    return {HEADER_IDS[k]: k for k, _v in pairs if k in HEADER_IDS}


def record_maker(name: str, decoder, skip: bool, tags: dict, found: Found) -> Callable:
    """dump's record event maker for ``--payload schema`` (see the module)."""
    base = record_event_maker(name, "auto", None, skip, tags)
    decode = decoder.decode

    def make(rec: tuple, _name: str = name):
        ev = base(rec)
        found.made += 1
        named = header_ids(rec[3])
        for field, data in (("key", rec[0]), ("value", rec[1])):
            d = decode(data, named.get(field))
            if d is None:
                continue
            ev[field + "_schema_id"] = d.schema_id
            if d.error is None:
                ev[field] = d.value
                ev[field + "_encoding"] = d.encoding
            else:
                found.pending.append(
                    (
                        found.made,
                        {**finding_event(name, rec[4], field, d.schema_id, d.error), **tags},
                    )
                )
        return ev

    return make


def shown_fields(name: str, decoder, tags: dict, found: Found) -> Callable:
    """(record tuple) -> (key, value) as --format-string's %k and %s print them; once per
    record (a record of many headers asks once per piece of its line)."""
    decode = decoder.decode
    last: list = [None, None]

    def shown(rec: tuple) -> tuple:
        if rec is last[0]:
            return last[1]
        found.made += 1
        out = []
        named = header_ids(rec[3])
        for field, data in (("key", rec[0]), ("value", rec[1])):
            d = decode(data, named.get(field))
            if d is None:
                out.append(data)
            elif d.error is None:
                out.append(as_text(d.value))
            else:
                out.append(data)
                found.pending.append(
                    (
                        found.made,
                        {**finding_event(name, rec[4], field, d.schema_id, d.error), **tags},
                    )
                )
        last[0], last[1] = rec, tuple(out)
        return last[1]

    return shown


def _is_record(ev) -> bool:
    t = type(ev)
    return t is bytes or t is StreamedLine or ev["type"] == "record"


def with_findings(chunks: Iterator[list], found: Found) -> Iterator[list]:
    """``chunks`` with each pending finding placed right after its record."""
    seen = 0
    for chunk in chunks:
        if not found.pending:
            seen += sum(1 for ev in chunk if _is_record(ev))
            yield chunk
            continue
        out = []
        for ev in chunk:
            out.append(ev)
            if _is_record(ev):
                seen += 1
                while found.pending and found.pending[0][0] <= seen:
                    out.append(found.pending.pop(0)[1])
        yield out
    for _n, ev in found.pending:  # records made but not shown cannot be: said at the end
        yield [ev]
    found.pending.clear()


class DecodedFilter:
    """A record search (kseg.dump.search.RecordFilter) on decoded keys and values (see the
    module): the batch pre-check keeps only what the raw bytes still show (header names and
    values); key and value conditions are judged on the decoded text."""

    def __init__(self, inner, decoder) -> None:
        from kseg.dump.search import RecordFilter, _needles

        self.inner = inner
        self.decode = decoder.decode
        self.pre = inner._replace(needles=_needles(RecordFilter(headers=inner.headers)))

    def _view(self, data, header):
        d = self.decode(data, header)
        if d is None or d.error is not None:
            return data
        return as_text(d.value)

    def matches(self, key, value, headers) -> bool:
        f = self.inner
        named = header_ids(headers)
        k = self._view(key, named.get("key")) if (f.keys or f.key_eq) else key
        v = self._view(value, named.get("value")) if (f.values or f.value_contains) else value
        return f.matches(k, v, headers)

    def may_match(self, data, start: int, end: int) -> bool:
        return self.pre.may_match(data, start, end)

    def batch_may_match(self, entry, max_decompressed: int) -> bool:
        return self.pre.batch_may_match(entry, max_decompressed)


def prepare(paths: list, opts):
    """``opts`` with the schemas' decoder (and a search on decoded values), and the problems
    met while the schemas were read, as findings. BadOption (usage) when there are no schemas
    to be had."""
    from kseg.dump.error_events import error_event
    from kseg.schemas.decoder import SchemaDecoder
    from kseg.schemas.registry import UNREADABLE
    from kseg.schemas.sources import load_to_decode

    registry = load_to_decode(paths, opts.schema_source)
    decoder = SchemaDecoder(registry)
    keep = opts.record_filter
    if keep is not None:
        keep = DecodedFilter(keep, decoder)
    problems = []
    for p in registry.problems:
        file = p["file"] or registry.source
        if p["kind"] == UNREADABLE:  # an operational failure (exit 8), as any unreadable file
            problems.append(error_event(p["message"], file))
        else:
            problems.append(finding_event(file, p["offset"], None, None, p["message"]))
    return opts._replace(schemas=decoder, record_filter=keep), problems


def summarized(chunks: Iterator[list], opts, problems: list[dict]) -> Iterator[list]:
    """A ``--payload schema`` dump's chunks: the problems met reading the schemas, the dump's,
    and (not with --count) a ``schema_summary`` counting the findings."""
    findings = sum(1 for ev in problems if ev["type"] == FINDING)
    if problems:
        yield problems
    for chunk in chunks:
        findings += sum(1 for ev in chunk if type(ev) is dict and ev["type"] == FINDING)
        yield chunk
    if not opts.count:
        yield [summary_event(opts, findings)]


def summary_event(opts, findings: int) -> dict:
    """The last event of a ``--payload schema`` dump: where the schemas came from and how many
    findings the dump made."""
    reg = opts.schemas.registry
    return {
        "type": "schema_summary",
        "schemas": reg.source,
        "schema_ids": len(reg.by_id),
        "findings": findings,
        "strict": opts.strict,
        "notes": list(reg.notes),
    }
