"""`--format text` (the default): greppable lines, for every command.

dump's lines follow kafka-dump-log; the other commands' lines are in ``LINES``, one function per
command, each turning one event into a line (or None: not shown).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from kseg.format.control import KRAFT_CONTROL_NAMES as _CONTROL_NAMES
from kseg.format.header_columns import KEYS, HeaderColumn, StreamedEvent, joined, repeated
from kseg.format.timestamps import with_iso
from kseg.render.fields import PATH_FIELDS, epochs_text, field_text, one_line, safe_path
from kseg.render.fields import bool_text as _bool
from kseg.render.fields import quoted as _q


def _n(v: object) -> str:
    return "null" if v is None else str(v)


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
    if t == "entry":  # a Kafka 0.7 message (offsets are byte offsets)
        count = f" count: {ev['count']}" if "count" in ev else ""
        return (
            f"offset: {ev['offset']} position: {ev['position']} nextOffset: {ev['next_offset']} "
            f"size: {ev['size']} magic: {ev['magic']} compresscodec: {ev['compression']}{count} "
            f"crc: {ev['crc']} isvalid: {_bool(ev['crc_valid'])}"
        )
    if t == "message":  # what a 0.7 consumer receives from the entry at ``offset``
        line = (
            f"| offset: {ev['offset']} consumerOffset: {ev['consumer_offset']} "
            f"magic: {ev['magic']} payloadSize: {ev['payload_size']}"
        )
        if "payload" in ev:
            line += " payload: " + _payload(ev["payload"], ev["payload_encoding"])
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
    if t == "schema_finding":  # --payload schema (kseg.dump.schema_events)
        return schema_finding_line(ev)
    if t == "schema_summary":
        n = ev["findings"]
        strict = " (--strict: invalid data)" if ev["strict"] and n else ""
        notes = "".join(f"; {note}" for note in ev["notes"])
        return (
            f"schemas: {ev['schemas']}, {ev['schema_ids']} ids; {n} finding{'s' if n != 1 else ''}"
            f"{strict}{notes}"
        )
    if t == "error":  # under its file's `Dumping` line, which names the file
        return error_line(ev, with_file=False)
    if t == "skipped":
        return skipped_line(ev, with_file=False)
    rest = " ".join(f"{k}: {field_text(k, v)}" for k, v in ev.items() if k not in ("type", "file"))
    return f"{t} {rest}"


def streamed_text(ev: dict) -> Iterator[str]:
    """text_line of a record event holding HeaderColumns (kseg.format.header_columns), in pieces:
    the same text, its headers written a chunk at a time."""
    if "decoded" in ev or "timestamp" not in ev:
        special = _record_special(ev)
        if special is not None:
            yield special
            return
    yield (
        f"| offset: {ev['offset']} {ev['timestamp_type']}: {with_iso(ev['timestamp'])} keySize: {ev['key_size']}"
        f" valueSize: {ev['value_size']} sequence: {ev['sequence']}"
    )
    column = ev["headers"] if "headers" in ev else ev["header_keys"]
    yield " headerKeys: ["
    keys = HeaderColumn(column.headers, None, KEYS)
    yield from joined((_q(part)[1:-1] for part in keys.chunks()), ",")
    yield "]"
    if "headers" in ev:
        yield " key: " + _payload(ev["key"], ev["key_encoding"])
        yield " payload: " + _payload(ev["value"], ev["value_encoding"])
        yield " headers: {"
        yield from joined(
            repeated(((f"{_q(k)}: {_payload(v, e)}", n) for k, v, e, n in column.triples()), ", "),
            ", ",
        )
        yield "}"
    if "decoded" in ev:
        yield " decoded: " + _q(ev["decoded"])


def write_text_chunks(
    chunks: Iterable[list[dict]], out: BinaryIO, line=text_line
) -> Iterator[list[dict]]:
    write = out.write
    dumping = None  # the file of the last `Dumping` line: a problem under it need not name it
    for chunk in chunks:
        for ev in chunk:
            if type(ev) is StreamedEvent:  # a record of many headers, in pieces
                for piece in streamed_text(ev):
                    write(piece.encode("utf-8", "replace"))
                write(b"\n")
                continue
            t = ev["type"]
            if t == "file":
                dumping = ev["file"]
            elif t == "error" and line is text_line and ev.get("file") not in (None, dumping):
                text = error_line(ev)  # before its file's `Dumping` line (read_committed's)
                write(text.encode("utf-8", "replace") + b"\n")
                continue
            text = line(ev)
            if text is not None:
                write(text.encode("utf-8", "replace") + b"\n")
        yield chunk


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
                    shown = ev.copy()  # an Event stays one (what it is about)
                shown[key] = safe_path(v)
        text = line(shown)
        if text is not None and not text.isprintable():
            # a path inside free text (a message, a plan): escape what is not the deliberate
            # continuation of a line ("\n  ")
            text = "\n  ".join(one_line(part) for part in text.split("\n  "))
        if text is not None:
            write(text.encode("utf-8", "replace") + b"\n")
        yield ev


# --- verify, index, restore, seek, spark ---------------------------------------------------


def verify_line(ev: dict) -> str | None:
    t = ev["type"]
    if t == "finding":
        where = f" byte {ev['position']}" if ev["position"] is not None else ""
        off = f" offset {ev['offset']}" if ev["offset"] is not None else ""
        tag = " (remaining after repair)" if ev.get("remaining") else ""
        return (
            f"{ev['severity'].upper()} {ev['kind']} {ev['file']}{where}{off}: {ev['message']}{tag}"
        )
    if t == "segment":
        if ev["status"] in ("ok", "repaired"):
            return f"{ev['file']}: {ev['status']} ({ev['size']} bytes)"
        if ev["status"] == "corrupt" and ev["valid_bytes"] == ev["size"]:
            return (
                f"{ev['file']}: corrupt (nothing to truncate: bytes outside the CRC need a patch)"
            )
        return f"{ev['file']}: {ev['status']} (valid {ev['valid_bytes']} of {ev['size']} bytes)"
    if t == "repair_action":
        pre = "[dry-run] " if ev["dry_run"] else ""
        if ev["action"] == "truncate":
            return f"{pre}truncate {ev['file']} to {ev['position']} bytes ({ev['length']} bytes to quarantine): {ev['reason']}"
        if ev["action"] == "move":
            return f"{pre}move {ev['file']} to quarantine: {ev['reason']}"
        if ev["action"] == "patch":
            return f"{pre}patch {ev['file']} byte {ev['position']}: {ev['old_hex']} -> {ev['new_hex']} ({ev['reason']})"
        return f"{pre}{ev['action']} {ev['file']}: {ev['reason']}"
    if t == "repair_done":
        return f"repaired {ev['partition_dir']}: {ev['actions']} actions; removed bytes and manifest in {ev['quarantine']}"
    if t == "kafka_recovery":
        return f"KAFKA RECOVERY {ev['partition_dir']}: {ev['summary']}"
    if t == "repair_resumed":
        return f"resumed an interrupted repair of {ev['partition_dir']} ({ev['quarantine']})"
    if t == "summary":
        return (
            f"{ev['partitions']} partitions, {ev['segments']} segments: {ev['errors']} errors, "
            f"{ev['warnings']} warnings, {ev['infos']} info; {ev['repaired']} repaired; exit {ev['exit_code']}"
        )
    return None


def _offsets(first, last) -> str:
    return f"{first}.." if last is None else f"{first}-{last}"


def salvage_line(ev: dict) -> str | None:
    """A partition's salvage: what Kafka keeps, what salvage keeps, what is lost for good, then
    one indented line per range left out and per edit (the plan's actions as verify's)."""
    if ev["type"] == "summary":
        return (
            f"{ev['partitions']} partitions: {ev['salvaged']} salvaged; lost at most "
            f"{ev['lost_records_at_most']} records ({ev['lost_bytes']} bytes); exit {ev['exit_code']}"
        )
    if ev["type"] != "salvage":
        return verify_line(ev)
    k, s, lost = ev["kafka_keeps"], ev["salvage_keeps"], ev["lost"]
    where = ev["to"] or ev["partition_dir"]
    kafka = (
        f"Kafka keeps {k['records']} records ({k['bytes']} bytes)"
        if k["starts"]
        else "Kafka would not start on it"
    )
    ranges = ", ".join(_offsets(a, b) for a, b in lost["offsets"])
    line = (
        f"{ev['status']} {where}: {kafka}; salvage keeps {s['records']} records "
        f"({s['bytes']} bytes); lost at most {lost['records_at_most']} records"
        f"{' and more to the log end' if lost['to_log_end'] else ''} ({lost['bytes']} bytes)"
        + (f" at offsets {ranges}" if ranges else "")
    )
    for x in ev["skipped"]:
        off = (
            ""
            if x["first_offset"] is None
            else f" offsets {_offsets(x['first_offset'], x['last_offset'])}"
        )
        amb = " AMBIGUOUS" if x["ambiguous"] else ""
        line += f"\n  skipped {x['file']} bytes {x['start']}-{x['end']}{off}: {x['kind']}: {x['reason']}{amb}"
    for k in ev.get("kept_from", [])[1:]:
        line += (
            f"\n  kept from {k['file']} ({k['origin']}): offsets {k['first_offset']}-"
            f"{k['last_offset']}, {k['records']} records ({k['bytes']} bytes) as {k['put_back_as']}"
        )
    for x in ev.get("overlaps", []):
        line += (
            f"\n  overlap {x['file']} bytes {x['start']}-{x['end']} offsets "
            f"{x['first_offset']}-{x['last_offset']}: already kept, left out"
        )
    for e in ev["edits"]:
        line += f"\n  edited {e['file']} byte {e['position']}: {e['old_hex']} -> {e['new_hex']} ({e['reason']})"
    if ev["quarantine"]:
        line += f"\n  removed bytes and manifest in {ev['quarantine']} (kseg restore undoes it)"
    return line


def spark_verify_line(ev: dict) -> str | None:
    """Spark's summary counts partitions and findings (segments are counted on the executors)."""
    if ev["type"] == "summary":
        return (
            f"{ev['partitions']} partitions: {ev['errors']} errors, {ev['warnings']} warnings, "
            f"{ev['infos']} info; exit {ev['exit_code']}"
        )
    return verify_line(ev)


