"""A real Kafka 4.1.0 broker holds the data: `_schemas` records produced as the registry
writes them, and values framed by Confluent's serializers produced by Confluent's client
(librdkafka, snappy batches) to a topic; the broker's own data dir, read by kseg, gives back
every value the producer serialized. Skips where ../shared/kafka is absent."""

from __future__ import annotations

import orjson
import pytest

pytest.importorskip("confluent_kafka.schema_registry")

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroSerializer  # noqa: E402
from confluent_kafka.schema_registry.json_schema import JSONSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

from kseg.format import schema_registry as SR  # noqa: E402
from tests.broker import Broker  # noqa: E402
from tests.helpers import events, run_kseg  # noqa: E402

pytestmark = pytest.mark.slow

USER = {"type": "record", "name": "User", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": ["null", "int"]}]}  # fmt: skip
USERS = [{"name": f"user-{i}", "age": i if i % 3 else None} for i in range(50)]
EVENTS = [{"kind": "click", "n": i} for i in range(20)]


@pytest.fixture(scope="module")
def broker_dir(kafka_home, tmp_path_factory):
    client = SchemaRegistryClient.new_client({"url": "mock://broker-test"})
    avro = AvroSerializer(client, orjson.dumps(USER).decode())
    jser = JSONSerializer('{"type":"object"}', client)
    users = [avro(u, SerializationContext("users", MessageField.VALUE)) for u in USERS]
    evs = [jser(e, SerializationContext("events", MessageField.VALUE)) for e in EVENTS]
    broker = Broker(kafka_home, tmp_path_factory.mktemp("broker-schemas"))
    with broker:
        for topic in ("_schemas", "users", "events"):
            broker.create_topic(topic)
        p = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": "snappy",
                      "linger.ms": 5})  # fmt: skip
        for subject in client.get_subjects():
            for version in client.get_versions(subject):
                reg = client.get_version(subject, version)
                p.produce("_schemas", key=SR.schema_key(subject, version),
                          value=SR.schema_value(subject, version, reg.schema_id,
                                                reg.schema.schema_str,
                                                schema_type=reg.schema.schema_type or "AVRO"))  # fmt: skip
        p.produce("_schemas", key=SR.noop_key(), value=b"")
        for i, v in enumerate(users):
            p.produce("users", key=f"u{i}".encode(), value=v)
        for v in evs:
            p.produce("events", value=v)
        assert p.flush(30) == 0
    return broker.data


def test_the_brokers_data_dir_gives_back_every_value(broker_dir):
    proc = run_kseg("dump", broker_dir, "--topic", "^(users|events)$", "--payload", "schema",
                    "-f", "json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    evs = events(proc.stdout)
    got = {"users": [], "events": []}
    for e in evs:
        if e["type"] == "record":
            got[e["topic"]].append(e["value"])
    assert got == {"users": USERS, "events": EVENTS}
    assert evs[-1]["findings"] == 0
    listed = events(run_kseg("schemas", broker_dir, "-f", "json").stdout)
    assert sorted(e["subject"] for e in listed if e["type"] == "schema") == [
        "events-value", "users-value"]  # fmt: skip
