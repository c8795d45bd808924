"""The record value object shared by every message format (what you append, what you read)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

Header = tuple[str, "bytes | None"]

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
NO_TIMESTAMP_TYPE = "NoTimestampType"
NO_TIMESTAMP = -1


class Record(NamedTuple):
    """One record (or legacy message).

    For appending, ``offset`` and ``timestamp`` may be left ``None``: the writer assigns the next
    offset and the current time. When read back, every field is set; ``sequence`` is the producer
    sequence (``baseSequence + offsetDelta``, -1 when the batch's base sequence is negative) and ``timestamp_type`` is the batch's.
    """

    key: bytes | None = None
    value: bytes | None = None
    timestamp: int | None = None
    # read back: a list, or for more than 64 headers a kseg.format.headers.Headers (a read-only
    # sequence of the same pairs, decoded when iterated); given none: (), an immutable default
    # no two records can share changes of
    headers: Sequence[Header] = ()
    offset: int | None = None
    sequence: int = -1
    timestamp_type: str = CREATE_TIME