def index_rebuild_line(ev: dict) -> str:
    if ev["type"] == "summary":
        verb = "would change" if ev["dry_run"] else "changed"
        return f"{ev['segments']} segments, {ev['files_changed']} index files {verb}"
    parts = [
        f"{Path(f['file']).suffix} {f['action']} ({f['entries']} entries)" for f in ev["files"]
    ]
    text = f"{ev['file']}: valid {ev['valid_bytes']}/{ev['size']} bytes; " + "; ".join(parts)
    if ev["error"]:
        e = ev["error"]
        text += f"\n  ERROR {e['kind']} at byte {e['position']}: {e['message']} (indexes cover the bytes before it)"
    return text


def index_check_line(ev: dict) -> str:
    if ev["type"] == "summary":  # a count per status, in order of gravity
        return ", ".join(f"{v} {k}" for k, v in ev.items() if k not in ("type", "exit_code"))
    parts = []
    for suffix, key in (
        (".index", "offset_index"),
        (".timeindex", "time_index"),
        (".txnindex", "txn_index"),
    ):
        s = ev.get(key)
        if s is None or (key == "txn_index" and not s["entries"] and not s["rebuilt_entries"]):
            continue  # no .txnindex, and none expected: nothing to say
        status = s["status"]
        if s.get("rule"):  # written by another Kafka release's rule
            status += f" (Kafka {s['rule']} rule)"
        text = f"{suffix} {status} ({s['entries']} entries, rebuilt {s['rebuilt_entries']})"
        if s["first_difference"] and s["status"] != "identical":
            d = s["first_difference"]
            text += (
                f" first difference at entry {d['entry']} (byte {d['position']}): {d['message']}"
            )
        parts.append(text)
    out = f"{ev['file']}: {ev['status']}: " + "; ".join(parts)
    if ev["log_error"]:
        e = ev["log_error"]
        out += f"\n  ERROR {e['kind']} at byte {e['position']}: {e['message']}"
    return out


