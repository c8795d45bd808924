"""Which topics a reset-csv file (`kafka-consumer-groups.sh --reset-offsets --from-file`) may
name: one rule for `kseg seek -f reset-csv` and `kseg offsets -f reset-csv`.

kafka-consumer-groups resolves every topic-partition of the file through the Admin client
before it resets anything, and one it cannot find fails the whole file (checked against Kafka
4.1.0: ``UnknownTopicOrPartitionException ... metadata for topic `__cluster_metadata` could not be
found``, nothing reset). A log.dirs root holds internal topics beside the users' ones, so:

- an internal topic is one whose name starts with ``__``: Kafka's ``Topic.isInternal`` set
  (``__consumer_offsets``, ``__transaction_state``, ``__share_group_state``) and the other
  topics Kafka keeps for itself (``__remote_log_metadata``, ...);
- it gets rows only when selected explicitly: ``--topic`` is given and matches its name from
  the first character (an anchored match: the regex accounts for the leading ``__``, e.g.
  ``^__consumer_offsets$``, ``__transaction``, ``.*``; ``offsets`` alone finds
  ``__consumer_offsets`` but does not select it for the file);
- ``__cluster_metadata`` never gets a row: KRaft's log is served to no consumer, no group has a
  position on it and kafka-consumer-groups never finds it;
- each topic left out is said once (a notice on stderr), never silently dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from kseg.format.regex import compile_text

INTERNAL_PREFIX = "__"
CLUSTER_METADATA = "__cluster_metadata"


def is_internal(topic: str) -> bool:
    return topic.startswith(INTERNAL_PREFIX)


def explicitly_selected(topic: str, topic_regex: str | None) -> bool:
    """Does ``--topic`` select this (internal) topic on purpose (see the module docstring)?"""
    if topic == CLUSTER_METADATA or not topic_regex:
        return False
    return compile_text(topic_regex).match_str(topic)


def for_reset_file(
    events: Iterable[dict], topic_regex: str | None, *, takes_topic: bool = True
) -> Iterator[dict]:
    """``events`` without the ``reset`` rows of internal topics not explicitly selected, and at
    the end one ``notice`` per topic left out. ``takes_topic``: the command has a --topic (else
    the notice does not offer it)."""
    left_out: dict[str, int] = {}
    for ev in events:
        if ev["type"] == "reset":
            topic = ev["topic"]
            if is_internal(topic) and not explicitly_selected(topic, topic_regex):
                left_out[topic] = left_out.get(topic, 0) + 1
                continue
        yield ev
    for topic, n in left_out.items():
        yield {"type": "notice", "message": _left_out_message(topic, n, takes_topic)}


def _left_out_message(topic: str, n: int, takes_topic: bool) -> str:
    rows = f"{n} row{'s' if n != 1 else ''}"
    if topic == CLUSTER_METADATA:
        why = "KRaft's metadata log, which no consumer group reads"
    elif takes_topic:
        why = f"an internal topic, named only when --topic selects it (--topic '^{topic}$')"
    else:
        why = "an internal topic (kafka-consumer-groups rejects the whole file where it is missing)"
    return f"{topic}: {rows} left out of the reset file: {why}"
