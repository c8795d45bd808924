"""Time expressions, as operators already type them for kafka-consumer-groups:

- epoch milliseconds (``1700000000000``);
- ``now``;
- ISO-8601 date-times in every ``--to-datetime`` form (``2026-11-21T09:30:00.000``, with an
  optional zone ``Z``, ``+09``, ``+0900`` or ``+09:00``; Kafka's ``Utils.getDateTime`` reads a
  time without a zone as UTC, and so does kseg), and the shorter forms people type
  (``2026-11-21T09:30``, ``2026-11-21 09:30:00Z``, ``2026-11-21``);
- ``--by-duration`` ISO-8601 durations (``PT30M``, ``P1DT2H``, ``PT0.5S``; Java's
  ``Duration.parse`` grammar): that long BEFORE now, as kafka-consumer-groups resets;
- relative times (``-30m``, ``-2h``, ``-1d``, ``+90s``, ``-1w``).
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta, timezone

_REL = re.compile(r"^([+-])(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_ISO = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})"
    r"(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?"
    r"(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?$"
)
# java.time.Duration.parse: [sign]P[nD][T[nH][nM][n[.f]S]], each number signed, case-insensitive
_DURATION = re.compile(
    r"^([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?$",
    re.IGNORECASE,
)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_HELP = (
    "use epoch ms, now, ISO-8601 (2026-11-21T09:30:00.000, optional zone Z/+09:00; none means "
    "UTC), a duration before now (PT30M, P1DT2H) or -30m/-2h/-1d"
)


def parse_time(text: str, now_ms: int | None = None) -> int:
    """Epoch milliseconds for ``text`` (see the module doc). ``now_ms``: what ``now``, durations
    and relative times count from (default: the clock)."""
    s = text.strip()
    if re.fullmatch(r"-?\d+", s):
        return int(s)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    if s.lower() == "now":
        return now
    m = _REL.match(s)
    if m:
        delta = int(float(m.group(2)) * _UNIT_MS[m.group(3)])
        return now - delta if m.group(1) == "-" else now + delta
    duration = parse_duration(s)
    if duration is not None:
        return now - duration  # kafka-consumer-groups --by-duration: that long before now
    ms = parse_datetime(s)
    if ms is None:
        raise ValueError(f"cannot read {text!r} as a time: {_HELP}")
    return ms


def parse_duration(text: str) -> int | None:
    """Milliseconds of an ISO-8601 duration as java.time.Duration.parse reads it, or None."""
    m = _DURATION.match(text.strip())
    if not m or not any(m.group(i) is not None for i in (2, 3, 4, 5)):
        return None
    if re.search(r"T$", text.strip(), re.IGNORECASE):
        return None  # "PT" / "P1DT": a T needs a time part after it
    sign, days, hours, minutes, secs, frac = m.groups()
    ms = int(days or 0) * 86_400_000 + int(hours or 0) * 3_600_000 + int(minutes or 0) * 60_000
    if secs is not None:
        sec_ms = abs(int(secs)) * 1000 + int((frac or "0")[:3].ljust(3, "0"))
        ms += -sec_ms if secs.startswith("-") else sec_ms
    return -ms if sign == "-" else ms


def parse_datetime(text: str) -> int | None:
    """Epoch ms of an ISO-8601 date-time (no zone: UTC, as Kafka's Utils.getDateTime), or None."""
    m = _ISO.match(text.strip())
    if not m:
        return None
    year, month, day, hour, minute, second, frac, zulu, zsign, zh, zm = m.groups()
    try:
        dt = datetime(
            int(year),
            int(month),
            int(day),
            int(hour or 0),
            int(minute or 0),
            int(second or 0),
            tzinfo=timezone.utc,
        )
        offset = 0
        if zsign:
            if int(zh) > 23 or int(zm or 0) > 59:
                return None
            offset = (int(zh) * 60 + int(zm or 0)) * 60_000
            offset = offset if zsign == "+" else -offset
    except ValueError:
        return None  # month 13, February 30, ...
    ms = (dt - _EPOCH) // timedelta(milliseconds=1) + int((frac or "0")[:3].ljust(3, "0"))
    return ms - offset


def parse_option_time(value: str | None, option: str, now_ms: int | None = None) -> int | None:
    """A time option (--from-time, --now, ...) in epoch ms (``now_ms``: what ``now``, durations
    and relative times count from; None: the clock); a bad one is a BadOption. The CLI parses
    each time option once, with this, and hands the library epoch ms."""
    if value is None:
        return None
    from kseg.outcome import BadOption

    try:
        return parse_time(value, now_ms)
    except ValueError as exc:
        raise BadOption(str(exc), option) from None


_SPAN = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)?$")


def parse_span(text: str) -> int:
    """A length of time in milliseconds: ``7d``, ``24h``, ``90m``, ``30s``, ``500ms``, ``1w``,
    an ISO-8601 duration (``P7D``, ``PT12H``), or a bare number of milliseconds. Raises
    ValueError for anything else or a negative length."""
    s = text.strip().lower()
    m = _SPAN.match(s)
    if m:
        return int(float(m.group(1)) * _UNIT_MS[m.group(2) or "ms"])
    ms = parse_duration(s)
    if ms is None or ms < 0:
        raise ValueError(f"cannot read {text!r} as a length of time: use 7d, 24h, 90m, P7D or ms")
    return ms


def parse_option_span(value: str, option: str) -> int:
    """A length-of-time option (--retention) in milliseconds (``parse_span``); a bad one is a
    BadOption."""
    from kseg.outcome import BadOption

    try:
        return parse_span(value)
    except ValueError as exc:
        raise BadOption(str(exc), option) from None
