"""kseg.offsets (run, placement, replay, expiry): the coordinator partition hash, and group offsets replayed from
real brokers' __consumer_offsets (expected answers computed independently: from kafka-dump-log's
own --offsets-decoder output, and from kafka-python's record reader with hand-read keys/values)
and from the fixture partition (kseg.fixtures.offsets)."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kseg.fixtures.offsets import (
    EXPECTED,
    EXPECTED_AT_150S,
    EXPIRING,
    GONE,
    GROUP,
    T0,
    write_offsets_partition,
)
from kseg.offsets.placement import coordinator_partition, java_string_hash, partition_count
from kseg.offsets.run import OffsetsRun
from kseg.outcome import Outcome
from kseg.storage.tree import InputError, resolve

# --- the partition hash -----------------------------------------------------------------------

# String.hashCode values as Java computes them (JDK docs' s[0]*31^(n-1) + ... ; well-known values)
JAVA_HASHES = {
    "": 0,
    "a": 97,
    "abc": 96354,
    "hello": 99162322,
    "Aa": 2112,
    "BB": 2112,
    "polygenelubricants": -(1 << 31),  # Integer.MIN_VALUE: Utils.abs gives 0
    "\U0001f600": 31 * 0xD83D + 0xDE00,  # a surrogate pair: two UTF-16 units
    "é": 233,
}


@pytest.mark.parametrize(("text", "expected"), JAVA_HASHES.items())
def test_java_string_hash_known_values(text, expected):
    assert java_string_hash(text) == expected


def test_integer_min_value_maps_to_partition_zero():
    # Kafka's Utils.abs(Integer.MIN_VALUE) == 0 (Math.abs would stay negative)
    assert coordinator_partition("polygenelubricants", 50) == 0
    assert coordinator_partition("polygenelubricants", 7) == 0


def _reference_hash(s: str) -> int:
    units = [
        int.from_bytes(s.encode("utf-16-be")[i : i + 2], "big")
        for i in range(0, 2 * len(s.encode("utf-16-be")) // 2, 2)
    ]
    n = len(units)
    total = sum(u * pow(31, n - 1 - i, 1 << 32) for i, u in enumerate(units)) % (1 << 32)
    return struct.unpack(">i", struct.pack(">I", total))[0]


@given(st.text(max_size=40), st.integers(min_value=1, max_value=1000))
def test_hash_matches_the_polynomial_and_partition_is_in_range(text, count):
    assert java_string_hash(text) == _reference_hash(text)
    p = coordinator_partition(text, count)
    assert 0 <= p < count


# --- real Kafka 4.1: expected from kafka-dump-log's own decoding --------------------------------

_LINE = re.compile(r"^\| offset: (\d+) CreateTime: (\d+) .* key: (\{.*\}) payload: (.*)$")


def _dump_log_records(real_root: Path):
    """(partition, offset, timestamp, key, value|None) from the .kafka-dump-log.txt files."""
    out = []
    data = real_root / "kafka-4.1.0-dev" / "data"
    for txt in sorted(data.glob("__consumer_offsets-*/*.log.kafka-dump-log.txt")):
        part = int(txt.parent.name.rsplit("-", 1)[1])
        batch_pid = None
        for line in txt.read_text().splitlines():
            if line.startswith("baseOffset:"):
                batch_pid = int(re.search(r"producerId: (-?\d+)", line).group(1))
                assert batch_pid == -1, "this corpus has no transactional offset commits"
                continue
            m = _LINE.match(line)
            if m:
                value = None if m.group(4) == "<DELETE>" else json.loads(m.group(4))
                out.append((part, int(m.group(1)), int(m.group(2)), json.loads(m.group(3)), value))
    return out


def _expected_offsets(records, group: str, at: int | None = None) -> dict:
    offsets = {}
    for _part, _off, ts, key, value in records:
        if key["type"] != "1" or key["data"]["group"] != group or (at is not None and ts > at):
            continue
        tp = (key["data"]["topic"], key["data"]["partition"])
        if value is None:
            offsets.pop(tp, None)
        else:
            offsets[tp] = value["data"]["offset"]
    return offsets


def _run(root: Path, group: str | None, **kw):
    run = OffsetsRun(resolve([root]), group=group, now=kw.pop("now", T0), **kw)
    events = list(run.events())
    return run, events


def _got(events) -> dict:
    return {(e["topic"], e["partition"]): e["offset"] for e in events if e["type"] == "offset"}


def test_real_41_groups_match_kafka_dump_log(real_root):
    records = _dump_log_records(real_root)
    root = real_root / "kafka-4.1.0-dev" / "data"
    groups = {k["data"].get("group") or k["data"].get("groupId") for _, _, _, k, _ in records}
    assert {"dev-g-classic", "dev-g-java", "dev-g-848", "dev-g-gone", "dev-sg"} <= groups
    for g in sorted(groups):
        run, events = _run(root, g)
        assert _got(events) == _expected_offsets(records, g), g
        assert run.outcome == Outcome.OK
        # the group's records are all in the partition the hash names (3 partitions)
        parts = {p for p, _, _, k, _ in records if g in k["data"].values()}
        assert parts == {coordinator_partition(g, 3)}
        (ev,) = [e for e in events if e["type"] == "group"]
        assert ev["coordinator_partition"] == f"__consumer_offsets-{coordinator_partition(g, 3)}"


def test_real_41_at_a_time_between_commits(real_root):
    records = _dump_log_records(real_root)
    root = real_root / "kafka-4.1.0-dev" / "data"
    times = sorted({ts for _, _, ts, k, _ in records if k["data"].get("group") == "dev-g-classic"})
    for at in (times[2], times[len(times) // 2], times[-1] - 1):
        _run_, events = _run(root, "dev-g-classic", at=at)
        assert _got(events) == _expected_offsets(records, "dev-g-classic", at)
        assert _got(events)  # something was committed by then


def test_real_41_group_types_and_states(real_root):
    root = real_root / "kafka-4.1.0-dev" / "data"
    _run_, events = _run(root, None)
    groups = {e["group"]: e for e in events if e["type"] == "group"}
    assert groups["dev-g-classic"]["group_type"] == "classic"
    assert groups["dev-g-848"]["group_type"] == "consumer"
    assert groups["dev-sg"]["group_type"] == "share"
    assert groups["dev-g-gone"]["deleted"] and groups["dev-g-gone"]["state"] == "Dead"
    # the last records: every member left (empty member list / member tombstones)
    assert {groups[g]["state"] for g in ("dev-g-classic", "dev-g-848", "dev-sg")} == {"Empty"}
    assert groups["dev-g-848"]["generation"] == 2  # ConsumerGroupMetadata epoch 2
    assert groups["dev-sg"]["generation"] == 3


def test_real_41_partition_count_from_kraft_metadata(real_root):
    # offsets.topic.num.partitions=3 in this broker's server.properties
    pc = partition_count(resolve([real_root / "kafka-4.1.0-dev" / "data"]))
    assert pc.count == 3 and "__cluster_metadata-0" in pc.source


def test_real_41_only_the_mapped_partition_is_read(real_root, tmp_path, monkeypatch):
    import kseg.offsets.placement as placement
    import kseg.offsets.walk as walk

    read = []
    real = walk.Partition

    def spy(pdir, *a, **kw):
        read.append(Path(pdir).name)
        return real(pdir, *a, **kw)

    monkeypatch.setattr(walk, "Partition", spy)  # the replay's reads
    monkeypatch.setattr(placement, "Partition", spy)  # the choice between replicas
    _run(real_root / "kafka-4.1.0-dev" / "data", "dev-g-java")
    assert read == ["__consumer_offsets-1"]


def test_unknown_group_is_no_match(real_root):
    with pytest.raises(InputError) as e:
        _run(real_root / "kafka-4.1.0-dev" / "data", "no-such-group")
    assert e.value.kind == "no_match"


# --- real 2.8 and 0.10: expected from kafka-python's record reader ------------------------------


def _str16(buf, pos):
    (n,) = struct.unpack_from(">h", buf, pos)
    return buf[pos + 2 : pos + 2 + n].decode(), pos + 2 + n


def _kafka_python_offsets(pdir: Path, group: str) -> dict:
    """Committed offsets from kafka-python's MemoryRecords and hand-read OffsetCommit keys
    (version, group, topic, partition) and values (version, offset, ...)."""
    from kafka.record import MemoryRecords

    offsets = {}
    for log in sorted(pdir.glob("*.log")):
        records = MemoryRecords(log.read_bytes())
        while True:
            batch = records.next_batch()
            if batch is None:
                break
            for rec in batch:
                (kv,) = struct.unpack_from(">h", rec.key, 0)
                if kv > 1:
                    continue
                g, pos = _str16(rec.key, 2)
                topic, pos = _str16(rec.key, pos)
                (part,) = struct.unpack_from(">i", rec.key, pos)
                if g != group:
                    continue
                if rec.value is None:
                    offsets.pop((topic, part), None)
                else:
                    offsets[(topic, part)] = struct.unpack_from(">q", rec.value, 2)[0]
    return offsets


@pytest.mark.parametrize(
    ("where", "group"),
    [
        ("seanorth__kafka-server/kafka-logs", "simple-consumer-example"),  # Kafka 2.8, v2 batches
        ("xpxwo100__bullShit/tmp/kafka-logs", "GroupA"),  # Kafka 0.10.1, magic 1 messages
    ],
)
def test_real_zookeeper_era_match_kafka_python(real_root, where, group):
    root = real_root / where
    (pdir,) = root.glob("__consumer_offsets-*")
    expected = _kafka_python_offsets(pdir, group)
    assert expected
    run, events = _run(root, group)
    assert _got(events) == expected
    notes = [e["message"] for e in events if e["type"] == "notice"]
    assert any("partition count of __consumer_offsets unknown" in n for n in notes)


def test_expired_flags_on_real_28(real_root):
    root = real_root / "seanorth__kafka-server" / "kafka-logs"
    # the group became Empty at 1641714065202 (its last GroupMetadata currentStateTimestamp)
    empty_at = 1641714065202
    _r, events = _run(root, "simple-consumer-example", now=empty_at + 7 * 86_400_000)
    offs = [e for e in events if e["type"] == "offset"]
    assert offs and all(e["expired"] for e in offs)
    _r, events = _run(root, "simple-consumer-example", now=empty_at + 7 * 86_400_000 - 1)
    assert not any(e["expired"] for e in events if e["type"] == "offset")
    _r, events = _run(
        root, "simple-consumer-example", now=empty_at + 3600_000, retention_ms=3600_000
    )
    assert all(e["expired"] for e in events if e["type"] == "offset")


# --- the fixture: transactions, tombstones, group deletion, v1 expiry ------------------------------


@pytest.fixture(scope="module")
def offsets_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("offsets")
    write_offsets_partition(root / "__consumer_offsets-0")
    return root


def test_fixture_whole_log(offsets_root):
    run, events = _run(offsets_root, GROUP)
    assert _got(events) == EXPECTED  # orders-1 tombstoned, the ABORTed 999 never counts
    assert run.outcome == Outcome.OK


def test_fixture_at_150s(offsets_root):
    _r, events = _run(offsets_root, GROUP, at=T0 + 150_000)
    assert _got(events) == EXPECTED_AT_150S
    txn = [e for e in events if e["type"] == "offset" and e["topic"] == "txn"]
    assert txn[0]["transactional"] and txn[0]["offset"] == 25


def test_fixture_pending_transaction_is_not_answered(offsets_root):
    # after the transactional commit, before its COMMIT marker (T0+2m+500ms)
    _r, events = _run(offsets_root, GROUP, at=T0 + 120_100)
    assert _got(events)[("txn", 0)] == 5
    assert any("pending" in e["message"] for e in events if e["type"] == "notice")


def test_fixture_aborted_transaction_never_counts(offsets_root):
    _r, events = _run(offsets_root, GROUP, at=T0 + 3 * 60_000 + 600)  # after the ABORT
    assert _got(events)[("txn", 0)] == 25


def test_fixture_deleted_group(offsets_root):
    _r, events = _run(offsets_root, GONE)
    (g,) = [e for e in events if e["type"] == "group"]
    assert g["deleted"] and g["state"] == "Dead" and not _got(events)
    _r, events = _run(offsets_root, GONE, at=T0 + 7 * 60_000)  # before the deletion
    assert _got(events) == {("orders", 0): 7}


def test_fixture_v1_expire_timestamp(offsets_root):
    _r, events = _run(offsets_root, EXPIRING, now=T0 + 10 * 60_000 - 1)
    assert not [e for e in events if e["type"] == "offset" and e["expired"]]
    _r, events = _run(offsets_root, EXPIRING, now=T0 + 10 * 60_000)
    (o,) = [e for e in events if e["type"] == "offset"]
    assert o["expired"] and o["expire_timestamp"] == T0 + 10 * 60_000


def test_fixture_empty_classic_group_expires_from_when_it_became_empty(offsets_root):
    empty_at = T0 + 6 * 60_000
    _r, events = _run(offsets_root, GROUP, now=empty_at + 3600_000 - 1, retention_ms=3600_000)
    assert not any(e["expired"] for e in events if e["type"] == "offset")
    _r, events = _run(offsets_root, GROUP, now=empty_at + 3600_000, retention_ms=3600_000)
    offs = [e for e in events if e["type"] == "offset"]
    assert offs and all(e["expired"] for e in offs)


def test_stable_group_does_not_expire_subscribed_topics(offsets_root):
    # at T0+5m the member (subscribed to orders and txn) is still there: nothing expires
    _r, events = _run(offsets_root, GROUP, at=T0 + 5 * 60_000, now=T0 + 10**10, retention_ms=1)
    offs = [e for e in events if e["type"] == "offset"]
    assert offs and not any(e["expired"] for e in offs)


def test_several_roots_read_the_most_complete_replica(offsets_root, tmp_path):
    import shutil

    for b in ("broker-1", "broker-2"):
        shutil.copytree(offsets_root, tmp_path / b)
        (tmp_path / b / "meta.properties").write_text(
            f"version=1\nnode.id={b[-1]}\ncluster.id=one-cluster\n"
        )
    # broker-2's replica lags: cut its log after the first four batches
    log = tmp_path / "broker-2" / "__consumer_offsets-0" / "00000000000000000000.log"
    from kseg.storage.segment import read_batches

    cut = [b.position + b.size for b in read_batches(log)][3]
    with open(log, "r+b") as f:
        f.truncate(cut)
    run = OffsetsRun(resolve([tmp_path]), group=GROUP, now=T0)
    events = list(run.events())
    assert _got(events) == EXPECTED
    assert any("replicas of __consumer_offsets-0 differ" in e["message"]
               for e in events if e["type"] == "notice")  # fmt: skip


def test_roots_of_different_clusters_are_refused(offsets_root, tmp_path):
    import shutil

    for b, cid in (("a", "cluster-a"), ("b", "cluster-b")):
        shutil.copytree(offsets_root, tmp_path / b)
        (tmp_path / b / "meta.properties").write_text(f"version=1\ncluster.id={cid}\n")
    with pytest.raises(InputError) as e:
        list(OffsetsRun(resolve([tmp_path]), group=GROUP, now=T0).events())
    assert e.value.kind == "usage" and "different clusters" in str(e.value)


def test_real_41_share_group_start_offset_matches_kafka_dump_log(real_root):
    """The share group's share-partition start offset, replayed from kafka-dump-log's own
    decoding of __share_group_state: ShareSnapshot sets it, ShareUpdate changes it unless -1."""
    data = real_root / "kafka-4.1.0-dev" / "data"
    expected = {}
    for txt in sorted(data.glob("__share_group_state-*/*.log.kafka-dump-log.txt")):
        for line in txt.read_text().splitlines():
            m = _LINE.match(line)
            if not m:
                continue
            key, value = json.loads(m.group(3)), m.group(4)
            tp = (key["data"]["topicId"], key["data"]["partition"])
            if key["data"]["groupId"] != "dev-sg":
                continue
            if value == "<DELETE>":
                expected.pop(tp, None)
                continue
            start = json.loads(value)["data"]["startOffset"]
            if key["type"] == "0" or start != -1:
                expected[tp] = start
    assert expected
    _r, events = _run(data, "dev-sg")
    got = {(e["topic_id"], e["partition"]): e["start_offset"]
           for e in events if e["type"] == "share_offset"}  # fmt: skip
    assert got == expected
    assert {e["topic"] for e in events if e["type"] == "share_offset"} == {"dev-txn-java"}


# --- KIP-848 consumer groups: state and expiry, through the encoders and the decoder -------------


def _kip848_replay(records):
    from kseg.format.coordinator import consumer_offsets, consumer_offsets_record
    from kseg.offsets.replay import Replay

    rp = Replay(None, None)
    for i, (rtype, fields, *tomb) in enumerate(records):
        key, value = consumer_offsets_record(rtype, fields, tombstone=bool(tomb))
        rp.apply(consumer_offsets(key, value), -1, ("f.log", i, i), T0 + i)
    return rp.groups["g"]


def _member(epoch, state=0):
    return [
        (5, {"group_id": "g", "member_id": "m1", "client_id": "c", "client_host": "/h",
             "subscribed_topic_names": ["orders"], "subscribed_topic_regex": None}),
        (8, {"group_id": "g", "member_id": "m1", "member_epoch": epoch,
             "previous_member_epoch": epoch - 1, "state": state, "assigned_partitions": [],
             "partitions_pending_revocation": []}),
    ]  # fmt: skip


def _commit(topic, offset, ts=T0):
    return (1, {"group": "g", "topic": topic, "partition": 0, "offset": offset,
                "leader_epoch": 0, "metadata": "", "commit_timestamp": ts})  # fmt: skip


@pytest.mark.parametrize(
    ("group_epoch", "assignment_epoch", "member_epoch", "member_state", "state"),
    [
        (3, 3, 3, 0, "Stable"),
        (4, 3, 3, 0, "Assigning"),
        (3, 3, 2, 0, "Reconciling"),
        (3, 3, 3, 1, "Reconciling"),
    ],  # fmt: skip
)
def test_kip848_state(group_epoch, assignment_epoch, member_epoch, member_state, state):
    g = _kip848_replay([
        (3, {"group_id": "g", "epoch": group_epoch}),
        (6, {"group_id": "g", "assignment_epoch": assignment_epoch}),
        *_member(member_epoch, member_state),
    ])  # fmt: skip
    assert (g.group_type, g.state) == ("consumer", state)


def test_kip848_expiry_spares_subscribed_and_regex_topics():
    from kseg.offsets.expiry import mark_expired

    g = _kip848_replay([
        (3, {"group_id": "g", "epoch": 1}),
        *_member(1),
        (16, {"group_id": "g", "regular_expression": "pay.*", "topics": ["payments"],
              "version": 1, "timestamp": T0}),
        _commit("orders", 10), _commit("payments", 20), _commit("old", 30),
    ])  # fmt: skip
    mark_expired(g, T0 + 10**9, 1000, set())
    assert {t for (t, _p), c in g.offsets.items() if c.expired} == {"old"}
    # the regex's tombstone: payments is no longer subscribed, and expires too
    g2 = _kip848_replay([
        (3, {"group_id": "g", "epoch": 1}), *_member(1),
        (16, {"group_id": "g", "regular_expression": "pay.*", "topics": ["payments"],
              "version": 1, "timestamp": T0}),
        (16, {"group_id": "g", "regular_expression": "pay.*"}, True),
        _commit("payments", 20),
    ])  # fmt: skip
    mark_expired(g2, T0 + 10**9, 1000, set())
    assert [c.expired for c in g2.offsets.values()] == [True]


def test_kip848_group_deletion_leaves_a_simple_group_for_remaining_offsets():
    g = _kip848_replay([
        (3, {"group_id": "g", "epoch": 1}),
        _commit("orders", 10),
        (3, {"group_id": "g"}, True),  # group tombstone without offset tombstones
    ])  # fmt: skip
    assert (g.group_type, g.state, g.protocol_type) == ("classic", "Empty", None)
    assert {k: c.offset for k, c in g.offsets.items()} == {("orders", 0): 10}
