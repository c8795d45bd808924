"""`--format table`: aligned columns for a terminal of 80-200 columns, streamed.

dump: one table per file, every event a row of the same columns (a batch and its records do not
split into tables of their own), rendered in chunks of rows as plain fixed-width text: ~1000x
cheaper than a rich Table per chunk. Other commands (verify, index, seek): one table per event
type, printed when the run ends (their events number segments, not records).

Widths come from the terminal (``COLUMNS`` when set); file names are never cut (they head the
tables or get the room they need); only long payloads are, with "…". Colour when stdout is a
terminal, never with ``NO_COLOR``, always with ``FORCE_COLOR``. Control characters in paths are
quoted so that a row stays one line.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator
from typing import BinaryIO

import orjson

from kseg.format.header_columns import HeaderColumn
from kseg.format.timestamps import iso_ms
from kseg.render.fields import TIME_FIELDS, bool_text, epochs_text, one_line, safe_path

CHUNK = 256  # rows formatted and written together
_ELLIPSIS = "…"


def colour_enabled(out: BinaryIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return os.isatty(out.fileno())
    except (AttributeError, OSError, ValueError):
        return False


def terminal_width() -> int:
    """COLUMNS, the terminal's width, or 200 when output goes to a file or pipe; at least 80."""
    return max(80, shutil.get_terminal_size((200, 24)).columns)


class _Style:
    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.on and text else text


_LEVEL_COLOUR = {
    "ERROR": "1;31",
    "SKIPPED": "1;31",
    "error": "1;31",
    "corrupt": "1;31",
    "wrong": "1;31",
    "warning": "33",
    "missing": "33",
    "info": "36",
    "ok": "32",
    "identical": "32",
    "equivalent": "32",
    "found": "32",
    "diverged": "1;31",  # kseg replicas
    "damaged": "1;31",
    "consistent": "32",
    "in_sync": "32",
}


def _trunc(text: str, width: int) -> str:
    if width <= 0:
        return ""
    return text if len(text) <= width else text[: max(0, width - 1)] + _ELLIPSIS


def _n(v: object) -> str:
    return "" if v is None else str(v)


def _short(value: object, encoding: str | None) -> str:
    if value is None:
        return "null"
    if encoding in (None, "utf8", "json"):
        return orjson.dumps(value).decode()
    if encoding in ("base64", "hex", "redacted"):  # safe characters only
        return f"{encoding}:{value}"
    # a value decoded by its schema (--payload schema): as JSON, quoted (no byte from the disk
    # reaches the terminal as a control character)
    return f"{encoding}:{orjson.dumps(value).decode()}"


# --- dump ---------------------------------------------------------------------------------

DUMP_HEAD = ("kind", "offset", "position", "timestamp", "time (UTC)", "size", "detail")


