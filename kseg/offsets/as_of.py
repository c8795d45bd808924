"""The as-of-time filter: which records of `__consumer_offsets` (and `__share_group_state`)
count for an answer "as of T".

A record counts when its log timestamp is <= T (the coordinator writes its records
with the time it appends them; magic 0 records have no timestamp: an OffsetCommit's
commitTimestamp stands in, any other record takes the time of the record before it).
"""

from __future__ import annotations


def counts_at(ts: int, at: int | None) -> bool:
    """Does a record (or an end-transaction marker) written at ``ts`` count as of ``at``?
    (None: no --at, every record counts.)"""
    return at is None or ts <= at


def record_time(timestamp: int | None, decoded: dict, last_time: int) -> int:
    """The time the filter judges a decoded `__consumer_offsets` record by: its log timestamp;
    a magic 0 record has none (None or negative), so an OffsetCommit's commit_timestamp stands
    in and any other record (a tombstone too) takes ``last_time``, the record before it's."""
    if timestamp is None or timestamp < 0:
        return decoded.get("commit_timestamp", last_time) if not decoded.get("tombstone") else (
            last_time)  # fmt: skip
    return timestamp
