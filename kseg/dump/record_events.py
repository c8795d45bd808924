"""A record's event: its fields, its key, value and headers in a payload mode, what an
internal-topic decoder reads from it; a control record's event; --count's mark."""

from __future__ import annotations

from kseg.dump import payload as P
from kseg.format.control import KRAFT_CONTROL_NAMES, parse_control
from kseg.format.errors import CorruptionError
from kseg.format.header_columns import ENCODINGS, KEYS, PAIRS, HeaderColumn, StreamedEvent
from kseg.format.headers import Headers


def counted(rec: tuple, name: str) -> bool:
    """--count's record event: a mark that dump's count (kseg.dump.plan) counts."""
    return True


def control_event(rec: tuple, name: str) -> dict:
    ev = {"type": "control", "file": name, "offset": rec[4], "timestamp": rec[2]}
    try:
        ctl = parse_control(rec[0], rec[1])
        ev.update(
            control_type=ctl.type_name, version=ctl.version, coordinator_epoch=ctl.coordinator_epoch
        )
    except CorruptionError as exc:
        ev.update(control_type=None, version=None, coordinator_epoch=None, error=exc.message)
        return ev
    if ctl.type in KRAFT_CONTROL_NAMES:  # LeaderChange, SnapshotHeader/Footer, KRaftVersion/Voters
        from kseg.format.metadata import decode_kraft_control  # the schema tables load on first use

        try:
            ev["decoded"] = decode_kraft_control(ctl.type, rec[1])
        except CorruptionError as exc:
            ev["decoded"] = _decode_error(exc)
    return ev


def _decode_error(exc: CorruptionError) -> dict:
    return {"error": exc.message, "field": exc.field}


def record_event_maker(
    name: str, mode: str, decoder=None, skip: bool = False, tags: dict | None = None
):
    """A function (record tuple, file) -> record event, specialised for one file, payload mode and
    decoder (it runs once per record: every lookup bound here is one it does not repeat).
    ``mode`` "none" shows sizes and header keys only."""
    enc = None if mode == "none" else P.encoder(mode)
    tags = tags or {}

    def make(rec: tuple, _name: str = name) -> dict:
        key, value, ts, headers, offset, seq, ts_type = rec
        ev = {
            "type": "record",
            "file": name,
            **tags,
            "offset": offset,
            "timestamp": ts,
            "timestamp_type": ts_type,
            "key_size": -1 if key is None else len(key),
            "value_size": -1 if value is None else len(value),
            "sequence": seq,
        }
        lazy = type(headers) is Headers  # many headers: written in chunks, never one list
        if enc is None:
            if lazy:
                ev["header_keys"] = HeaderColumn(headers, None, KEYS)
            else:
                ev["header_keys"] = [k for k, _ in headers]
        else:
            ev["key"], ev["key_encoding"] = enc(key)
            ev["value"], ev["value_encoding"] = enc(value)
            if lazy:
                ev["headers"] = HeaderColumn(headers, enc, PAIRS)
                ev["header_encodings"] = HeaderColumn(headers, enc, ENCODINGS)
            else:
                shown = [enc(v) for _, v in headers]
                ev["headers"] = [[k, sv[0]] for (k, _), sv in zip(headers, shown, strict=True)]
                ev["header_encodings"] = [sv[1] for sv in shown]
        if decoder is not None:
            try:
                ev["decoded"] = decoder(key, value)
            except CorruptionError as exc:
                ev["decoded"] = _decode_error(exc)
        if skip:  # --skip-record-metadata: the decoded payload, or the raw key and value
            keep = _SKIPPED_DECODED if "decoded" in ev else _SKIPPED_RAW
            return {**{k: ev[k] for k in keep if k in ev}, **tags}
        return StreamedEvent(ev) if lazy else ev

    return make


_SKIPPED_DECODED = ("type", "file", "offset", "decoded")
_SKIPPED_RAW = ("type", "file", "offset", "key", "key_encoding", "value", "value_encoding")