def _upto(runs: Iterator[tuple[str, int]], most: int) -> str:
    """``",".join`` of the pieces (each ``n`` times in a row), stopped once longer than ``most``
    characters (a row's detail is cut to the table's width: what lies beyond never shows)."""
    out: list[str] = []
    total = 0
    for p, n in runs:
        k = min(n, most // (len(p) + 1) + 1)
        out += [p] * k
        total += k * (len(p) + 1)
        if total > most:
            break
    return ",".join(out)


def _dump_row(ev: dict, most: int = 1 << 62) -> tuple[str, str, str, int | None, str, str]:
    """(kind, offset, position, timestamp ms, size, detail) of one dump event; a record's
    header list stops past ``most`` characters (the detail is cut to fewer)."""
    t = ev["type"]
    if t == "record":
        detail = []
        if "key" in ev:
            detail.append("key=" + _short(ev["key"], ev["key_encoding"]))
            detail.append("value=" + _short(ev["value"], ev["value_encoding"]))
            headers = ev["headers"]
            if type(headers) is HeaderColumn:  # many headers: never all of them in one string
                detail.append(
                    "headers="
                    + _upto(((f"{k}:{_short(v, e)}", n) for k, v, e, n in headers.triples()), most)
                )
            elif headers:
                detail.append(
                    "headers="
                    + ",".join(
                        f"{k}:{_short(v, e)}"
                        for (k, v), e in zip(ev["headers"], ev["header_encodings"], strict=True)
                    )
                )
        elif type(ev.get("header_keys")) is HeaderColumn:
            detail.append("header_keys=" + _upto(ev["header_keys"].runs(), most))
        elif ev.get("header_keys"):
            detail.append("header_keys=" + ",".join(ev["header_keys"]))
        if "decoded" in ev:
            detail.insert(0, "decoded=" + orjson.dumps(ev["decoded"]).decode())
        size = f"{ev['key_size']}/{ev['value_size']}"
        return "record", str(ev["offset"]), "", ev["timestamp"], size, " ".join(detail)
    if t == "batch":
        base = "?" if ev["base_offset"] is None else ev["base_offset"]
        parts = [
            f"count {_n(ev['count'])}",
            f"v{ev['magic']}",
            ev["compression"],
            "crc ok" if ev["crc_valid"] else "CRC BAD",
        ]
        if ev["producer_id"] >= 0:
            parts.append(
                f"producer {ev['producer_id']}/{ev['producer_epoch']} "
                f"seq {ev['base_sequence']}..{ev['last_sequence']}"
            )
        if ev["is_transactional"]:
            parts.append("transactional")
        if ev["is_control"]:
            parts.append("control")
        if ev["partition_leader_epoch"] >= 0:
            parts.append(f"leader_epoch {ev['partition_leader_epoch']}")
        if ev["timestamp_type"] == "LogAppendTime":
            parts.append("LogAppendTime")
        if ev["delete_horizon_ms"] is not None:
            parts.append(f"delete_horizon {ev['delete_horizon_ms']}")
        return (
            "batch",
            f"{base}..{ev['last_offset']}",
            str(ev["position"]),
            ev["max_timestamp"],
            str(ev["size"]),
            " ".join(parts),
        )
    if t == "entry":  # Kafka 0.7: offsets are byte offsets
        parts = [f"v{ev['magic']}", ev["compression"], "crc ok" if ev["crc_valid"] else "CRC BAD"]
        if "count" in ev:
            parts.insert(0, f"count {ev['count']}")
        return (
            "entry",
            str(ev["offset"]),
            str(ev["position"]),
            None,
            str(ev["size"]),
            " ".join(parts),
        )
    if t == "message":
        detail = f"consumer_offset {ev['consumer_offset']}"
        if "payload" in ev:
            detail += " payload=" + _short(ev["payload"], ev["payload_encoding"])
        return "message", str(ev["offset"]), "", None, str(ev["payload_size"]), detail
    if t == "control":
        detail = f"{ev['control_type']} coordinator_epoch {_n(ev['coordinator_epoch'])}"
        return "control", str(ev["offset"]), "", ev["timestamp"], "", detail
    if t == "error":
        extra = ""
        if ev.get("stored") is not None:  # computed is None when nothing recomputes it (a magic)
            computed = f", computed {ev['computed']}" if ev.get("computed") is not None else ""
            extra = f" (stored {ev['stored']}{computed})"
        return (
            "ERROR",
            _n(ev.get("offset")),
            _n(ev.get("position")),
            None,
            "",
            f"{ev['kind']}: {ev['message']}{extra}",
        )
    if t == "skipped":  # dump --resync: a range it could not read
        from kseg.dump.error_events import skipped_message

        lost = (
            "" if ev["first_offset"] is None else f"{ev['first_offset']}..{_n(ev['last_offset'])}"
        )
        return "SKIPPED", lost, str(ev["start"]), None, str(ev["bytes"]), skipped_message(ev)
    if t == "index_entry":
        return "index", str(ev["offset"]), str(ev["position"]), None, "", ""
    if t == "timeindex_entry":
        return "timeindex", str(ev["offset"]), "", ev["timestamp"], "", ""
    if t == "index_padding":
        return "padding", "", "", None, str(ev["padded_bytes"]), f"after {ev['entries']} entries"
    if t == "txn_index_entry":
        return (
            "aborted",
            f"{ev['first_offset']}..{ev['last_offset']}",
            "",
            None,
            "",
            f"producer {ev['producer_id']} last_stable_offset {ev['last_stable_offset']}",
        )
    if t == "producer_state":
        rest = " ".join(
            f"{k} {v}"
            for k, v in ev.items()
            if k not in ("type", "file", "last_offset", "timestamp")
        )
        return "producer", str(ev["last_offset"]), "", ev["timestamp"], "", rest
    if t == "checkpoint_entry":
        return "checkpoint", str(ev["offset"]), "", None, "", f"{ev['topic']}-{ev['partition']}"
    if t == "leader_epoch":
        return (
            "epoch",
            str(ev["start_offset"]),
            "",
            None,
            "",
            f"leader epoch {ev['epoch']} from here",
        )
    offset = ev.get("offset", ev.get("start_offset"))
    rest = " ".join(
        f"{k} {orjson.dumps(v).decode() if isinstance(v, (str, list, dict, bool)) else v}"
        for k, v in ev.items()
        if k not in ("type", "file", "offset", "start_offset")
    )
    return _SHORT_KIND.get(t, t), _n(offset), "", None, "", rest


_SHORT_KIND = {
    "partition_metadata": "metadata",
    "meta_properties": "properties",
    "checkpoint_entry": "checkpoint",
    "leader_epoch": "epoch",
    "clean_shutdown": "shutdown",
}


def _decoded_row(ev: dict) -> tuple[str, dict] | None:
    """A decoded internal-topic record as (record kind, {offset, its fields}): metadata and KRaft
    control records give the fields of ``data``, coordinator records their flat fields. None for
    anything else (and for a record that did not decode)."""
    d = ev.get("decoded")
    if d is None or ev["type"] not in ("record", "control") or "error" in d:
        return None
    # the record's own offset first, as record_offset: a committed offset is a field "offset"
    if isinstance(d, dict) and "data" in d and "record" in d:
        return d["record"], {"record_offset": ev["offset"], **d["data"]}
    fields = {k: v for k, v in d.items() if k != "record"}
    return d["record"], {"record_offset": ev["offset"], **fields}


class _DumpTable:
    def __init__(self, out: BinaryIO, width: int, style: _Style) -> None:
        self.out, self.width, self.style = out, width, style
        self.epoch_ms = width >= 120  # both the number and the date when there is room
        self.widths = [len(h) for h in DUMP_HEAD[:6]]  # grown to fit the rows
        self.rows: list[tuple] = []
        self.kinds: dict[str, list[dict]] = {}  # decoded records by record kind, this chunk
        self.pending = 0
        self.head_due = False

    def file(self, ev: dict) -> None:
        self.flush()
        state = f" ({ev['state']})" if ev.get("state") else ""
        self.out.write((self.style(f"{safe_path(ev['file'])}{state}", "1") + "\n").encode())
        self.head_due = True

    def add(self, ev: dict) -> None:
        decoded = _decoded_row(ev) if "decoded" in ev else None
        if decoded is not None:  # a table per record kind, a column per field
            self.kinds.setdefault(decoded[0], []).append(decoded[1])
            self.pending += 1
            if self.pending >= CHUNK:
                self.flush()
            return
        kind, offset, position, ts, size, detail = _dump_row(ev, self.width + 1)
        if ts is None:
            ms = iso = ""
        else:
            ms = str(ts)
            iso = iso_ms(ts) or ms  # a number no date holds is shown as it is
        self.rows.append((kind, offset, position, ms, iso, size, detail))
        self.pending += 1
        if self.pending >= CHUNK:
            self.flush()

    def flush(self) -> None:
        self._flush_rows()
        kinds, self.kinds = self.kinds, {}
        self.pending = 0
        for kind, rows in kinds.items():
            cols = tuple(dict.fromkeys(k for r in rows for k in r))  # a tombstone has fewer
            title = f"{kind} ({len(rows)} record{'s' if len(rows) > 1 else ''})"
            text = _render(title, cols, rows, self.width, self.style, cell_max=60)
            self.out.write(text.encode("utf-8", "replace"))

    def _flush_rows(self) -> None:
        rows, self.rows = self.rows, []
        if not rows:
            return
        widths = self.widths
        for r in rows:  # columns only grow: rows stay aligned across chunks
            for i in range(6):
                if len(r[i]) > widths[i]:
                    widths[i] = len(r[i])
        cols = [0, 1, 2, 3, 4, 5] if self.epoch_ms else [0, 1, 2, 4, 5]
        used = sum(widths[i] + 2 for i in cols)
        room = max(10, self.width - used)
        right = {1, 2, 3, 5}
        style = self.style
        lines = []
        if self.head_due:
            head = "  ".join(DUMP_HEAD[i].ljust(widths[i]) for i in cols) + "  detail"
            lines.append(style(head.rstrip(), "1"))
            self.head_due = False
        for r in rows:
            cells = [r[i].rjust(widths[i]) if i in right else r[i].ljust(widths[i]) for i in cols]
            if r[0] in _LEVEL_COLOUR:
                cells[0] = style(cells[0], _LEVEL_COLOUR[r[0]])
            lines.append(("  ".join(cells) + "  " + _trunc(r[6], room)).rstrip())
        self.out.write(("\n".join(lines) + "\n").encode("utf-8", "replace"))


def write_dump_table(
    chunks: Iterable[list], out: BinaryIO, width: int | None = None
) -> Iterator[list]:
    """dump events (in chunks) as one table per file; yields the chunks back."""
    table = _DumpTable(out, width or terminal_width(), _Style(colour_enabled(out)))
    for chunk in chunks:
        for ev in chunk:
            if ev["type"] == "file":
                table.file(ev)
            else:
                table.add(ev)
        yield chunk  # rows are written CHUNK at a time and at each file
    table.flush()


# --- verify, index, seek, ... -------------------------------------------------------------

# kseg stats: the numbers a person reads first (json and csv carry every field)
_STATS_COLUMNS = (
    "topic",
    "partition",
    "log_dir",
    "records",
    "batches",
    "bytes",
    "compression_ratio",
    "codecs",
    "first_offset",
    "last_offset",
    "min_base_timestamp",
    "max_timestamp",
    "producers",
    "transactional_share",
    "segments",
    "errors",
)
TABLE_COLUMNS = {
    "group": (
        "group",
        "group_type",
        "state",
        "protocol",
        "members",
        "offsets",
        "last_commit_timestamp",
        "deleted",
        "coordinator_partition",
    ),  # fmt: skip
    "offset": (
        "topic",
        "partition",
        "offset",
        "leader_epoch",
        "metadata",
        "commit_timestamp",
        "log_end_offset",
        "lag",
        "transactional",
        "expired",
        "file",
        "record_offset",
    ),  # fmt: skip
    "finding": ("severity", "kind", "file", "position", "offset", "message"),
    "segment": ("status", "file", "size", "valid_bytes"),
    "index_check": ("status", "file", "offset_index", "time_index", "txn_index", "log_error"),
    "index_rebuild": ("file", "valid_bytes", "size", "files", "error"),
    "seek": (
        "topic",
        "partition",
        "target",
        "offset",
        "timestamp",
        "leader_epoch",
        "segment",
        "position",
        "error",
    ),
    "match_count": ("topic", "partition", "matches", "file", "log_dir"),
    "stats": (
        "topic",
        "partition",
        "hour",
        "records",
        "batches",
        "bytes",
        "compression_ratio",
        "codecs",
        "first_offset",
        "last_offset",
        "min_base_timestamp",
        "max_timestamp",
        "producers",
        "transactional_share",
    ),
    "partition_stats": _STATS_COLUMNS,
    "hour_stats": ("topic", "partition", "log_dir", "hour") + _STATS_COLUMNS[3:],
    "topic_stats": ("topic", "log_dir", "partitions") + _STATS_COLUMNS[3:],
    "root_stats": ("log_dir", "partitions") + _STATS_COLUMNS[3:],
    # kseg txn
    "partition": ("topic", "partition", "log_dir", "log_start_offset", "log_end_offset",
                  "last_stable_offset", "held_since", "held_by", "open", "hanging", "unjudged",
                  "committed", "aborted", "empty"),
    "open_transaction": ("topic", "partition", "log_dir", "producer_id", "producer_epoch",
                         "first_offset", "first_timestamp", "last_timestamp", "records", "bytes",
                         "transactional_id", "coordinator_state", "status", "hanging_rule",
                         "abort_command"),
    "producer": ("topic", "partition", "log_dir", "producer_id", "producer_epoch",
                 "last_sequence", "last_timestamp", "coordinator_epoch",
                 "current_txn_start_offset"),
}  # fmt: skip
# kseg replicas: its event types' columns (its "partition" is not txn's)
REPLICAS_COLUMNS = {
    "partition": ("topic", "partition", "replicas", "status", "first_divergence", "leader",
                  "leader_rule", "leader_reason", "lost_records", "lost_bytes"),
    "replica": ("topic", "partition", "log_dir", "node_id", "status", "log_start_offset",
                "log_end_offset", "high_watermark", "cleaned_to", "epochs", "last_batch_epoch",
                "divergence", "truncate_to", "lost_records", "lost_bytes",
                "lost_first_timestamp", "lost_last_timestamp", "damage"),
    "export": ("topic", "partition", "log_dir", "records", "dir", "jsonl", "parquet"),
}  # fmt: skip
_FLEXIBLE = (
    "message",
    "error",
    "log_error",
    "files",
    "offset_index",
    "time_index",
    "txn_index",
    "actions",
    "summary",
    "reason",
    "abort_command",
    "leader_reason",
    "damage",
)


def _cell(key: str, v: object) -> str:
    if v is None:
        return ""
    if type(v) is bool:  # the word text output uses (isTransactional: true), not Python's True
        return bool_text(v)
    if key in TIME_FIELDS and type(v) is int and v >= 0:
        iso = iso_ms(v)
        return f"{v} {iso}" if iso else str(v)
    if key in ("file", "segment"):
        return safe_path(str(v))
    if key == "epochs":  # kseg replicas' leader-epoch history: 0@0 2@100
        return epochs_text(v)
    if key == "divergence":  # kseg replicas: the offset (the epochs are in their column)
        return str(v["offset"])
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, dict):
        return " ".join(f"{k}={_cell(k, x)}" for k, x in v.items() if x is not None)
    if isinstance(v, list):
        return ", ".join(_cell(key, x) for x in v)
    if type(v) is str:  # text from the disk (a subject, a message): one line, no control byte
        return one_line(v)
    return str(v)


