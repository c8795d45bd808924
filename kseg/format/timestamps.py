"""Epoch milliseconds for people: ISO-8601 UTC, and the range a date can show.

Kafka's timestamps are any int64, but a date (Python's datetime, Spark's TimestampType through
Python, ISO-8601 with four-digit years) only holds years 0001-9999. Outside that range kseg shows
the raw number and Spark gets null: never an exception.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

MIN_MS = -62_135_596_800_000  # 0001-01-01T00:00:00.000Z
MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def in_date_range(ms: int) -> bool:
    return MIN_MS <= ms <= MAX_MS


def iso_ms(ms: int | None) -> str | None:
    """``1700000000000`` -> ``2023-11-14T22:13:20.000Z``; None for None, for -1 (Kafka's "no
    timestamp") and for anything a date cannot hold. Cached by second: a dump formats one per
    record, and neighbours share their second."""
    if ms is None or ms == -1 or not MIN_MS <= ms <= MAX_MS:
        return None
    sec = ms // 1000
    prefix = _prefix.get(sec)
    if prefix is None:
        if len(_prefix) > 4096:
            _prefix.clear()
        dt = _EPOCH + timedelta(seconds=sec)
        prefix = _prefix[sec] = f"{dt.year:04d}-{dt:%m-%dT%H:%M:%S}."
    return f"{prefix}{ms - sec * 1000:03d}Z"


_prefix: dict[int, str] = {}


def with_iso(ms: int | None) -> str:
    """For text output: ``1700000000000 (2023-11-14T22:13:20.000Z)``, or just the number."""
    if ms is None:
        return "null"
    if MIN_MS <= ms <= MAX_MS and ms != -1:
        sec = ms // 1000
        prefix = _prefix.get(sec)
        if prefix is not None:
            return f"{ms} ({prefix}{ms - sec * 1000:03d}Z)"
        return f"{ms} ({iso_ms(ms)})"
    return str(ms)
