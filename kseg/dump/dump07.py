"""Dump of a Kafka 0.7 `.kafka` segment: one ``entry`` event per top-level message and, unless
--batches-only, one ``message`` event per message a 0.7 consumer receives.

Offsets are byte offsets in the partition's stream (segment name + position). An entry event
carries its ``offset`` (= its position there, what 0.7's DumpLogSegments printed), ``next_offset``
(the next entry's offset), ``size`` (4 + the size field), ``magic``, ``compression``, ``crc``
and ``crc_valid``. A message event carries the ``offset`` of the entry that holds it and the
``consumer_offset`` a 0.7 consumer stores after it: the next entry's offset for an uncompressed
entry; inside a compressed wrapper, the wrapper's own offset for every inner message but the
last, and the wrapper's ``next_offset`` for the last (0.7's deep iterator).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kseg.dump import payload as P
from kseg.dump.error_events import error_event
from kseg.format import kafka07 as k7
from kseg.format.errors import CRC_MISMATCH, CorruptionError
from kseg.storage import files as F
from kseg.storage.mapped import mapped

ENTRY, MESSAGE = "entry", "message"


def dump_segment07(path: Path, name: str, opts, budget, tags=None) -> Iterator[list[dict]]:
    """Events of one `.kafka` file (see the module docstring). ``opts`` is dump's DumpOptions;
    --from/--to-offset select by byte offset; 0.7 messages carry no timestamps, so a time
    window selects nothing from them."""
    if opts.from_time is not None or opts.to_time is not None:
        return
    base = F.file_kind(path).base_offset or 0
    enc = None if opts.payload == "none" else P.encoder(opts.payload)
    if opts.format_string is not None:  # --format-string: a message is a record of no key
        from kseg.dump.format_string import record_formatter

        enc = record_formatter(opts.format_string, tags or {})
    with mapped(path, sequential=True) as buf:
        end = len(buf)
        limit_end = end if opts.max_bytes is None else min(end, opts.max_bytes)
        try:
            for e in k7.entries(buf, base=base, source=name, validate=False):
                if e.position + e.entry_size > limit_end:
                    return  # --max-bytes: whole entries within the first N bytes
                if opts.to_offset is not None and e.offset > opts.to_offset:
                    return
                if opts.from_offset is not None and e.next_offset <= opts.from_offset:
                    continue
                chunk, problem = _entry_events(e, name, opts, budget, enc)
                yield chunk
                if problem is not None:
                    raise problem  # the walk stops where 0.7's recovery would
                if budget.spent:
                    return
        except CorruptionError as exc:
            yield [error_event(exc, name)]


def _entry_events(e: k7.Message07, name: str, opts, budget, enc) -> tuple[list[dict], object]:
    computed = e.compute_crc()
    ev = {
        "type": ENTRY,
        "file": name,
        "offset": e.offset,
        "position": e.position,
        "next_offset": e.next_offset,
        "size": e.entry_size,
        "magic": e.magic,
        "compression": e.compression,
        "crc": e.crc,
        "crc_valid": computed == e.crc,
        "payload_size": e.payload_size,
    }
    problem = None
    if computed != e.crc:  # the CRC once per entry: validate() would compute it again
        problem = e.error(
            "message CRC-32 mismatch (payload)",
            CRC_MISMATCH,
            "crc",
            stored=e.crc,
            computed=computed,
        )
    elif e.codec not in k7.CODECS:
        try:
            e.validate()  # names the unknown codec as the walks do
        except CorruptionError as exc:
            problem = exc
    if opts.batches_only or problem is not None:
        if opts.batches_only and not budget.take():
            return [], None
        return [ev], problem
    out = [ev]
    try:
        if e.is_compressed:
            inner = k7.inner_messages(e, max_decompressed=opts.max_decompressed)
            ev["count"] = len(inner)
            found = [(m.payload, m.magic, m.crc, m.depth, m.consumer_offset) for m in inner]
        else:
            ev["count"] = 1
            with e.payload() as p:
                found = [(bytes(p), e.magic, e.crc, 0, e.next_offset)]
    except CorruptionError as exc:
        return out + [error_event(exc, name)], None  # a bad wrapper content; the log walk goes on
    keep = opts.record_filter  # a 0.7 message has a payload (the value) and no key or headers
    for payload, magic, crc, depth, consumer in found:
        if keep is not None and not keep.matches(None, payload, ()):
            continue
        if not budget.take():
            break
        if opts.count:
            out.append(True)  # dump's count (kseg.dump.plan) counts it
            continue
        if opts.format_string is not None:
            out.append(enc((None, payload, -1, [], e.offset, -1, None)))
            continue
        msg = {
            "type": MESSAGE,
            "file": name,
            "offset": e.offset,
            "next_offset": e.next_offset,
            "consumer_offset": consumer,
            "magic": magic,
            "depth": depth,
            "crc": crc,
            "payload_size": len(payload),
        }
        if enc is not None:
            msg["payload"], msg["payload_encoding"] = enc(payload)
        out.append(msg)
    if keep is not None and len(out) == 1:
        return [], None  # no message of it matched
    return out, None
