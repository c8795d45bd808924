"""The transaction replay (kseg.storage.txn_replay) on the fixture root of every transaction
shape (kseg.fixtures.transactions), and the read_committed rule against a plain model."""

from __future__ import annotations

import pytest

from kseg.fixtures.transactions import build_root
from kseg.storage.segment import read_batches
from kseg.storage.txn_replay import replay_transactions
from tests.isolation.model import ReadCommitted


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    d = tmp_path_factory.mktemp("txns")
    return d, build_root(d)


def test_replay_finds_what_the_fixture_wrote(root):
    d, exp = root
    r = replay_transactions(d / "payments-0")
    assert (r.log_end_offset, r.last_stable_offset) == (exp["log_end_offset"],
                                                         exp["last_stable_offset"])  # fmt: skip
    assert (r.committed, r.aborted, r.empty) == (exp["committed"], exp["aborted"], exp["empty"])
    assert {t.producer_id: (t.first_offset, t.records) for t in r.open} == exp["open"]
    assert [t.producer_id for t in r.open] == [1004, 9009, 1007]  # by first offset
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in r.aborted_ranges] == (
        exp["aborted_ranges"])  # fmt: skip
    assert r.holding().producer_id == 1004
    assert r.data_end_time == exp["data_end_time"]
    assert r.error is None
    states = {p.producer_id: p for p in r.producers}
    assert states[1005].producer_epoch == 1 and states[1005].coordinator_epoch == 4
    # epoch 2 came with the last COMMIT: no batch since (Kafka clears the batch metadata)
    assert states[1006].producer_epoch == 2 and states[1006].last_sequence == -1
    assert states[1005].producer_epoch == 1 and states[1005].last_sequence == -1
    assert states[1004].current_txn_start_offset == exp["open"][1004][0]
    assert states[2000].current_txn_start_offset == -1


def test_control_only_partition_counts_empty_markers(root):
    d, _ = root
    r = replay_transactions(d / "audit-0")
    assert (r.committed, r.aborted, r.empty, r.open) == (0, 0, 3, ())
    assert r.last_stable_offset == r.log_end_offset == 3


def test_upto_replays_the_partition_as_it_stood(root):
    d, exp = root
    first_b = exp["aborted_ranges"][0][1]
    r = replay_transactions(d / "payments-0", upto=first_b + 1)
    assert [(t.producer_id, t.first_offset) for t in r.open] == [(1001, 0), (1002, first_b)]
    assert (r.last_stable_offset, r.log_end_offset) == (0, first_b + 2)


def _model(pdir, replay):
    """Records a read_committed consumer returns, by the definition: below the LSO, not in a
    control batch, not in a transactional batch inside an aborted transaction's range."""
    ranges = [(a.producer_id, a.first_offset, a.last_offset) for a in replay.aborted_ranges]
    out = []
    for log in sorted(pdir.glob("*.log")):
        for b in read_batches(log):
            if b.is_control or b.base_offset >= replay.last_stable_offset:
                continue
            if b.is_transactional and any(
                p == b.producer_id and f <= b.base_offset <= last for p, f, last in ranges
            ):
                continue
            out.extend(r.offset for r in b.records())
    return out


@pytest.mark.parametrize("fetch_offset", [None, 0, 5, 13, 19, 21])
def test_read_committed_equals_the_plain_model(root, fetch_offset):
    d, _ = root
    pdir = d / "payments-0"
    r = replay_transactions(pdir)
    rc = ReadCommitted(r, fetch_offset)
    kept = []
    for log in sorted(pdir.glob("*.log")):
        for b in read_batches(log):
            if fetch_offset is not None and b.last_offset < fetch_offset:
                continue
            ctl = b.control_record(end_txn=True) if b.is_control else None
            abort = ctl is not None and ctl.type == 0
            if rc.keeps(b.producer_id, b.last_offset, b.attributes, abort):
                kept.extend(x.offset for x in b.records() if x.offset >= (fetch_offset or 0))
    want = [o for o in _model(pdir, r) if fetch_offset is None or o >= fetch_offset]
    assert kept == want