def restore_line(ev: dict) -> str:
    if ev["type"] == "summary":  # ``about``: the directory the restore was given
        return (
            f"restored {ev['restored']} actions in {ev['partitions']} partitions "
            f"from {getattr(ev, 'about', '')}"
        )
    return f"undid {ev['action']} of {ev['file']}"


def seek_line(ev: dict) -> str:
    # a directory not named <topic>-<partition> has no topic: name the directory (``about``)
    name = f"{ev['topic']}-{ev['partition']}" if ev["topic"] is not None else str(ev.about)
    if "log_dir" in ev:
        name += f" [{ev['log_dir']}]"
    if ev["type"] == "seek_offset":
        if ev["status"] in ("found", "in_gap"):
            gap = (
                ""
                if ev["status"] == "found"
                else f"not present (compacted); next offset {ev['offset']} "
            )
            return f"{name}: offset {ev['target_offset']} {gap}in {ev['segment']} at byte {ev['position']} (batch {ev['batch_base_offset']}..{ev['batch_last_offset']})"
        if ev["status"] == "inside_entry":  # Kafka 0.7: byte offsets
            return (
                f"{name}: offset {ev['target_offset']} is not an entry boundary: it lies inside "
                f"the entry at offset {ev['offset']} (next entry at {ev['batch_last_offset'] + 1}) "
                f"in {ev['segment']} at byte {ev['position']}"
            )
        if ev["status"] == "corrupt":
            return f"{name}: could not answer: {ev['error']}"
        return f"{name}: offset {ev['target_offset']} is {ev['status'].replace('_', ' ')} (log start {ev['log_start_offset']}, log end {ev['log_end_offset']})"
    if ev["error"]:
        return f"{name}: could not answer: {ev['error']}"
    if ev.get("time_basis") == "segment_mtime":  # Kafka 0.7: its rule, by file mtimes
        target = with_iso(ev["target"])
        if ev["offset"] is None:
            return f"{name}: no offset: no segment file modified at or before {target} (0.7 rule: segment mtimes)"
        where = f"start of {ev['segment']}" if ev["segment"] else "log end"
        return f"{name}: offset {ev['offset']} ({where}; 0.7 rule: newest segment modified at or before {target}, by file mtime)"
    if ev["offset"] is None:
        target = with_iso(ev["target"]) if ev["target"] >= 0 else ev["target"]
        return f"{name}: no offset: no record at or after {target}"
    where = f" in {ev['segment']} at byte {ev['position']}" if ev["segment"] else ""
    ts = f" timestamp {with_iso(ev['timestamp'])}" if ev["timestamp"] is not None else ""
    ep = f" leader epoch {ev['leader_epoch']}" if ev["leader_epoch"] is not None else ""
    return f"{name}: offset {ev['offset']}{ts}{ep}{where}"


