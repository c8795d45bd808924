"""kseg dump against a real Kafka 4.1.0 broker: the records a consumer receives from a broker
serving the fixture tree's partitions are exactly the data records `kseg dump` prints (offset,
timestamp, key, value, headers), for every format (magic 0, 1, 2), codec, transactions,
LogAppendTime, compacted gaps and out-of-order timestamps. Skips where ../shared/kafka is absent."""

from __future__ import annotations

import base64

import pytest

from kseg.fixtures.tree import PARTITIONS as TREE_PARTITIONS
from tests.broker import Broker
from tests.helpers import events, run_kseg

pytestmark = pytest.mark.slow

PARTITIONS = list(TREE_PARTITIONS)  # every partition of the fixture tree


def _dumped(pdir) -> list[tuple]:
    proc = run_kseg("dump", pdir, "-f", "json", "--payload", "base64")
    assert proc.returncode == 0, proc.stderr
    out = []
    for e in events(proc.stdout):
        if e["type"] != "record":  # control records ("control") never reach a consumer
            continue

        def raw(v):
            return None if v is None else base64.b64decode(v)

        headers = [(k, raw(v)) for k, v in e["headers"]]
        out.append((e["offset"], e["timestamp"], raw(e["key"]), raw(e["value"]), headers))
    return out


@pytest.fixture(scope="module")
def served(kafka_home, tree, tmp_path_factory):
    broker = Broker(kafka_home, tmp_path_factory.mktemp("serve"))
    broker.serve(
        {tuple((n.rsplit("-", 1)[0], int(n.rsplit("-", 1)[1]))): tree / n for n in PARTITIONS}
    )
    with broker:
        yield (
            broker,
            {n: broker.consume(n.rsplit("-", 1)[0], int(n.rsplit("-", 1)[1])) for n in PARTITIONS},
        )


@pytest.mark.parametrize("name", PARTITIONS)
def test_a_broker_serves_exactly_what_kseg_dump_prints(served, tree, name):
    _, consumed = served
    got = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in consumed[name]]
    assert got == _dumped(tree / name)
    assert got, "the partition served no record"


def test_the_broker_keeps_every_offset_kseg_reports(served, tree):
    """Kafka's recovery on load truncated nothing: every partition's log end offset
    (kafka-get-offsets --time latest) is the one `kseg seek --time latest` reports."""
    broker, _ = served
    ends = broker.all_end_offsets(sorted({n.rsplit("-", 1)[0] for n in PARTITIONS}))
    for name in PARTITIONS:
        topic, p = name.rsplit("-", 1)
        proc = run_kseg("seek", tree / name, "--time", "latest", "-f", "json")
        assert proc.returncode == 0, proc.stderr
        (ours,) = [e["offset"] for e in events(proc.stdout) if e["type"] == "seek"]
        assert ends[(topic, int(p))] == ours, name
