"""Which committed offsets the coordinator would have expired, and when that is judged.

Kafka's rule (``cleanupExpiredOffsets``): an offset whose value carries an expireTimestamp (value
v1) expires at it; otherwise the group's OffsetExpirationCondition decides with
``offsets.retention.ms``: a classic group with a protocol type that is Empty counts from
when it became Empty (its currentStateTimestamp; the commit timestamp when the record has
none), a Stable classic "consumer" group, a group without protocol type ("simple"), a
consumer group and a streams group count from the commit timestamp; only topics the group
is not subscribed to expire, and never a partition with a pending transactional commit.
Such offsets are reported with ``expired`` (the coordinator writes their tombstones at its
next check, every ``offsets.retention.check.interval.ms``), never silently dropped.
"""

from __future__ import annotations

import time

from kseg.offsets.groups import Group
from kseg.offsets.placement import TOPIC

DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000  # offsets.retention.minutes = 10080 since Kafka 2.0


def expiry_time(at: int | None, now: int | None, data_end: int) -> tuple[int, str]:
    """When the coordinator's retention check is judged, and why then: at ``--at``; else at
    ``--now`` when given; else, offline, at the end of the data (``data_end``: the time of the
    last record in the `__consumer_offsets` partitions read: a copy is judged as of when it was
    taken, not against today's clock, so an old copy does not come out all expired); the clock
    only when no record carries a time (``data_end`` < 0)."""
    if at is not None:
        return at, "--at"
    if now is not None:
        return now, "--now"
    if data_end >= 0:
        return data_end, f"the end of the data (the last record in {TOPIC})"
    return int(time.time() * 1000), f"the clock (no record in {TOPIC} carries a time)"


def mark_expired(g: Group, at: int, retention_ms: int, pending: set[tuple[str, int]]) -> None:
    """Flag the offsets the coordinator's cleanupExpiredOffsets would remove at ``at``: each
    offset of ``g`` is replaced by a copy saying whether (and why) it expired."""
    base = None  # what the retention counts from: "commit" or a fixed timestamp
    if g.group_type == "classic":
        if g.protocol_type is None:
            base = "commit"  # a simple group
        elif g.state == "Empty":
            base = g.current_state_timestamp if g.current_state_timestamp is not None else "commit"
        elif g.protocol_type == "consumer" and g.state == "Stable":
            base = "commit" if g.subscribed_topics() is not None else None
    elif g.group_type in ("consumer", "streams"):
        base = "commit"
    subscribed = g.subscribed_topics() or set()
    for key, c in list(g.offsets.items()):
        g.offsets[key] = c._replace(expired=False, expired_reason=None)
        if key[0] in subscribed or key in pending:
            continue
        if c.expire_timestamp is not None:
            if at >= c.expire_timestamp:
                g.offsets[key] = c._replace(
                    expired=True,
                    expired_reason="expire_timestamp (OffsetCommit value v1) passed",
                )
            continue
        if base is None:
            continue
        since = c.commit_timestamp if base == "commit" else base
        if at - since >= retention_ms:
            g.offsets[key] = c._replace(
                expired=True,
                expired_reason=(
                    "retention passed since the commit"
                    if base == "commit"
                    else "retention passed since the group became Empty"
                ),
            )