def offsets_line(ev: dict) -> str | None:
    if ev["type"] == "group":
        state = ev["state"] or "state not derived"
        proto = f" protocol {ev['protocol']}" if ev["protocol"] else ""
        gone = " (deleted)" if ev["deleted"] else ""
        last = with_iso(ev["last_commit_timestamp"]) if ev["last_commit_timestamp"] else "none"
        return (
            f"group {_q(ev['group'])}{gone}: {ev['group_type']} {state}{proto}, "
            f"{ev['members']} members, {ev['offsets']} offsets, last commit {last}, "
            f"in {ev['coordinator_partition']}"
        )
    if ev["type"] in ("offset", "share_offset"):
        flags = " TRANSACTIONAL" if ev.get("transactional") else ""
        if ev.get("expired"):
            flags += f" EXPIRED ({ev['expired_reason']})"
        lag = ""
        if "lag" in ev:
            lag = (
                f" log end {ev['log_end_offset']} lag {ev['lag']}"
                if ev["lag"] is not None
                else " lag unknown (partition not under the roots)"
            )
        meta = f" metadata {_q(ev['metadata'])}" if ev.get("metadata") else ""
        if ev["type"] == "share_offset":  # a share group's share-partition start offset
            return (
                f"{ev['topic'] or '?'}-{ev['partition']} (topic id {ev['topic_id']}): "
                f"share-partition start offset {ev['start_offset']} state epoch "
                f"{ev['state_epoch']} leader epoch {ev['leader_epoch']} written "
                f"{with_iso(ev['write_timestamp'])} ({ev['file']} batch "
                f"{ev['batch_base_offset']} offset {ev['record_offset']})"
            )
        return (
            f"{ev['topic']}-{ev['partition']}: offset {ev['offset']} leader epoch "
            f"{ev['leader_epoch']}{meta} committed {with_iso(ev['commit_timestamp'])}{lag}{flags} "
            f"({ev['file']} batch {ev['batch_base_offset']} offset {ev['record_offset']})"
        )
    return None


def _span(ms: int) -> str:
    """A length of time as ``2h10m``, ``3d4h``, ``15m``, ``45s`` (two units at most)."""
    if ms < 0:
        return f"-{_span(-ms)}"
    s, parts = ms // 1000, []
    for name, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        q, s = divmod(s, size)
        if q or parts:
            parts.append(f"{q}{name}")
        if len(parts) == 2:
            break
    if len(parts) == 2 and parts[1][0] == "0":
        parts.pop()
    return "".join(parts) or f"{ms}ms"


