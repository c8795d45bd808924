"""Time expressions: epoch milliseconds, ISO-8601, or relative (-30m, -2h, -1d)."""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone

_REL = re.compile(r"^([+-])(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


def parse_time(text: str, now_ms: int | None = None) -> int:
    """Epoch milliseconds for ``text``. Naive ISO times are local time, as people type them."""
    s = text.strip()
    if re.fullmatch(r"-?\d+", s):
        return int(s)
    m = _REL.match(s)
    if m:
        now = int(time.time() * 1000) if now_ms is None else now_ms
        delta = int(float(m.group(2)) * _UNIT_MS[m.group(3)])
        return now - delta if m.group(1) == "-" else now + delta
    iso = s[:-1] + "+00:00" if s.endswith(("Z", "z")) else s
    try:
        dt = datetime.fromisoformat(iso)
    except ValueError:
        raise ValueError(
            f"cannot read {text!r} as a time: use epoch ms, ISO-8601 (2026-11-21T09:30:00Z) or -30m/-2h/-1d"
        ) from None
    if dt.tzinfo is None:
        dt = dt.astimezone()  # local time
    return int(dt.astimezone(timezone.utc).timestamp() * 1000)
