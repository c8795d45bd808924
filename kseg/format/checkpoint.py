"""The small text files of a data directory: offset checkpoints, leader epochs, metadata.

Parsers raise :class:`CorruptionError` with the byte position of the offending line.
"""

from __future__ import annotations

import base64
from typing import NamedTuple

from kseg.format.errors import INVALID_FILE, CorruptionError

CHECKPOINT_VERSION = 0


class TopicPartitionOffset(NamedTuple):
    topic: str
    partition: int
    offset: int


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


def _lines(data: bytes) -> list[tuple[int, str]]:
    """(byte position, text) for each line."""
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptionError("not UTF-8 text", kind=INVALID_FILE, position=exc.start) from None
    out, pos = [], 0
    for line in text.splitlines(keepends=True):
        out.append((pos, line.rstrip("\r\n")))
        pos += len(line.encode("utf-8"))
    return out


_INT64 = (-(1 << 63), (1 << 63) - 1)


def _int(text: str, pos: int, what: str) -> int:
    """A decimal integer that Kafka could have written: it parses these as Java longs (ints for
    partitions and epochs fit too), so anything outside 64 bits is a lie, not a number to show."""
    try:
        value = int(text)
    except ValueError:
        raise CorruptionError(
            f"{what} {text!r} is not an integer", kind=INVALID_FILE, position=pos
        ) from None
    if not _INT64[0] <= value <= _INT64[1]:
        raise CorruptionError(
            f"{what} {text} is outside the 64-bit range", kind=INVALID_FILE, position=pos
        )
    return value


def _checkpoint_body(data: bytes, fields: int) -> list[tuple[int, list[str]]]:
    """The entry lines, as Kafka's CheckpointFile.CheckpointReadBuffer.read reads them: an empty
    file, or one ending after its version line, is an empty list (brokers leave such files)."""
    lines = _lines(data)
    if not lines:
        return []
    version = _int(lines[0][1].strip(), lines[0][0], "version")
    if version != CHECKPOINT_VERSION:
        raise CorruptionError(
            f"unknown checkpoint version {version}", kind=INVALID_FILE, position=0
        )
    if len(lines) == 1:
        return []
    count = _int(lines[1][1].strip(), lines[1][0], "entry count")
    body = [(p, t.split()) for p, t in lines[2:] if t.strip()]
    if count != len(body):
        raise CorruptionError(
            f"checkpoint declares {count} entries but holds {len(body)}",
            kind=INVALID_FILE,
            position=lines[1][0],
        )
    for pos, parts in body:
        if len(parts) != fields:
            raise CorruptionError(
                f"expected {fields} fields, found {len(parts)}: {' '.join(parts)!r}",
                kind=INVALID_FILE,
                position=pos,
            )
    return body


def read_offset_checkpoint(data: bytes) -> list[TopicPartitionOffset]:
    """recovery-point / log-start / replication / cleaner offset checkpoint files."""
    return [
        TopicPartitionOffset(t, _int(p, pos, "partition"), _int(o, pos, "offset"))
        for pos, (t, p, o) in _checkpoint_body(data, 3)
    ]


def encode_offset_checkpoint(entries: list[TopicPartitionOffset]) -> bytes:
    lines = [str(CHECKPOINT_VERSION), str(len(entries))]
    lines += [f"{e.topic} {e.partition} {e.offset}" for e in entries]
    return ("\n".join(lines) + "\n").encode()


def read_leader_epoch_checkpoint(data: bytes) -> list[EpochEntry]:
    return [
        EpochEntry(_int(e, pos, "epoch"), _int(o, pos, "start offset"))
        for pos, (e, o) in _checkpoint_body(data, 2)
    ]


def encode_leader_epoch_checkpoint(entries: list[EpochEntry]) -> bytes:
    lines = [str(CHECKPOINT_VERSION), str(len(entries))] + [
        f"{e.epoch} {e.start_offset}" for e in entries
    ]
    return ("\n".join(lines) + "\n").encode()


def read_properties(data: bytes) -> dict[str, str]:
    """Java .properties as Kafka writes them (meta.properties, partition.metadata uses ': ')."""
    props: dict[str, str] = {}
    for _pos, line in _lines(data):
        s = line.strip()
        if not s or s[0] in "#!":
            continue
        for i, ch in enumerate(s):
            if ch in "=:":
                props[s[:i].strip()] = s[i + 1 :].strip()
                break
        else:
            props[s] = ""
    return props


def read_partition_metadata(data: bytes) -> dict[str, str | int]:
    props = read_properties(data)
    if "version" not in props or "topic_id" not in props:
        raise CorruptionError(
            "partition.metadata needs 'version' and 'topic_id'", kind=INVALID_FILE, position=0
        )
    out: dict[str, str | int] = {
        "version": _int(props["version"], 0, "version"),
        "topic_id": props["topic_id"],
    }
    try:
        raw = base64.urlsafe_b64decode(props["topic_id"] + "==")
    except ValueError:
        raw = b""
    if len(raw) == 16:
        h = raw.hex()
        out["topic_uuid"] = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    return out


def encode_partition_metadata(topic_id: bytes) -> bytes:
    tid = base64.urlsafe_b64encode(topic_id).rstrip(b"=").decode()
    return f"version: 0\ntopic_id: {tid}\n".encode()


def encode_properties(props: dict[str, str]) -> bytes:
    return "".join(f"{k}={v}\n" for k, v in props.items()).encode()


def read_clean_shutdown(data: bytes) -> dict:
    """`.kafka_cleanshutdown`: JSON (Kafka 3.5+) or empty (older brokers)."""
    if not bytes(data).strip():
        return {}
    import json  # only this rare file is JSON: not at every command's start-up

    try:
        value = json.loads(bytes(data))
    except ValueError as exc:
        raise CorruptionError(f"invalid JSON: {exc}", kind=INVALID_FILE, position=0) from None
    if not isinstance(value, dict):
        raise CorruptionError("expected a JSON object", kind=INVALID_FILE, position=0)
    return value
