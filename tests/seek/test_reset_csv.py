"""reset-csv names internal topics only when --topic selects them explicitly
(kseg.seek.reset_csv, one rule for `seek -f reset-csv` and `offsets -f reset-csv`):
kafka-consumer-groups --reset-offsets --from-file fails the whole file on a topic it cannot find
(Kafka 4.1.0: `__cluster_metadata`, or `__transaction_state` on a cluster without
transactions). The files kseg writes are fed to the REAL kafka-consumer-groups (--dry-run) on a
Kafka 4.1.0 broker, which must take them as they are: its rows equal the file's."""

from __future__ import annotations

import shutil

import pytest

from kseg.fixtures.offsets import write_offsets_partition
from kseg.format.coordinator import consumer_offsets_record
from kseg.format.record import Record
from kseg.seek.reset_csv import explicitly_selected, is_internal
from kseg.storage.writer import LogWriter
from tests.helpers import run_kseg

INTERNAL = ("__consumer_offsets", "__transaction_state", "__share_group_state")
T0 = 1_700_000_000_000


def _rows(out: bytes) -> list[tuple[str, int, int]]:
    rows = []
    for line in out.decode().splitlines():
        topic, part, offset = line.split(",")
        rows.append((topic, int(part), int(offset)))
    return rows


def _seek_csv(root, *args) -> tuple[list, str]:
    proc = run_kseg("seek", root, "--time", "latest", "-f", "reset-csv", *args)
    assert proc.returncode == 0, proc.stderr
    return _rows(proc.stdout), proc.stderr.decode()


@pytest.fixture(scope="module")
def real_data(real_root):
    data = real_root / "kafka-4.1.0-dev" / "data"
    if not data.is_dir():
        pytest.skip("shared/real/kafka-4.1.0-dev is not beside the project")
    return data


@pytest.fixture(scope="module")
def tree_with_offsets(tree, tmp_path_factory):
    """The fixture tree and a `__consumer_offsets-0` (kseg's writer) beside its partitions."""
    root = tmp_path_factory.mktemp("reset") / "logs"
    shutil.copytree(tree, root)
    write_offsets_partition(root / "__consumer_offsets-0")
    return root


@pytest.mark.parametrize(
    ("topic", "name", "explicit"),
    [
        (None, "__consumer_offsets", False),
        ("^__consumer_offsets$", "__consumer_offsets", True),
        ("__transaction", "__transaction_state", True),
        (".*", "__share_group_state", True),
        ("offsets", "__consumer_offsets", False),  # found by search, not named from its start
        ("consumer_offsets", "__consumer_offsets", False),
        (".", "__cluster_metadata", False),  # KRaft's log: never a consumer group's topic
        ("^__cluster_metadata$", "__cluster_metadata", False),
    ],
)
def test_what_selects_an_internal_topic_explicitly(topic, name, explicit):
    assert is_internal(name) and not is_internal("orders") and not is_internal("_confluent")
    assert explicitly_selected(name, topic) is explicit


def test_seek_reset_csv_of_real_data_has_no_internal_topic_unless_selected(real_data):
    rows, err = _seek_csv(real_data)
    assert rows and not [r for r in rows if r[0].startswith("__")]
    for topic in (*INTERNAL, "__cluster_metadata"):
        assert f"kseg: {topic}: " in err and "left out of the reset file" in err
    plain = run_kseg("seek", real_data, "--time", "latest", "-f", "json")
    everything = {
        (e["topic"], e["partition"]) for e in map(__import__("json").loads, plain.stdout.split())
    }
    assert {(t, p) for t, p, _ in rows} == {tp for tp in everything if not tp[0].startswith("__")}

    chosen, err = _seek_csv(real_data, "--topic", "^__consumer_offsets$")
    assert {r[0] for r in chosen} == {"__consumer_offsets"} and len(chosen) == 3
    assert "left out" not in err
    searched, err = _seek_csv(real_data, "--topic", "offsets")
    assert searched == [] and "--topic '^__consumer_offsets$'" in err
    every, err = _seek_csv(real_data, "--topic", ".")
    assert {r[0] for r in every} >= set(INTERNAL) and "__cluster_metadata" not in {
        r[0] for r in every
    }
    assert "__cluster_metadata: 1 row left out" in err


def test_seek_reset_csv_of_the_fixture_tree(tree_with_offsets):
    rows, err = _seek_csv(tree_with_offsets)
    assert {r[0] for r in rows} == {
        "orders",
        "upgrade",
        "txn",
        "logappend",
        "compacted",
        "skewed",
    }
    assert "kseg: __consumer_offsets: 1 row left out of the reset file" in err
    chosen, _ = _seek_csv(tree_with_offsets, "--topic", "^(orders|__consumer_offsets)$")
    assert {r[0] for r in chosen} == {"orders", "__consumer_offsets"}