def _txn_where(ev: dict) -> str:
    where = f"{ev['topic']}-{ev['partition']}" if ev["topic"] is not None else str(ev.about)
    return where + (f" [{ev['log_dir']}]" if "log_dir" in ev else "")


def txn_line(ev: dict) -> str | None:
    """`kseg txn`: a partition's last stable offset and counts, then one line per open
    transaction (its verdict, and a hanging one's abort command), producers with --producers."""
    t = ev["type"]
    if t == "partition":
        counts = (
            f"{ev['open']} open, {ev['hanging']} hanging; {ev['committed']} committed, "
            f"{ev['aborted']} aborted, {ev['empty']} empty"
        )
        if ev["held_by"] is None:
            return (
                f"{_txn_where(ev)}: not held: last stable offset = log end offset "
                f"{ev['log_end_offset']} ({counts})"
            )
        since = f" since {with_iso(ev['held_since'])}" if ev["held_since"] is not None else ""
        return (
            f"{_txn_where(ev)}: read_committed consumers held at offset "
            f"{ev['last_stable_offset']}{since} by producer {ev['held_by']} (log end offset "
            f"{ev['log_end_offset']}; {counts})"
        )
    if t == "open_transaction":
        since = f" at {with_iso(ev['first_timestamp'])}" if ev["first_timestamp"] >= 0 else ""
        age = f"open {_span(ev['age_ms'])}, " if ev["age_ms"] is not None else ""
        coord = (
            f"transactional id {_q(ev['transactional_id'])} {ev['coordinator_state']}"
            if ev["transactional_id"] is not None
            else "no transactional id found"
        )
        head = (
            f"{_txn_where(ev)}: producer {ev['producer_id']} epoch {ev['producer_epoch']} open "
            f"since offset {ev['first_offset']}{since} ({age}{ev['records']} records, "
            f"{ev['bytes']} bytes, idle {_span(ev['idle_ms'])}; {coord})"
        )
        if ev["status"] == "hanging":
            return f"{head}; HANGING ({ev['why']}): {ev['abort_command']}"
        if ev["status"] == "unjudged":
            return f"{head}; not judged ({ev['why']})"
        return f"{head}; open ({ev['why']})"
    if t == "producer":
        start = ev["current_txn_start_offset"]
        return (
            f"{_txn_where(ev)}: producer {ev['producer_id']} epoch {ev['producer_epoch']} "
            f"last sequence {ev['last_sequence']} last timestamp "
            f"{with_iso(ev['last_timestamp'])} coordinator epoch {ev['coordinator_epoch']} "
            f"transaction start offset {start if start >= 0 else 'none'}"
        )
    if t == "summary":
        return (
            f"total: {ev['partitions']} partitions, {ev['open']} open transactions, "
            f"{ev['hanging']} hanging, {ev['unjudged']} not judged (judged at "
            f"{with_iso(ev['judged_at'])}, {ev['judged_by']}; max transaction timeout "
            f"{_span(ev['max_transaction_timeout_ms'])})"
        )
    return None


def _records(n: int) -> str:
    return f"{n} record{'s' if n != 1 else ''}"


def _lost_total(records: int, bytes_: int) -> str:
    return f"{_records(records)} ({bytes_} bytes) lost" if records else "nothing lost"


