"""Renderers for dump events: JSON Lines, greppable text, rich tables. Write bytes to a stream."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import BinaryIO

import orjson

from ..format.control import KRAFT_CONTROL_NAMES as _CONTROL_NAMES
from ..format.timestamps import with_iso

# fields holding epoch ms: text and tables show ISO-8601 UTC beside them (JSON keeps the number)
TIME_FIELDS = frozenset(
    (
        "timestamp",
        "max_timestamp",
        "base_timestamp",
        "min_base_timestamp",
        "delete_horizon_ms",
        "target_timestamp",
        "commit_timestamp",
        "expire_timestamp",
        "current_state_timestamp",
        "target",  # seek's target: epoch ms, or a negative special target (-1 latest, ...)
    )
)

_OPTS = orjson.OPT_APPEND_NEWLINE


def _q(value: object) -> str:
    """A value shown unambiguously: JSON for strings/containers, bare for numbers and null."""
    return orjson.dumps(value).decode()


def safe_path(path: str) -> str:
    """A path as it is, or JSON-quoted when it holds a newline or another control character
    (one line of output stays one line)."""
    return path if path.isprintable() else orjson.dumps(path).decode()


def _n(v: object) -> str:
    return "null" if v is None else str(v)


def _bool(b: bool) -> str:
    return "true" if b else "false"


def _payload(value: object, encoding: str | None) -> str:
    if value is None:
        return "null"
    if encoding in (None, "utf8", "json"):
        return _q(value)
    return f"{encoding}:{_q(value)}"


def _framed(decoded: dict) -> str:
    """A metadata / KRaft control decoding as one readable piece: ``topic_record v0: {...}``."""
    return f"{decoded['record']} v{decoded['version']}: {_q(decoded['data'])}"


def _is_framed(decoded: object) -> bool:
    return isinstance(decoded, dict) and "data" in decoded and "record" in decoded


def _record_special(ev: dict) -> str | None:
    """Record lines that are not kafka-dump-log's usual one: --skip-record-metadata (the payload
    only) and decoded metadata records (the decoding replaces the bytes)."""
    if "timestamp" not in ev:
        if "decoded" in ev:
            d = ev["decoded"]
            shown = _framed(d) if _is_framed(d) else "decoded: " + _q(d)
        else:
            shown = "key: " + _payload(ev.get("key"), ev.get("key_encoding"))
            shown += " payload: " + _payload(ev.get("value"), ev.get("value_encoding"))
        return f"offset: {ev['offset']} {shown}"
    if _is_framed(ev["decoded"]):
        return (
            f"| offset: {ev['offset']} {ev['timestamp_type']}: {with_iso(ev['timestamp'])} "
            f"keySize: {ev['key_size']} valueSize: {ev['value_size']} sequence: {ev['sequence']} "
            f"{_framed(ev['decoded'])}"
        )
    return None


def text_line(ev: dict) -> str:
    t = ev["type"]
    if t == "record":
        if "decoded" in ev or "timestamp" not in ev:
            special = _record_special(ev)
            if special is not None:
                return special
        parts = [
            f"| offset: {ev['offset']} {ev['timestamp_type']}: {with_iso(ev['timestamp'])} keySize: {ev['key_size']}",
            f"valueSize: {ev['value_size']} sequence: {ev['sequence']}",
        ]
        if "headers" in ev:
            parts.append("headerKeys: " + _q([h[0] for h in ev["headers"]]))
            parts.append("key: " + _payload(ev["key"], ev["key_encoding"]))
            parts.append("payload: " + _payload(ev["value"], ev["value_encoding"]))
            if ev["headers"]:
                hs = ", ".join(
                    f"{_q(k)}: {_payload(v, e)}"
                    for (k, v), e in zip(ev["headers"], ev["header_encodings"], strict=True)
                )
                parts.append("headers: {" + hs + "}")
        else:
            parts.append("headerKeys: " + _q(ev["header_keys"]))
        if "decoded" in ev:
            parts.append("decoded: " + _q(ev["decoded"]))
        return " ".join(parts)
    if t == "batch":
        line = (
            f"baseOffset: {_n(ev['base_offset'])} lastOffset: {ev['last_offset']} count: {_n(ev['count'])} "
            f"baseSequence: {ev['base_sequence']} lastSequence: {ev['last_sequence']} "
            f"producerId: {ev['producer_id']} producerEpoch: {ev['producer_epoch']} "
            f"partitionLeaderEpoch: {ev['partition_leader_epoch']} isTransactional: {_bool(ev['is_transactional'])} "
            f"isControl: {_bool(ev['is_control'])} deleteHorizonMs: {with_iso(ev['delete_horizon_ms'])} "
            f"position: {ev['position']} {ev['timestamp_type']}: {with_iso(ev['max_timestamp'])} size: {ev['size']} "
            f"magic: {ev['magic']} compresscodec: {ev['compression']} crc: {ev['crc']} isvalid: {_bool(ev['crc_valid'])}"
        )
        return line
    if t == "control" and "decoded" in ev:  # KRaft control records, named as Kafka names them
        d = ev["decoded"]
        if "error" in d:
            shown = f"{ev['control_type']}: ERROR {d['error']}"
        else:
            shown = f"{_CONTROL_NAMES.get(d['control_type'], ev['control_type'])}: {_q(d['data'])}"
        return f"| offset: {ev['offset']} CreateTime: {with_iso(ev['timestamp'])} {shown}"
    if t == "control":
        return (
            f"| offset: {ev['offset']} CreateTime: {with_iso(ev['timestamp'])} endTxnMarker: {ev['control_type']} "
            f"coordinatorEpoch: {_n(ev['coordinator_epoch'])}"
        )
    if t == "file":
        state = f" ({ev['state']})" if ev.get("state") else ""
        line = f"Dumping {safe_path(ev['file'])}{state}"
        if "snapshot_end_offset" in ev:
            line += (
                f"\nSnapshot end offset: {ev['snapshot_end_offset']}, epoch: {ev['snapshot_epoch']}"
            )
        return line
    if t == "index_entry":
        return f"offset: {ev['offset']} position: {ev['position']}"
    if t == "timeindex_entry":
        return f"timestamp: {with_iso(ev['timestamp'])} offset: {ev['offset']}"
    if t == "index_padding":
        return f"# {ev['entries']} entries, then {ev['padded_bytes']} bytes of zero padding (preallocated)"
    if t == "error":
        where = f" at byte {ev['position']}" if ev.get("position") is not None else ""
        field = f" [{ev['field']}]" if ev.get("field") else ""
        extra = ""
        if ev.get("stored") is not None:  # computed is None when nothing recomputes it (a magic)
            computed = f", computed {ev['computed']}" if ev.get("computed") is not None else ""
            extra = f" (stored {ev['stored']}{computed})"
        return f"ERROR {ev['kind']}{where}{field}: {ev['message']}{extra}"
    rest = " ".join(f"{k}: {field_text(k, v)}" for k, v in ev.items() if k not in ("type", "file"))
    return f"{t} {rest}"


def field_text(key: str, v: object) -> str:
    if isinstance(v, (str, list, dict)):
        return _q(v)
    if key in TIME_FIELDS and type(v) is int and v >= 0:  # negatives: -1 "none", -2 earliest...
        return with_iso(v)
    return str(v)


def write_json(events: Iterable[dict], out: BinaryIO) -> Iterator[dict]:
    """JSON Lines. ``out`` should be a large fixed buffer (see cli.stdout): one small write per
    event then costs a memcpy, not a syscall or an allocation."""
    dumps = orjson.dumps
    write = out.write
    for ev in events:
        write(dumps(ev, option=_OPTS))
        yield ev


def write_json_chunks(chunks: Iterable[list], out: BinaryIO) -> Iterator[list]:
    """Chunks of events; an event that is already a JSON line (bytes) is written as it is."""
    dumps = orjson.dumps
    write = out.write
    for chunk in chunks:
        for ev in chunk:
            write(ev if type(ev) is bytes else dumps(ev, option=_OPTS))
        yield chunk


def write_text_chunks(
    chunks: Iterable[list[dict]], out: BinaryIO, line=text_line
) -> Iterator[list[dict]]:
    write = out.write
    for chunk in chunks:
        for ev in chunk:
            text = line(ev)
            if text is not None:
                write(text.encode("utf-8", "replace") + b"\n")
        yield chunk


PATH_FIELDS = ("file", "segment", "partition_dir", "quarantine", "partition")


def one_line(text: str) -> str:
    """Control characters (a newline in a file name...) as escapes: a message stays one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def write_text(events: Iterable[dict], out: BinaryIO, line=text_line) -> Iterator[dict]:
    """Text lines of events (verify, index, seek, ...): paths with control characters are
    quoted, so a line stays a line."""
    write = out.write
    for ev in events:
        shown = ev
        for key in PATH_FIELDS:
            v = ev.get(key)
            if type(v) is str and not v.isprintable():
                if shown is ev:
                    shown = dict(ev)
                shown[key] = safe_path(v)
        text = line(shown)
        if text is not None and not text.isprintable():
            # a path inside free text (a message, a plan): escape what is not the deliberate
            # continuation of a line ("\n  ")
            text = "\n  ".join(one_line(part) for part in text.split("\n  "))
        if text is not None:
            write(text.encode("utf-8", "replace") + b"\n")
        yield ev
