"""`kseg txn` through the real entry point (a subprocess): the lead's fixture root
(kseg.fixtures.transactions), exit codes, formats, --at, several roots, damage."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kseg.fixtures.transactions import MINUTE, T0, build_root
from tests.helpers import events, run_kseg

ABORT = "kafka-transactions.sh --bootstrap-server {b} abort --topic payments --partition 0 "


@pytest.fixture(scope="module")
def fixture_root(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("txncli") / "logs"
    return root, build_root(root)


def _json(*args) -> tuple[int, list[dict], str]:
    proc = run_kseg("txn", *args, "-f", "json")
    return proc.returncode, events(proc.stdout), proc.stderr.decode()


def test_hanging_transactions_exit_4_with_their_rule_and_abort_command(fixture_root):
    root, expected = fixture_root
    code, evs, err = _json(root)
    assert code == 4, err
    parts = {e["topic"]: e for e in evs if e["type"] == "partition"}
    assert sorted(parts) == ["audit", "payments"]  # __transaction_state holds no transaction
    pay = parts["payments"]
    assert (pay["last_stable_offset"], pay["log_end_offset"]) == (
        expected["last_stable_offset"], expected["log_end_offset"]
    )  # fmt: skip
    assert (pay["open"], pay["hanging"], pay["committed"], pay["aborted"], pay["empty"]) == (
        3, 2, 4, 2, 1
    )  # fmt: skip
    assert pay["held_since"] == T0 + 10 * MINUTE + 1 and pay["held_by"] == 1004
    assert (parts["audit"]["empty"], parts["audit"]["open"]) == (3, 0)
    opens = {e["producer_id"]: e for e in evs if e["type"] == "open_transaction"}
    assert {p: (e["status"], e["hanging_rule"]) for p, e in opens.items()} == {
        1004: ("hanging", "partition_not_in_transaction"),  # tx-dead: CompleteAbort
        9009: ("hanging", "no_transactional_id"),
        1007: ("open", None),  # tx-live: 2 minutes old
    }
    assert opens[1004]["transactional_id"] == "tx-dead"
    assert opens[1004]["coordinator_state"] == "CompleteAbort"
    assert {p: (e["first_offset"], e["records"]) for p, e in opens.items()} == expected["open"]
    assert opens[1004]["abort_command"] == ABORT.format(b="<BOOTSTRAP>") + (
        "--producer-id 1004 --producer-epoch 0 --coordinator-epoch 0"
    )
    (summary,) = [e for e in evs if e["type"] == "summary"]
    assert (summary["open"], summary["hanging"], summary["partitions"]) == (3, 2, 2)
    assert summary["judged_at"] == expected["data_end_time"]
    # the verdict "no transactional id" rests on reading every __transaction_state partition
    assert err.splitlines() == [
        "kseg: partition count of __transaction_state unknown (no KRaft metadata "
        "(__cluster_metadata-0) under the roots): the 1 present are taken as all of them (a "
        "producer id found in none has no transactional id)",
        # tx-live, 2 minutes idle at the end of the data, is years idle at the clock
        "kseg: 1 open transaction idle less than the max transaction timeout at the end of the "
        "data (the latest batch time read) would be past it at the clock: give --now now to "
        "judge against the clock",
    ]


def test_text_says_where_consumers_are_held_and_prints_the_abort_command(fixture_root):
    root, expected = fixture_root
    proc = run_kseg("txn", root, "--topic", "^payments$", "--bootstrap-server", "k1:9092")
    assert proc.returncode == 4
    lines = proc.stdout.decode().splitlines()
    lso = expected["last_stable_offset"]
    assert lines[0] == (
        f"payments-0: read_committed consumers held at offset {lso} since {T0 + 10 * MINUTE + 1} "
        f"(2023-11-14T22:23:20.001Z) by producer 1004 (log end offset "
        f"{expected['log_end_offset']}; 3 open, 2 hanging; 4 committed, 2 aborted, 1 empty)"
    )
    assert lines[1].startswith(f"payments-0: producer 1004 epoch 0 open since offset {lso} at ")
    assert lines[1].endswith(
        '(open 50m, 3 records, 124 bytes, idle 50m; transactional id "tx-dead" CompleteAbort); '
        "HANGING (the coordinator's transaction does not include this partition): "
        + ABORT.format(b="k1:9092")
        + "--producer-id 1004 --producer-epoch 0 --coordinator-epoch 0"
    ), lines[1]
    assert "HANGING (no transactional id at the coordinator)" in lines[2]
    assert lines[3].endswith('transactional id "tx-live" Ongoing); open (within the max '
                             "transaction timeout)")  # fmt: skip
    assert lines[4].startswith("total: 1 partitions, 3 open transactions, 2 hanging, 0 not judged")


def test_nothing_hanging_exits_0(fixture_root):
    root, _ = fixture_root
    code, evs, _ = _json(root, "--max-transaction-timeout", "60")
    assert code == 0
    assert [e["hanging"] for e in evs if e["type"] == "summary"] == [0]
    # before tx-dead began (the partition as it stood at minute 9): nothing open at all
    code, evs, _ = _json(root, "--at", str(T0 + 9 * MINUTE))
    assert code == 0
    pay = next(e for e in evs if e["type"] == "partition" and e["topic"] == "payments")
    assert pay["open"] == 0 and pay["last_stable_offset"] == pay["log_end_offset"]


def test_at_judges_as_of_then(fixture_root):
    """At minute 30 tx-dead (idle 20 minutes) is hanging; 9009 (18 minutes) too; tx-live
    does not exist yet."""
    root, _ = fixture_root
    code, evs, _ = _json(root, "--at", "2023-11-14T22:43:20Z")
    assert code == 4
    opens = {e["producer_id"]: e for e in evs if e["type"] == "open_transaction"}
    assert sorted(opens) == [1004, 9009]
    assert opens[1004]["age_ms"] == 20 * MINUTE - 1
    (summary,) = [e for e in evs if e["type"] == "summary"]
    assert (summary["judged_at"], summary["judged_by"]) == (T0 + 30 * MINUTE, "--at")


def test_now_now_judges_against_the_clock(fixture_root):
    root, _ = fixture_root
    code, evs, _ = _json(root, "--now", "now", "--topic", "^payments$")
    opens = {e["producer_id"]: e["status"] for e in evs if e["type"] == "open_transaction"}
    assert code == 4 and opens[1007] == "open"  # Ongoing at the coordinator with payments-0
    code, evs, err = _json(root, "--topic", "^payments$", "--max-transaction-timeout", "5")
    # at the end of the data tx-live is 2 minutes idle; at the clock years: said on stderr
    assert "1 open transaction idle less than the max transaction timeout" in err


def test_formats(fixture_root):
    root, _ = fixture_root
    proc = run_kseg("txn", root, "-f", "csv")
    rows = proc.stdout.decode().splitlines()
    assert rows[0].startswith("type,topic,partition,log_dir,log_start_offset")
    assert sum(r.startswith("open_transaction,payments,0,") for r in rows) == 3
    assert rows[-1].startswith("summary,")
    proc = run_kseg("txn", root, "-f", "table", env=None)
    text = proc.stdout.decode()
    assert proc.returncode == 4
    for title in ("partition", "open_transaction", "summary: partitions 2"):
        assert title in text


def test_several_roots_name_their_log_dir(fixture_root, tmp_path):
    root, _ = fixture_root
    for b in ("broker-1", "broker-2"):
        shutil.copytree(root, tmp_path / b / "logs")
    code, evs, err = _json(tmp_path)
    assert code == 4, err
    pays = [e for e in evs if e["type"] == "partition" and e["topic"] == "payments"]
    assert sorted(e["log_dir"] for e in pays) == [
        str(tmp_path / "broker-1" / "logs"), str(tmp_path / "broker-2" / "logs")
    ]  # fmt: skip
    assert [e["hanging"] for e in evs if e["type"] == "summary"] == [4]


def test_nothing_to_read_is_16(tmp_path):
    proc = run_kseg("txn", tmp_path / "nope")
    assert proc.returncode == 16 and proc.stdout == b""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "meta.properties").write_text("version=0\nbroker.id=1\n")
    proc = run_kseg("txn", tmp_path / "logs")
    assert proc.returncode == 16 and b"no Kafka partition directory" in proc.stderr


def test_a_damaged_segment_stops_the_replay_exit_4_one_line(fixture_root, tmp_path):
    root, expected = fixture_root
    copy = tmp_path / "logs"
    shutil.copytree(root, copy)
    log = sorted((copy / "payments-0").glob("*.log"))[-1]  # the second segment
    data = bytearray(log.read_bytes())
    size = 12 + int.from_bytes(data[8:12], "big")
    data[size + 30] ^= 0xFF  # the second batch of the segment fails its CRC
    log.write_bytes(bytes(data))
    proc = run_kseg("txn", copy, "-f", "json", "--max-transaction-timeout", "600")
    assert proc.returncode == 4
    lines = proc.stderr.decode().splitlines()
    (line,) = [x for x in lines if str(log) in x]
    assert line.startswith(f"kseg: {log}: byte {size}: ")
    pay = next(e for e in events(proc.stdout) if e.get("topic") == "payments")
    assert pay["log_end_offset"] < expected["log_end_offset"]
    assert [e["hanging"] for e in events(proc.stdout) if e["type"] == "summary"] == [0]


def test_kafka07_logs_have_no_transactions(log07):
    proc = run_kseg("txn", log07, "-f", "json")
    assert proc.returncode == 0
    assert [e["partitions"] for e in events(proc.stdout) if e["type"] == "summary"] == [0]
    assert f"kseg: {log07 / 'events-0'}: a Kafka 0.7 log: no transactions" in (
        proc.stderr.decode().splitlines()
    )
