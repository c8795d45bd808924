"""The record value object shared by every message format (what you append, what you read)."""

from __future__ import annotations

from kseg.format.value_class import Value

Header = tuple[str, "bytes | None"]

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
NO_TIMESTAMP_TYPE = "NoTimestampType"
NO_TIMESTAMP = -1


class Record(Value):
    """One record (or legacy message).

    For appending, ``offset`` and ``timestamp`` may be left ``None``: the writer assigns the next
    offset and the current time. When read back, every field is set; ``sequence`` is the producer
    sequence (``baseSequence + offsetDelta``, -1 when the batch's base sequence is negative) and ``timestamp_type`` is the batch's.
    """

    key: bytes | None
    value: bytes | None
    timestamp: int | None
    headers: list[Header]
    offset: int | None
    sequence: int
    timestamp_type: str

    __slots__ = ("key", "value", "timestamp", "headers", "offset", "sequence", "timestamp_type")

    def __init__(
        self,
        key: bytes | None = None,
        value: bytes | None = None,
        timestamp: int | None = None,
        headers: list[Header] | None = None,
        offset: int | None = None,
        sequence: int = -1,
        timestamp_type: str = CREATE_TIME,
    ) -> None:
        self.key = key
        self.value = value
        self.timestamp = timestamp
        self.headers = [] if headers is None else headers
        self.offset = offset
        self.sequence = sequence
        self.timestamp_type = timestamp_type
