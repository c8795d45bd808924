"""A reset file `kseg offsets -f reset-csv` writes, fed to the real Kafka 4.1.0
`kafka-consumer-groups.sh --reset-offsets --from-file` (session broker): accepted, and the plan it
shows is the file's offsets. Skips where ../shared/kafka or ../shared/real is absent."""

from __future__ import annotations

import pytest

from tests.helpers import run_kseg

pytestmark = pytest.mark.slow

GROUP = "dev-g-classic"  # the real 4.1.0 copy's classic group: dev-gzip-0 at 700, dev-none-0 at 850


def _fill(broker, topic: str, records: int) -> None:
    """``topic`` (one partition) holding at least ``records`` records, so that the tool keeps
    the file's offsets (it clamps one past the log end to the log end)."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    broker.create_topic(topic, if_not_exists=True)  # another test may have made it
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    try:
        tp = TopicPartition(topic, 0)
        missing = records - consumer.end_offsets([tp])[tp]
    finally:
        consumer.close()
    if missing > 0:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
        try:
            for i in range(missing):
                producer.send(topic, value=b"%d" % i, partition=0)
            producer.flush(timeout=60)
        finally:
            producer.close()


def test_kafka_consumer_groups_takes_the_reset_file(kafka_broker, real_root, tmp_path):
    data = real_root / "kafka-4.1.0-dev" / "data"
    p = run_kseg("offsets", data, "--group", GROUP, "-f", "reset-csv")  # default: end of data
    assert p.returncode == 0, p.stderr
    plan = {}
    for line in p.stdout.decode().splitlines():
        topic, part, offset = line.split(",")
        plan[(topic, int(part))] = int(offset)
    assert plan == {("dev-gzip", 0): 700, ("dev-none", 0): 850}
    for (topic, _part), offset in plan.items():
        _fill(kafka_broker, topic, offset + 10)
    reset = tmp_path / "reset.csv"
    reset.write_bytes(p.stdout)
    tool = kafka_broker.tool(
        "kafka-consumer-groups.sh", "--bootstrap-server", kafka_broker.bootstrap, "--group",
        GROUP, "--reset-offsets", "--from-file", str(reset), "--dry-run",
    )  # fmt: skip
    assert tool.returncode == 0, tool.stderr
    shown = {}
    for line in tool.stdout.splitlines():
        cols = line.split()
        if len(cols) == 4 and cols[0] == GROUP:
            shown[(cols[1], int(cols[2]))] = int(cols[3])
    assert shown == plan, tool.stdout + tool.stderr
