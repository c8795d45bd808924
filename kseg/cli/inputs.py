"""What several commands make of their options before the library runs: the inputs resolved,
--kafka-version parsed. Library modules are imported when a command runs (start-up time)."""

from __future__ import annotations

from pathlib import Path

from kseg.outcome import BadOption


def selection(paths: list[Path], topic: str | None, partition: int | None):
    """Resolve the inputs up front (kseg.storage.tree): a wrong path fails before any work."""
    from kseg.storage.tree import resolve

    return resolve(paths, topic, partition, logs_only=True)


def parsed_kafka_version(text: str | None):
    """--kafka-version as the library's KafkaVersion (a bad value: a usage error, exit 16)."""
    from kseg.format.kafka_version import parse_kafka_version

    try:
        return parse_kafka_version(text)
    except ValueError as exc:
        raise BadOption(str(exc), "--kafka-version") from None
