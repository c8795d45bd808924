"""Renderers for dump events: JSON Lines, greppable text, rich tables. Write bytes to a stream."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import BinaryIO

import orjson

from ..format.control import KRAFT_CONTROL_NAMES as _CONTROL_NAMES

_OPTS = orjson.OPT_APPEND_NEWLINE


def _q(value: object) -> str:
    """A value shown unambiguously: JSON for strings/containers, bare for numbers and null."""
    return orjson.dumps(value).decode()


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
            f"| offset: {ev['offset']} {ev['timestamp_type']}: {ev['timestamp']} "
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
            f"| offset: {ev['offset']} {ev['timestamp_type']}: {ev['timestamp']} keySize: {ev['key_size']}",
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
            f"isControl: {_bool(ev['is_control'])} deleteHorizonMs: {_n(ev['delete_horizon_ms'])} "
            f"position: {ev['position']} {ev['timestamp_type']}: {ev['max_timestamp']} size: {ev['size']} "
            f"magic: {ev['magic']} compresscodec: {ev['compression']} crc: {ev['crc']} isvalid: {_bool(ev['crc_valid'])}"
        )
        return line
    if t == "control" and "decoded" in ev:  # KRaft control records, named as Kafka names them
        d = ev["decoded"]
        if "error" in d:
            shown = f"{ev['control_type']}: ERROR {d['error']}"
        else:
            shown = f"{_CONTROL_NAMES.get(d['control_type'], ev['control_type'])}: {_q(d['data'])}"
        return f"| offset: {ev['offset']} CreateTime: {ev['timestamp']} {shown}"
    if t == "control":
        return (
            f"| offset: {ev['offset']} CreateTime: {ev['timestamp']} endTxnMarker: {ev['control_type']} "
            f"coordinatorEpoch: {_n(ev['coordinator_epoch'])}"
        )
    if t == "file":
        state = f" ({ev['state']})" if ev.get("state") else ""
        line = f"Dumping {ev['file']}{state}"
        if "snapshot_end_offset" in ev:
            line += (
                f"\nSnapshot end offset: {ev['snapshot_end_offset']}, epoch: {ev['snapshot_epoch']}"
            )
        return line
    if t == "index_entry":
        return f"offset: {ev['offset']} position: {ev['position']}"
    if t == "timeindex_entry":
        return f"timestamp: {ev['timestamp']} offset: {ev['offset']}"
    if t == "index_padding":
        return f"# {ev['entries']} entries, then {ev['padded_bytes']} bytes of zero padding (preallocated)"
    if t == "error":
        where = f" at byte {ev['position']}" if ev.get("position") is not None else ""
        field = f" [{ev['field']}]" if ev.get("field") else ""
        extra = ""
        if ev.get("stored") is not None:
            extra = f" (stored {ev['stored']}, computed {ev['computed']})"
        return f"ERROR {ev['kind']}{where}{field}: {ev['message']}{extra}"
    rest = " ".join(
        f"{k}: {_q(v) if isinstance(v, (str, list, dict)) else v}"
        for k, v in ev.items()
        if k not in ("type", "file")
    )
    return f"{t} {rest}"


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


def write_text(events: Iterable[dict], out: BinaryIO, line=text_line) -> Iterator[dict]:
    write = out.write
    for ev in events:
        text = line(ev)
        if text is not None:
            write(text.encode("utf-8", "replace") + b"\n")
        yield ev


TABLE_COLUMNS = {
    "batch": (
        "position",
        "base_offset",
        "last_offset",
        "count",
        "magic",
        "compression",
        "size",
        "max_timestamp",
        "producer_id",
        "is_transactional",
        "is_control",
        "crc_valid",
    ),
    "record": ("offset", "timestamp", "key_size", "value_size", "key", "value"),
    "control": ("offset", "timestamp", "control_type", "coordinator_epoch"),
    "index_entry": ("offset", "position"),
    "timeindex_entry": ("timestamp", "offset"),
    "error": ("kind", "position", "field", "message"),
    "index_check": ("file", "status", "offset_index", "time_index"),
    "index_rebuild": ("file", "valid_bytes", "size", "files", "error"),
    "finding": ("severity", "kind", "file", "position", "offset", "message"),
    "segment": ("file", "status", "size", "valid_bytes"),
    "seek": (
        "topic",
        "partition",
        "target",
        "offset",
        "timestamp",
        "leader_epoch",
        "segment",
        "position",
    ),
}


def write_table(events: Iterable[dict], out: BinaryIO, chunk: int = 500) -> Iterator[dict]:
    """Rich tables, one per run of same-typed events (at most ``chunk`` rows: memory stays bounded)."""
    import io

    from rich.console import Console
    from rich.table import Table

    buf = io.StringIO()
    console = Console(file=buf, width=200, force_terminal=False, color_system=None)
    rows: list[dict] = []
    current = None

    def flush() -> None:
        nonlocal rows
        if not rows:
            return
        # columns: the event type's, else every key of the run's rows in first-seen order (a
        # tombstone row has fewer fields than the records around it)
        cols = TABLE_COLUMNS.get(current) or tuple(
            dict.fromkeys(k for r in rows for k in r if k not in ("type", "file"))
        )
        table = Table(title=current, title_justify="left")
        for c in cols:
            table.add_column(c, overflow="fold")
        for r in rows:
            table.add_row(*(_cell(r.get(c)) for c in cols))
        console.print(table)
        out.write(buf.getvalue().encode())
        buf.seek(0)
        buf.truncate()
        rows = []

    for ev in events:
        if ev["type"] == "file":
            flush()
            out.write((text_line(ev) + "\n").encode())
            current = None
            yield ev
            continue
        group, row = _table_row(ev)
        if group != current or len(rows) >= chunk:
            flush()
            current = group
        rows.append(row)
        yield ev
    flush()


def _table_row(ev: dict) -> tuple[str, dict]:
    """A decoded internal-topic record gets a table of its own record kind with a column per
    field (metadata and KRaft control: the fields of ``data``; coordinator records: their flat
    fields); everything else, and a record that did not decode, its event type's columns."""
    d = ev.get("decoded")
    if d is None or ev["type"] not in ("record", "control") or "error" in d:
        return ev["type"], ev
    if _is_framed(d):
        return d["record"], {"offset": ev["offset"], **d["data"]}
    return d["record"], {"offset": ev["offset"], **{k: v for k, v in d.items() if k != "record"}}


def _cell(v: object) -> str:
    if v is None:
        return "null"
    if isinstance(v, (dict, list)):
        return _q(v)
    s = str(v)
    return s if len(s) <= 60 else s[:57] + "..."
