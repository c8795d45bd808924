"""Internal-topic records: round trips, the real broker files, and lies in keys and values."""

from __future__ import annotations

import struct

import pytest

import kseg
from kseg.format import coordinator as co
from kseg.format.errors import CorruptionError
from tests.helpers import events, run_cli


def test_round_trips():
    d = co.consumer_offsets(
        co.offset_commit_key("g", "t", 3), co.offset_commit_value(42, 1000, "meta", 7)
    )
    assert (
        d["record"],
        d["group"],
        d["topic"],
        d["partition"],
        d["offset"],
        d["leader_epoch"],
        d["metadata"],
    ) == ("offset_commit", "g", "t", 3, 42, 7, "meta")
    d = co.consumer_offsets(
        co.group_metadata_key("g"), co.group_metadata_value("consumer", 5, "range", None, 9)
    )
    assert (d["generation"], d["protocol"], d["leader"], d["members"]) == (5, "range", None, [])
    assert co.consumer_offsets(co.offset_commit_key("g", "t", 0), None)["tombstone"] is True
    d = co.transaction_state(
        co.transaction_key("tx"), co.transaction_value(9, 1, 60000, 1, {"t": [0, 2]}, 5, 4)
    )
    # Kafka's TransactionLogValue names (kseg <= 0.1 said "partitions"; the values are the same)
    assert (d["transactional_id"], d["state"], d["transaction_partitions"]) == (
        "tx",
        "Ongoing",
        [{"topic": "t", "partition_ids": [0, 2]}],
    )


@pytest.mark.parametrize(
    ("decode", "key", "value", "fragment"),
    [
        (
            co.consumer_offsets,
            co.offset_commit_key("g", "t", 0),
            co.offset_commit_value(1, 2)[:9],
            "value: truncated",
        ),
        (co.consumer_offsets, co.offset_commit_key("g", "t", 0)[:5], None, "key: truncated"),
        (
            co.consumer_offsets,
            struct.pack(">hh", 2, 500) + b"grp",
            None,
            "key: length 500 exceeds the data",
        ),
        (
            co.consumer_offsets,
            co.group_metadata_key("g"),
            co.group_metadata_value("c", 1, None, None, 0)[:-4] + struct.pack(">i", 10**9),
            "array length 1000000000",
        ),
        (
            co.transaction_state,
            co.transaction_key("tx"),
            co.transaction_value(1, 0, 1, 9, {}, 0, 0)[:-20],
            "value: truncated",
        ),
    ],
)
def test_lies_are_corruption_errors_naming_the_byte(decode, key, value, fragment):
    with pytest.raises(CorruptionError) as err:
        decode(key, value)
    assert fragment in err.value.message and "byte" in err.value.field


def test_dump_shows_the_decoding_error_and_goes_on(tmp_path, monkeypatch, capsysbinary):
    pdir = tmp_path / "__consumer_offsets-0"
    good = kseg.Record(
        key=co.offset_commit_key("g", "t", 0), value=co.offset_commit_value(5, 1), timestamp=1
    )
    bad = kseg.Record(
        key=co.offset_commit_key("g", "t", 1), value=co.offset_commit_value(6, 1)[:7], timestamp=2
    )
    with kseg.LogWriter(pdir) as w:
        w.append([bad, good])
    code, out, _ = run_cli(
        monkeypatch, capsysbinary, "dump", pdir / "00000000000000000000.log", "-f", "json"
    )
    decoded = [e["decoded"] for e in events(out) if e["type"] == "record"]
    assert code == 0 and "truncated" in decoded[0]["error"] and decoded[1]["offset"] == 5


# what each real __consumer_offsets log holds (PROVENANCE.md of each corpus)
_CLASSIC = {"offset_commit", "group_metadata"}
_REAL_OFFSETS_LOGS = {
    "kafka-4.1.0-dev/data/__consumer_offsets-0": _CLASSIC
    | {
        "consumer_group_metadata",
        "consumer_group_member_metadata",
        "consumer_group_target_assignment_metadata",
        "consumer_group_target_assignment_member",
        "consumer_group_current_member_assignment",
    },
    "kafka-4.1.0-dev/data/__consumer_offsets-1": _CLASSIC
    | {
        "share_group_member_metadata",
        "share_group_metadata",
        "share_group_target_assignment_metadata",
        "share_group_target_assignment_member",
        "share_group_current_member_assignment",
        "share_group_state_partition_metadata",
    },
    "kafka-4.1.0-dev/data/__consumer_offsets-2": set(),  # empty
}


def test_real_consumer_offsets_decode_completely(real_root):
    logs = sorted(real_root.rglob("__consumer_offsets-*/*.log"))
    assert len(logs) == 5  # Kafka 2.8 (value v3), 0.10.1 (magic 1, value v1), Kafka 4.1's three
    for log in logs:
        decoded = [
            co.consumer_offsets(r.key, r.value)
            for b in kseg.read_batches(log)
            if not b.is_control
            for r in b.records()
        ]
        kinds = {d["record"] for d in decoded}
        rel = str(log.parent.relative_to(real_root))
        assert kinds == _REAL_OFFSETS_LOGS.get(rel, _CLASSIC), log
        for d in decoded:  # a member's ConsumerProtocol bytes decode whenever the type says so
            for m in d.get("members", []) if d.get("protocol_type") == "consumer" else []:
                assert isinstance(m["subscription"], dict) and isinstance(m["assignment"], dict)