def replicas_line(ev: dict) -> str | None:
    """`kseg replicas`: per partition its verdict, the first divergence and the leader kept (by
    which rule), then one line per replica (leader first): its status, log start and end, its
    leader epochs (``epoch@start_offset``) and its last batch's, and what Kafka truncates it to
    when it rejoins and the records that takes (``nothing truncated``: it keeps its whole log); an export line per
    replica with --export-lost; a total."""
    t = ev["type"]
    if t == "partition":
        where = f"{ev['topic']}-{ev['partition']}"
        div = ev["first_divergence"]
        at = f", first divergence at offset {div}" if div is not None else ""
        lost = _lost_total(ev["lost_records"], ev["lost_bytes"])
        return (
            f"{where}: {ev['replicas']} replicas, {ev['status']}{at}; leader {ev['leader']} "
            f"({ev['leader_rule']}: {ev['leader_reason']}); {lost}"
        )
    if t == "replica":
        where = f"{ev['topic']}-{ev['partition']} [{ev['log_dir']}]"
        node = f" (node {ev['node_id']})" if ev["node_id"] is not None else ""
        d = ev["divergence"]
        div = ""
        if d is not None:
            mine = "no batch" if d["epoch"] is None else f"epoch {d['epoch']}"
            theirs = "none" if d["leader_epoch"] is None else d["leader_epoch"]
            sides = [mine, f"leader's {theirs}"]
            div = f" at offset {d['offset']} ({', '.join(sides)})"
        hw = f" hw {ev['high_watermark']}" if ev["high_watermark"] is not None else ""
        line = (
            f"{where}: {ev['status'].replace('_', ' ')}{node}{div}: start "
            f"{ev['log_start_offset']} end {ev['log_end_offset']}{hw}, epochs "
            f"{epochs_text(ev['epochs']) or 'none'}"
        )
        if ev.get("last_batch_epoch") is not None:
            line += f", last batch epoch {ev['last_batch_epoch']}"
        if ev.get("cleaned_to"):  # below it each replica's cleaner rewrote its own batches
            line += f", cleaned to {ev['cleaned_to']}"
        n, to = ev["lost_records"], ev["truncate_to"]
        if to is not None and not ev["truncate_fully"] and to >= ev["log_end_offset"] and not n:
            line += "; nothing truncated"
        elif to is not None:
            verb = "truncates fully, starts at" if ev["truncate_fully"] else "truncates to"
            line += f"; {verb} {to}: "
            if not n:
                line += "nothing lost"
            else:
                b = ev["lost_batches"]
                line += (
                    f"loses {_records(n)} ({b} batch{'es' if b != 1 else ''}, "
                    f"{ev['lost_bytes']} bytes)"
                )
            if n and ev["lost_first_timestamp"] is not None:
                line += (
                    f", {with_iso(ev['lost_first_timestamp'])} .. "
                    f"{with_iso(ev['lost_last_timestamp'])}"
                )
        if ev["damage"] is not None:
            line += f"; damage: {ev['damage']}"
        return line
    if t == "export":
        files = ", ".join(f for f in (ev["jsonl"], ev["parquet"]) if f is not None)
        return (
            f"{ev['topic']}-{ev['partition']} [{ev['log_dir']}]: exported "
            f"{_records(ev['records'])} to {ev['dir']}" + (f" ({files})" if files else "")
        )
    if t == "summary":
        lost = _lost_total(ev["lost_records"], ev["lost_bytes"])
        return (
            f"total: {ev['partitions']} partitions, {ev['consistent']} consistent, "
            f"{ev['diverged']} diverged, {ev['damaged']} damaged; {lost}"
        )
    return None


def stats_line(ev: dict) -> str:
    return " ".join(f"{k}={field_text(k, v)}" for k, v in ev.items() if k != "type")


_STATS_LABEL = {
    "partition_stats": "partition",
    "hour_stats": "hour",
    "topic_stats": "topic",
    "root_stats": "log_dir",
}


def local_stats_line(ev: dict) -> str:
    """`kseg stats`: the row's scope, then key=value pairs (shares and ratios to 4 places)."""
    parts = [_STATS_LABEL.get(ev["type"], ev["type"])]
    for k, v in ev.items():
        if k == "type" or v is None:  # not counted (uncompressed without --uncompressed), none
            continue
        if type(v) is float:
            text = f"{v:.4f}"
        elif k == "codec_shares":
            text = ",".join(f"{c}:{s:.4f}" for c, s in v.items())
        elif k == "codecs":
            text = ",".join(v)
        else:
            text = field_text(k, v)
        parts.append(f"{k}={text}")
    return " ".join(parts)


def schema_finding_line(ev: dict, *, with_file: bool = False) -> str:
    """``| offset: 3 value (schema id 99) does not decode: unknown schema id 99`` (under its
    file's `Dumping` line; ``with_file``: naming the file); a problem of the schemas themselves
    names where it is."""
    if ev["field"] is None:
        where = f" at offset {ev['offset']}" if ev["offset"] is not None else ""
        return f"schemas: {safe_path(ev['file'])}{where}: {one_line(ev['message'])}"
    sid = f" (schema id {ev['schema_id']})" if ev["schema_id"] is not None else ""
    head = (
        f"{safe_path(ev['file'])} offset {ev['offset']}:"
        if with_file
        else f"| offset: {ev['offset']}"
    )
    return f"{head} {ev['field']}{sid} does not decode: {one_line(ev['message'])}"