def test_offsets_reset_csv_leaves_out_internal_topics(tmp_path):
    """kseg offsets has no --topic: a group's commits on internal topics (a monitoring tool
    that consumes __consumer_offsets) are left out of its reset file, said on stderr."""
    root = tmp_path / "logs"
    fields = {"group": "mon", "leader_epoch": 0, "metadata": "", "commit_timestamp": T0,
              "expire_timestamp": -1}  # fmt: skip
    with LogWriter(root / "__consumer_offsets-0", clock=lambda: T0) as w:
        w.append(
            [
                Record(
                    *consumer_offsets_record(
                        1, {**fields, "topic": t, "partition": 0, "offset": o}
                    ),
                    T0,
                )  # fmt: skip
                for t, o in (("orders", 12), ("__consumer_offsets", 40), ("__transaction_state", 3))
            ]
        )
    now = ("--now", str(T0 + 60_000))
    proc = run_kseg("offsets", root, "--group", "mon", "-f", "reset-csv", *now)
    assert proc.returncode == 0, proc.stderr
    assert _rows(proc.stdout) == [("orders", 0, 12)]
    err = proc.stderr.decode()
    assert "kseg: __consumer_offsets: 1 row left out of the reset file: an internal topic" in err
    assert "kseg: __transaction_state: 1 row left out" in err
    assert "--topic" not in err  # offsets takes none
    full = run_kseg("offsets", root, "--group", "mon", "-f", "json", *now)
    assert sum(b'"type":"offset"' in line for line in full.stdout.splitlines()) == 3


# --- the real kafka-consumer-groups ---------------------------------------------------------

PREFIX = "kseg-reset-"  # the session broker is shared: topics of our own


def _renamed_copy(src, dest):
    """``src``'s partition dirs under ``dest``, user topics renamed ``PREFIX<topic>`` (the same
    bytes: the broker's topics are then ours alone), internal ones as they are."""
    dest.mkdir(parents=True)
    for d in src.iterdir():
        if d.is_dir() and "-" in d.name:
            name = d.name if d.name.startswith("__") else PREFIX + d.name
            shutil.copytree(d, dest / name)
        elif d.is_file():
            shutil.copy(d, dest / d.name)
    return dest


def _dry_run(broker, rows, path, group) -> list[tuple[str, int, int]]:
    """Create the topics the file names, give each partition as many records as its row's
    offset (kafka-consumer-groups clamps an offset past the log end), run the tool."""
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    parts: dict[str, int] = {}
    for t, p, _ in rows:
        parts[t] = max(parts.get(t, 0), p + 1)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)  # one call, not a JVM a topic
    try:
        admin.create_topics([NewTopic(t, n, 1) for t, n in parts.items()])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=20, acks=1)
    try:
        for t, p, offset in rows:
            for _ in range(offset):
                producer.send(t, b"x", partition=p)
        producer.flush(timeout=120)
    finally:
        producer.close()
    proc = broker.tool(
        "kafka-consumer-groups.sh", "--bootstrap-server", broker.bootstrap, "--group", group,
        "--reset-offsets", "--from-file", str(path), "--dry-run",
    )  # fmt: skip
    assert "Error" not in proc.stdout + proc.stderr and "Exception" not in proc.stderr, (
        proc.stdout + proc.stderr
    )
    out = []
    for line in proc.stdout.splitlines():
        cols = line.split()
        if len(cols) == 4 and cols[0] == group:
            out.append((cols[1], int(cols[2]), int(cols[3])))
    return out


@pytest.mark.slow
def test_kafka_consumer_groups_takes_the_reset_files(kafka_broker, real_root, tree, tmp_path):
    real = real_root / "kafka-4.1.0-dev" / "data"
    cases = []
    if real.is_dir():
        cases.append(("real", _renamed_copy(real, tmp_path / "real"), "latest"))
    fixture = _renamed_copy(tree, tmp_path / "fixture")
    write_offsets_partition(fixture / "__consumer_offsets-0")
    cases.append(("fixture", fixture, str(T0 + 40_000)))  # mid-log: offsets of all kinds
    for name, root, time in cases:
        proc = run_kseg("seek", root, "--time", time, "-f", "reset-csv")
        assert proc.returncode == 0, proc.stderr
        path = tmp_path / f"{name}.csv"
        path.write_bytes(proc.stdout)
        rows = _rows(proc.stdout)
        assert rows and all(t.startswith(PREFIX) for t, _, _ in rows)
        assert b"left out of the reset file" in proc.stderr
        got = _dry_run(kafka_broker, rows, path, f"kseg-reset-{name}")
        assert sorted(got) == sorted(rows), name