def write_tables(
    events: Iterable[dict], out: BinaryIO, width: int | None = None, columns: dict | None = None
) -> Iterator[dict]:
    """One table per event type (in order of first appearance), printed at the end; a summary
    becomes one line. Yields the events as they come (exit codes are decided meanwhile).
    ``columns``: a command's own columns per event type (default ``TABLE_COLUMNS``)."""
    columns = TABLE_COLUMNS if columns is None else columns
    width = width or terminal_width()
    style = _Style(colour_enabled(out))
    by_type: dict[str, list[dict]] = {}
    summaries = []
    for ev in events:
        if ev["type"] == "summary":
            summaries.append(ev)
        else:
            by_type.setdefault(ev["type"], []).append(ev)
        yield ev
    parts = []
    for t, rows in by_type.items():
        cols = columns.get(t) or tuple(k for k in rows[0] if k != "type")
        cols = tuple(c for c in cols if any(r.get(c) is not None for r in rows)) or cols[:1]
        parts.append(_render(t, cols, rows, width, style))
    for s in summaries:
        text = "summary: " + ", ".join(f"{k} {_cell(k, v)}" for k, v in s.items() if k != "type")
        lines = _wrap(text, width)
        lines[0] = style("summary", "1") + lines[0][len("summary") :]
        parts.append("\n".join(lines) + "\n")
    out.write("".join(parts).encode("utf-8", "replace"))