def error_line(ev: dict, *, with_file: bool = True) -> str:
    """A dump problem: ``ERROR <kind> <file> at byte <n> [field]: message``; the file is left
    out only under the file's own `Dumping` line (README "Conventions": every problem names the
    file and the byte position)."""
    where = f" at byte {ev['position']}" if ev.get("position") is not None else ""
    if with_file and ev.get("file"):
        where = f" {safe_path(ev['file'])}{where}"
    field = f" [{ev['field']}]" if ev.get("field") else ""
    extra = ""
    if ev.get("stored") is not None:  # computed is None when nothing recomputes it (a magic)
        computed = f", computed {ev['computed']}" if ev.get("computed") is not None else ""
        extra = f" (stored {ev['stored']}{computed})"
    return f"ERROR {ev['kind']}{where}{field}: {ev['message']}{extra}"


def skipped_line(ev: dict, *, with_file: bool = True) -> str:
    """dump --resync's skipped range: ``SKIPPED <file>: bytes a..b (n bytes, offsets x..y):
    <kind>: <reason>``; the file left out only under its own `Dumping` line."""
    from kseg.dump.error_events import skipped_message

    text = skipped_message(ev)
    if with_file and ev.get("file"):
        return f"SKIPPED {safe_path(ev['file'])}: {text}"
    return f"SKIPPED {text}"


def count_line(ev: dict) -> str:
    """dump --count: ``orders-0: 12 matches`` per partition (its file when given alone, its
    log dir when several roots are), then ``total: 15 matches in 3 partitions``."""
    t = ev["type"]
    if t == "match_count":
        if ev.get("topic") is not None:
            where = f"{ev['topic']}-{ev['partition']}"
        else:
            where = safe_path(ev["file"])
        if ev.get("file") and ev.get("topic") is not None:
            where += f" ({safe_path(ev['file'])})"
        if ev.get("log_dir"):
            where += f" [{safe_path(ev['log_dir'])}]"
        return f"{where}: {ev['matches']} match{'es' if ev['matches'] != 1 else ''}"
    if t == "match_total":
        n, p = ev["matches"], ev["partitions"]
        return f"total: {n} match{'es' if n != 1 else ''} in {p} partition{'s' if p != 1 else ''}"
    if t == "error":  # no `Dumping` line in --count: the problem names its file itself
        return error_line(ev)
    if t == "skipped":
        return skipped_line(ev)
    return text_line(ev)


def schemas_line(ev: dict) -> str | None:
    t = ev["type"]
    if t == "schema":
        refs = ""
        if ev["references"]:
            refs = " references " + ", ".join(
                f"{_q(r['name'])}={_q(r['subject'])} v{r['version']}" for r in ev["references"]
            )
        at = f" (offset {ev['offset']})" if ev["offset"] is not None else ""
        return (
            f"{_q(ev['subject'])} v{ev['version']}: id {ev['id']} {ev['schema_type']} "
            f"{ev['state']}{refs}{at}"
        )
    if t == "schema_problem":
        at = f" at offset {ev['offset']}" if ev["offset"] is not None else ""
        return f"problem{at}: {one_line(ev['message'])}"
    if t == "summary":
        notes = "".join(f"; {n}" for n in ev["notes"])
        return (
            f"{ev['subjects']} subjects, {ev['versions']} versions, {ev['ids']} ids "
            f"({ev['deleted']} deleted, {ev['hard_deleted']} hard-deleted) from "
            f"{ev['schemas']}, {ev['records']} records; {ev['problems']} problems{notes}"
        )
    return None


# the text line of each command's events (dump streams chunks: see write_text_chunks)
LINES: dict[str, Callable[[dict], str | None]] = {
    "verify": verify_line,
    "salvage": salvage_line,
    "index rebuild": index_rebuild_line,
    "index check": index_check_line,
    "restore": restore_line,
    "seek": seek_line,
    "offsets": offsets_line,
    "txn": txn_line,
    "replicas": replicas_line,
    "schemas": schemas_line,
    "spark verify": spark_verify_line,
    "spark stats": stats_line,
    "stats": local_stats_line,
    "dump --count": count_line,
}


def write_command_text(command: str, events: Iterable[dict], out: BinaryIO) -> Iterator[dict]:
    return write_text(events, out, LINES[command])
