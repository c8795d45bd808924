"""kseg.txn: the coordinator replay, find-hanging's rules and every field of TxnRun's events,
against answers computed by hand (tests/txn/scenario.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kseg.outcome import Outcome
from kseg.storage.tree import resolve
from kseg.txn.coordinator import Coordinator, TxnMeta
from kseg.txn.hanging import abort_command, judge
from kseg.txn.run import TxnRun, judged_time
from tests.txn.scenario import (
    ABORT,
    END,
    EXPECTED_PARTITIONS,
    T0,
    M,
    build,
    state,
    write_coordinator,
)


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("txn") / "logs")


def _sel(*paths, topic=None):
    return resolve(list(paths), topic, None, logs_only=True)


def _events(run: TxnRun) -> list[dict]:
    return [ev for ev in run.events() if ev["type"] not in ("notice", "failure")]


# --- the coordinator ---------------------------------------------------------------------------


def test_coordinator_latest_value_wins_and_a_tombstone_removes(root):
    c = Coordinator(_sel(root))
    assert list(c.replay()) == []
    assert sorted(c.ids) == ["app-2", "app-3", "app-4", "app-d"]  # app-x: tombstoned
    assert c.ids["app-2"] == TxnMeta(
        "app-2", 4002, 0, "CompleteCommit", 60_000, (), T0 + M, T0 + 2 * M, "__transaction_state-0"
    )
    assert c.ids["app-3"].partitions == (("orders", 0),)
    assert c.ids["app-4"].state == "CompleteAbort"
    # ListTransactions leaves out ids in state Dead
    assert sorted(c.by_producer()) == [4002, 4003, 4004]
    assert c.complete and c.last_time == T0 + 7 * M
    assert "partition count of __transaction_state unknown" in c.caveat


def test_coordinator_as_of_a_time(root):
    c = Coordinator(_sel(root), at=T0 + 4 * M + 59_999)
    list(c.replay())
    assert sorted(c.ids) == ["app-2", "app-3", "app-4", "app-x"]  # before the tombstone
    assert c.ids["app-4"].state == "Ongoing" and c.ids["app-x"].producer_id == 4001
    assert c.last_time == T0 + 4 * M


def test_no_coordinator_partition(tmp_path):
    c = Coordinator(_sel(build_orders_only(tmp_path)))
    list(c.replay())
    assert not c.present and "no __transaction_state partition under" in c.caveat


def build_orders_only(tmp_path: Path) -> Path:
    from kseg.storage.writer import LogWriter
    from tests.txn.scenario import data, plain

    with LogWriter(tmp_path / "logs" / "orders-0", clock=lambda: T0) as w:
        plain(w, 1, T0)
        data(w, 7, 0, 2, T0 + M)
        plain(w, 1, T0 + 30 * M)
    return tmp_path / "logs"


def test_a_damaged_coordinator_partition_is_replayed_up_to_the_damage(tmp_path):
    pdir = tmp_path / "logs" / "__transaction_state-0"
    write_coordinator(pdir, [(T0, state("a", 1, 0, 1, {"t": [0]}, T0)),
                             (T0 + M, state("b", 2, 0, 1, {"t": [0]}, T0 + M))])  # fmt: skip
    log = pdir / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    first_batch = int.from_bytes(data[8:12], "big") + 12
    data[first_batch + 40] ^= 0xFF  # inside the second batch: its CRC fails
    log.write_bytes(bytes(data))
    c = Coordinator(_sel(tmp_path / "logs"))
    (failure,) = list(c.replay())
    assert failure["type"] == "failure" and str(log) in failure["message"]
    assert f"byte {first_batch}" in failure["message"]
    assert sorted(c.ids) == ["a"] and c.outcome == Outcome.INVALID_DATA


# --- the rules ---------------------------------------------------------------------------------


def _meta(pid, state_name, parts=()):
    return TxnMeta("id", pid, 0, state_name, 60_000, tuple(parts), 0, 0, "__transaction_state-0")


TIMEOUT = 15 * M


@pytest.mark.parametrize(
    ("idle", "by_producer", "complete", "status", "rule"),
    [
        # a candidate only once idle MORE than the timeout (find-hanging: duration > max)
        (TIMEOUT, {}, True, "open", None),
        (TIMEOUT + 1, {}, True, "hanging", "no_transactional_id"),
        (TIMEOUT + 1, {9: _meta(9, "Ongoing", [("t", 0)])}, True, "hanging", "no_transactional_id"),
        (TIMEOUT + 1, {7: _meta(7, "Ongoing", [("t", 0)])}, True, "open", None),
        (TIMEOUT + 1, {7: _meta(7, "Ongoing", [("t", 1)])}, True, "hanging",
         "partition_not_in_transaction"),
        (TIMEOUT + 1, {7: _meta(7, "PrepareCommit", [("t", 0)])}, True, "open", None),
        (TIMEOUT + 1, {7: _meta(7, "CompleteCommit")}, True, "hanging",
         "partition_not_in_transaction"),
        (TIMEOUT + 1, {7: _meta(7, "Empty")}, True, "hanging", "partition_not_in_transaction"),
        # what the coordinator state cannot tell is not called hanging
        (TIMEOUT + 1, None, True, "unjudged", None),
        (TIMEOUT + 1, {}, False, "unjudged", None),
        (TIMEOUT + 1, {7: _meta(7, "Empty")}, False, "hanging", "partition_not_in_transaction"),
        (TIMEOUT, None, False, "open", None),
    ],
)  # fmt: skip
def test_find_hanging_rules(idle, by_producer, complete, status, rule):
    v = judge("t", 0, 7, 1_000, 1_000 + idle, TIMEOUT, by_producer, complete)
    assert (v.status, v.rule) == (status, rule)
    assert v.candidate == (idle > TIMEOUT)


def test_the_abort_command_is_the_one_the_tool_takes():
    assert abort_command("orders", 3, 4001, 7, 12) == (
        "kafka-transactions.sh --bootstrap-server <BOOTSTRAP> abort --topic orders --partition 3 "
        "--producer-id 4001 --producer-epoch 7 --coordinator-epoch 12"
    )
    # no marker yet (-1): the tool itself takes 0; a bootstrap given is put in
    assert abort_command("a.b_c", 0, 1, 0, -1, "k1:9092") == (
        "kafka-transactions.sh --bootstrap-server k1:9092 abort --topic a.b_c --partition 0 "
        "--producer-id 1 --producer-epoch 0 --coordinator-epoch 0"
    )


def test_judged_time():
    assert judged_time(5, 7, 9) == (5, "--at")
    assert judged_time(None, 7, 9) == (7, "--now")
    assert judged_time(None, None, 9)[0] == 9
    assert judged_time(None, None, -1)[1].startswith("the clock")


# --- the run's events --------------------------------------------------------------------------


def test_every_event_field_at_the_end_of_the_data(root):
    run = TxnRun(_sel(root))
    evs = _events(run)
    parts = {(e["topic"], e["partition"]): e for e in evs if e["type"] == "partition"}
    assert set(parts) == set(EXPECTED_PARTITIONS)  # __transaction_state: no transactions
    for key, want in EXPECTED_PARTITIONS.items():
        got = {k: v for k, v in parts[key].items() if k not in ("type", "topic", "partition")}
        assert got == want, key
    opens = [e for e in evs if e["type"] == "open_transaction"]
    assert [(e["partition"], e["producer_id"]) for e in opens] == [
        (0, 4001), (0, 4003), (0, 4004), (1, 4006)
    ]  # fmt: skip
    x, three, four, six = opens
    assert x == {
        "type": "open_transaction", "topic": "orders", "partition": 0, "producer_id": 4001,
        "producer_epoch": 3, "coordinator_epoch": -1, "first_offset": 3,
        "first_timestamp": T0 + M, "last_offset": 4, "last_timestamp": T0 + M, "records": 2,
        "bytes": x["bytes"], "file": "00000000000000000000.log", "age_ms": END - (T0 + M),
        "idle_ms": END - (T0 + M), "candidate": True, "transactional_id": None,
        "coordinator_state": None, "timeout_ms": None, "status": "hanging",
        "why": "no transactional id at the coordinator", "hanging": True,
        "hanging_rule": "no_transactional_id", "abort_command": ABORT.format(pid=4001, epoch=3),
    }  # fmt: skip
    log = (root / "orders-0" / "00000000000000000000.log").read_bytes()
    pos = _batch_position(log, 3)
    assert x["bytes"] == 12 + int.from_bytes(log[pos + 8 : pos + 12], "big")  # its one batch
    assert (three["status"], three["transactional_id"], three["coordinator_state"]) == (
        "open", "app-3", "Ongoing"
    )  # fmt: skip
    assert (three["first_offset"], three["last_offset"], three["records"]) == (8, 11, 4)
    assert three["timeout_ms"] == 60_000 and three["abort_command"] is None
    assert (four["hanging_rule"], four["coordinator_state"]) == (
        "partition_not_in_transaction", "CompleteAbort"
    )  # fmt: skip
    assert four["abort_command"] == ABORT.format(pid=4004, epoch=0)
    # idle 5 minutes: open, though its id is Dead at the coordinator
    assert (six["status"], six["candidate"], six["idle_ms"]) == ("open", False, 5 * M)
    assert six["transactional_id"] is None
    (summary,) = [e for e in evs if e["type"] == "summary"]
    assert summary == {
        "type": "summary", "partitions": 2, "open": 4, "hanging": 2, "unjudged": 0,
        "committed": 1, "aborted": 1, "empty": 1, "judged_at": END,
        "judged_by": "the end of the data (the latest batch time read)",
        "max_transaction_timeout_ms": 15 * M,
    }  # fmt: skip
    assert run.outcome == Outcome.INVALID_DATA


def test_producers_are_describe_producers_view(root):
    evs = _events(TxnRun(_sel(root), producers=True))
    prods = {e["producer_id"]: e for e in evs if e["type"] == "producer" and e["partition"] == 0}
    assert sorted(prods) == [4001, 4002, 4003, 4004, 4005]
    assert prods[4002] == {
        "type": "producer", "topic": "orders", "partition": 0, "producer_id": 4002,
        "producer_epoch": 0, "last_sequence": 1, "last_timestamp": T0 + 2 * M,
        "coordinator_epoch": 2, "current_txn_start_offset": -1,
    }  # fmt: skip
    assert prods[4005]["last_timestamp"] == T0 + 6 * M  # the second ABORT
    assert prods[4003]["current_txn_start_offset"] == 8 and prods[4003]["last_sequence"] == 3


def test_now_and_the_max_timeout_decide_what_is_a_candidate(root):
    evs = _events(TxnRun(_sel(root), now=T0 + 16 * M, max_timeout_ms=15 * M))
    by_pid = {e["producer_id"]: e for e in evs if e["type"] == "open_transaction"}
    # at T0+16m: 4001 idle 15m (not more than the timeout), 4004 idle 12m: open; the
    # future-dated data (orders-1 at T0+55m) has a negative idle
    assert {p: e["status"] for p, e in by_pid.items()} == {
        4001: "open", 4003: "open", 4004: "open", 4006: "open"
    }  # fmt: skip
    assert by_pid[4001]["age_ms"] == 15 * M
    evs = _events(TxnRun(_sel(root), now=T0 + 16 * M, max_timeout_ms=12 * M - 1))
    by_pid = {e["producer_id"]: e for e in evs if e["type"] == "open_transaction"}
    assert by_pid[4001]["hanging_rule"] == "no_transactional_id"
    assert by_pid[4004]["hanging_rule"] == "partition_not_in_transaction"


def test_at_answers_as_the_partition_and_coordinator_stood(root):
    at = T0 + 2 * M + 30_000
    run = TxnRun(_sel(root), at=at, max_timeout_ms=M)
    evs = _events(run)
    parts = {(e["topic"], e["partition"]): e for e in evs if e["type"] == "partition"}
    # orders-0 below offset 8 (the first written after T), orders-1 held nothing yet
    assert {k: v for k, v in parts[("orders", 0)].items() if k != "type"} == {
        "topic": "orders", "partition": 0, "log_start_offset": 0, "log_end_offset": 8,
        "last_stable_offset": 3, "held_since": T0 + M, "held_by": 4001, "open": 1,
        "hanging": 0, "unjudged": 0, "committed": 1, "aborted": 0, "empty": 0,
    }  # fmt: skip
    assert parts[("orders", 1)]["log_end_offset"] == 0 and parts[("orders", 1)]["open"] == 0
    (x,) = [e for e in evs if e["type"] == "open_transaction"]
    # at T app-x (4001) was Ongoing with orders-0: a candidate, not hanging
    assert (x["transactional_id"], x["coordinator_state"], x["status"]) == (
        "app-x", "Ongoing", "open"
    )  # fmt: skip
    assert x["candidate"] and x["age_ms"] == 90_000
    assert run.outcome == Outcome.OK and run.judged_at == at


def test_topic_selection_still_reads_the_coordinator(root):
    run = TxnRun(_sel(root, topic="^orders$"), coordinator_sel=_sel(root))
    evs = _events(run)
    assert {e["topic"] for e in evs if e["type"] == "partition"} == {"orders"}
    assert run.coordinator.present


def test_an_internal_topic_is_shown_only_with_transactions(tmp_path):
    from kseg.fixtures.offsets import write_offsets_partition

    root = tmp_path / "logs"
    write_offsets_partition(root / "__consumer_offsets-0")
    write_coordinator(root / "__transaction_state-0", [(T0, state("a", 1, 0, 1, {}, T0))])
    evs = _events(TxnRun(_sel(root)))
    (p,) = [e for e in evs if e["type"] == "partition"]
    # TxnOffsetCommit: one transaction COMMITted, one ABORTed
    assert (p["topic"], p["committed"], p["aborted"], p["open"]) == (
        "__consumer_offsets", 1, 1, 0
    )  # fmt: skip


def test_a_damaged_partition_is_replayed_up_to_the_damage(tmp_path):
    root = tmp_path / "logs"
    build(root)
    log = root / "orders-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    pos = _batch_position(data, 8)  # producer 4003's batch
    data[pos + 30] ^= 0xFF
    log.write_bytes(bytes(data))
    run = TxnRun(_sel(root))
    all_evs = list(run.events())
    (failure,) = [e for e in all_evs if e["type"] == "failure"]
    assert failure["message"].startswith(f"{log}: byte {pos}: ")
    assert "transactions after it are not replayed" in failure["message"]
    p0 = next(e for e in all_evs if e["type"] == "partition" and e["partition"] == 0)
    assert (p0["log_end_offset"], p0["open"], p0["committed"]) == (8, 1, 1)
    assert run.outcome & Outcome.INVALID_DATA


def _batch_position(data: bytes, base_offset: int) -> int:
    pos = 0
    while pos < len(data):
        if int.from_bytes(data[pos : pos + 8], "big") == base_offset:
            return pos
        pos += 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
    raise AssertionError(base_offset)


def test_a_transaction_begun_before_the_log_start(tmp_path):
    """Retention deleted the segment where it began: the producer snapshot at the first
    segment left says it is open (its first offset below the log start, its time unknown)."""
    from kseg.render.text import txn_line
    from kseg.storage.writer import LogWriter
    from tests.txn.scenario import data, plain

    pdir = tmp_path / "logs" / "orders-0"
    with LogWriter(pdir, clock=lambda: T0) as w:
        plain(w, 2, T0)
        data(w, 77, 2, 2, T0 + M)  # offsets 2-3
        w.roll()
        plain(w, 1, T0 + 40 * M)  # offset 4
    for f in pdir.glob("00000000000000000000.*"):
        f.unlink()
    evs = _events(TxnRun(_sel(tmp_path / "logs"), max_timeout_ms=60 * M))
    part, open_ = evs[0], evs[1]
    assert (part["log_start_offset"], part["last_stable_offset"], part["held_by"]) == (4, 4, 77)
    assert part["held_since"] is None and part["log_end_offset"] == 5
    assert (open_["first_offset"], open_["first_timestamp"], open_["age_ms"]) == (2, -1, None)
    assert (open_["producer_epoch"], open_["records"], open_["file"]) == (2, 0, None)
    assert open_["idle_ms"] == 39 * M  # its last write, from the snapshot
    assert txn_line(part) == (
        "orders-0: read_committed consumers held at offset 4 by producer 77 (log end offset 5; "
        "1 open, 0 hanging; 0 committed, 0 aborted, 0 empty)"
    )
    assert txn_line(open_).startswith(
        "orders-0: producer 77 epoch 2 open since offset 2 (0 records, 0 bytes, idle 39m; "
    )


def test_missing_coordinator_partitions_leave_a_candidate_unjudged(tmp_path):
    """KRaft metadata says __transaction_state has 2 partitions and only one is here: a
    producer id found in none is not called hanging; one found is judged."""
    from kseg.storage.writer import LogWriter

    root = build(tmp_path / "logs")
    uuid = "AAAAAAAAAAAAAAAAAAAAAA"
    with LogWriter(root / "__cluster_metadata-0") as w:
        w.append_metadata([("topic_record", {"name": "__transaction_state", "topic_id": uuid})]
                          + [("partition_record", {"partition_id": p, "topic_id": uuid,
                                                   "leader": 1, "isr": [1]}) for p in (0, 1)])  # fmt: skip
    run = TxnRun(_sel(root, topic="^orders$"), coordinator_sel=_sel(root))
    all_evs = list(run.events())
    by_pid = {e["producer_id"]: e for e in all_evs if e["type"] == "open_transaction"}
    assert (by_pid[4001]["status"], by_pid[4001]["hanging_rule"]) == ("unjudged", None)
    assert "not read" in by_pid[4001]["why"]
    assert by_pid[4004]["hanging_rule"] == "partition_not_in_transaction"
    notices = [e["message"] for e in all_evs if e["type"] == "notice"]
    assert any(
        m.startswith("__transaction_state has 2 partitions (KRaft metadata in ")
        and "1 are not under the roots (1)" in m
        for m in notices
    ), notices
    summary = all_evs[-1]
    assert (summary["hanging"], summary["unjudged"]) == (1, 1)


def test_a_partition_dir_given_by_path_finds_its_coordinator_beside_it(root):
    run = TxnRun(_sel(root / "orders-0"))
    evs = _events(run)
    assert [e["hanging_rule"] for e in evs if e["type"] == "open_transaction"] == [
        "no_transactional_id", None, "partition_not_in_transaction"
    ]  # fmt: skip
    assert run.coordinator.read == [root / "__transaction_state-0"]