def _render(
    title: str, cols: tuple, rows: list[dict], width: int, style: _Style, cell_max: int = 0
) -> str:
    cells = [[_cell(c, r.get(c)) for c in cols] for r in rows]
    if cell_max:
        cells = [[_trunc(x, cell_max) for x in row] for row in cells]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    flex = [i for i, c in enumerate(cols) if c in _FLEXIBLE]
    total = sum(w + 2 for w in widths)
    stacked: list[int] = []
    if total > width and flex:  # wrap the free-text columns, never cut a file name
        fixed = sum(widths[i] + 2 for i in range(len(cols)) if i not in flex)
        share = (width - fixed) // len(flex) - 2
        if share < 24:  # no room beside the fixed columns: free text goes on lines below
            stacked, flex = flex, []
        for i in flex:
            widths[i] = min(widths[i], share)
    shown = [i for i in range(len(cols)) if i not in stacked]
    lines = [style(title, "1;4")]
    lines.append(style("  ".join(cols[i].ljust(widths[i]) for i in shown).rstrip(), "1"))
    numeric = {
        i
        for i, c in enumerate(cols)
        if all(x == "" or x.lstrip("-").isdigit() for x in (row[i] for row in cells))
    }
    for row in cells:
        wrapped = {i: _wrap(row[i], widths[i]) if i in flex else [row[i]] for i in shown}
        height = max(len(w) for w in wrapped.values())
        for k in range(height):
            out = []
            for i in shown:
                text = wrapped[i][k] if k < len(wrapped[i]) else ""
                text = text.rjust(widths[i]) if i in numeric else text.ljust(widths[i])
                if k == 0 and row[i] in _LEVEL_COLOUR:
                    text = style(text, _LEVEL_COLOUR[row[i]])
                out.append(text)
            lines.append("  ".join(out).rstrip())
        for i in stacked:
            if row[i]:
                lines.extend("    " + part for part in _wrap(row[i], width - 4))
    return "\n".join(lines) + "\n\n"


def _wrap(text: str, width: int) -> list[str]:
    if len(text) <= width:
        return [text]
    lines, line = [], ""
    for word in text.split(" "):
        while len(word) > width:  # a word longer than the column: hard break
            if line:
                lines.append(line)
                line = ""
            lines.append(word[:width])
            word = word[width:]
        if not line:
            line = word
        elif len(line) + 1 + len(word) <= width:
            line += " " + word
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    return lines