@pytest.mark.parametrize("name", ["dev-txn-py-0", "dev-txn-java-0"])
def test_replay_agrees_with_a_real_brokers_txnindex(real_root, name):
    """Kafka 4.1.0 wrote these partitions (kafka-python's and the Java producer's transactions):
    the replay's aborted transactions are exactly the `.txnindex` entries the broker wrote."""
    from kseg.storage.segment import Segment

    pdir = real_root / "kafka-4.1.0-dev" / "data" / name
    r = replay_transactions(pdir)
    written = sorted(
        (
            a
            for log in sorted(pdir.glob("*.log"))
            if log.with_suffix(".txnindex").exists()  # none: no aborted transaction in it
            for a in Segment(log).aborted_transactions()
        ),
        key=lambda a: a.first_offset,
    )
    assert list(r.aborted_ranges) == written
    assert r.error is None and r.open == () and r.last_stable_offset == r.log_end_offset


def test_producer_state_follows_kafkas_entry_rules(tmp_path):
    """ProducerStateEntry: a marker with a new epoch (Transaction V2's bump) clears the batch
    metadata, so LastSequence is -1 until the next data batch (maybeUpdateProducerEpoch); an
    empty control batch (a cleaned transaction's marker) changes nothing
    (ProducerAppendInfo.append); a batch without sequence has lastSequence -1."""
    from kseg.format.record import Record
    from kseg.storage.writer import LogWriter

    with LogWriter(tmp_path / "t-0", clock=lambda: 1000) as w:
        w.append([Record(b"k", b"v", 1000)] * 3, producer_id=7, producer_epoch=0,
                 base_sequence=0, transactional=True)  # fmt: skip
        w.append_control(commit=True, producer_id=7, producer_epoch=1, coordinator_epoch=2,
                         timestamp=2000)  # fmt: skip
        w.append([Record(b"k", b"v", 1500)], producer_id=8, producer_epoch=0, base_sequence=0)
        w.append([], producer_id=8, producer_epoch=5, control=True, last_offset=w.next_offset,
                 log_append_time=9000)  # fmt: skip
        w.append([Record(b"k", b"v", 3000)], producer_id=9, producer_epoch=0, base_sequence=4)
        w.append([Record(b"k", b"v", 3500)], producer_id=9, producer_epoch=1)
    r = replay_transactions(tmp_path / "t-0")
    states = {p.producer_id: p for p in r.producers}
    assert states[7][1:5] == (1, -1, 2000, 2)  # epoch, last sequence, last timestamp, coord epoch
    assert states[8][1:5] == (0, 0, 1500, -1)  # the empty control batch left it as it was
    assert states[9][1:3] == (1, -1)
    assert r.error is None


@pytest.mark.parametrize("name", ["dev-txn-py-0", "dev-txn-java-0"])
def test_replay_producers_equal_the_brokers_snapshot_at_the_log_end(real_root, name):
    """Kafka 4.1.0 wrote a producer snapshot at each partition's log end on shutdown: its own
    ProducerStateManager state. The replay of the whole log gives the same producers (the Java
    client's TV2 markers bump the epoch: LastSequence -1 after the last one)."""
    from kseg.format.producer_snapshot import read_snapshot

    pdir = real_root / "kafka-4.1.0-dev" / "data" / name
    r = replay_transactions(pdir)
    (snap,) = [s for s in pdir.glob("*.snapshot") if int(s.stem) == r.log_end_offset]
    broker = [
        (e.producer_id, e.producer_epoch, e.last_sequence, e.timestamp, e.coordinator_epoch,
         e.current_txn_first_offset)
        for e in read_snapshot(snap.read_bytes()).entries
    ]  # fmt: skip
    assert [tuple(p) for p in r.producers] == sorted(broker)
