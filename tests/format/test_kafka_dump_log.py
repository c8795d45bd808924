"""kseg against Kafka's own decoding: every record kafka-dump-log 4.1.0 decoded from the real
broker's internal files (the `<file>.kafka-dump-log.txt` beside each) kseg decodes to the same
values, field by field (Kafka's camelCase names -> snake_case)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kseg.dump.options import DumpOptions
from kseg.dump.plan import dump_paths
from kseg.format.metadata import CONTROL_NAMES
from kseg.format.schema import snake

CORPUS = "kafka-4.1.0-dev/data"
_RECORD = re.compile(r"^\| offset: (\d+) ")
_CONTROL = re.compile(
    r" headerKeys: \[\] (LeaderChange:|KRaftVersion|KRaftVoters|SnapshotHeader|SnapshotFooter) "
)
_SNAPSHOT = re.compile(r"^Snapshot end offset: (\d+), epoch: (\d+)$")


def _dump_files(real_root: Path) -> list[Path]:
    root = real_root / CORPUS
    if not root.exists():
        pytest.skip("the Kafka 4.1 corpus is not here")
    return sorted(root.rglob("*.kafka-dump-log.txt"))


def _json_after(line: str, marker: str):
    at = line.index(marker) + len(marker)
    if line.startswith("<DELETE>", at):
        return None
    value, _ = json.JSONDecoder().raw_decode(line, at)
    return value


def _key(name: str) -> str:
    return snake(name[0].upper() + name[1:])


def same(kafka, ours, path: str) -> None:
    """Every field Kafka printed is in ours, with the same value."""
    if isinstance(kafka, dict):
        assert isinstance(ours, dict), path
        for k, v in kafka.items():
            assert _key(k) in ours, f"{path}.{_key(k)} missing (kseg has {sorted(ours)})"
            same(v, ours[_key(k)], f"{path}.{_key(k)}")
    elif isinstance(kafka, list):
        assert isinstance(ours, list) and len(ours) == len(kafka), path
        for i, (a, b) in enumerate(zip(kafka, ours, strict=True)):
            same(a, b, f"{path}[{i}]")
    else:
        assert (
            kafka == ours
            and type(kafka) is type(ours)
            or (isinstance(kafka, float) and kafka == ours)
        ), f"{path}: kafka {kafka!r}, kseg {ours!r}"


def _compare_file(txt: Path) -> int:
    data_file = txt.with_name(txt.name.removesuffix(".kafka-dump-log.txt"))
    events = list(dump_paths([data_file], DumpOptions()))
    assert not [e for e in events if e["type"] == "error"], data_file
    by_offset = {e["offset"]: e for e in events if e["type"] in ("record", "control")}
    head = events[0]
    compared = 0
    for line in txt.read_text().splitlines():
        m = _SNAPSHOT.match(line)
        if m:
            assert (head["snapshot_end_offset"], head["snapshot_epoch"]) == tuple(
                map(int, m.groups())
            )
        m = _RECORD.match(line)
        if not m:
            continue
        offset = int(m.group(1))
        ev = by_offset.pop(offset)
        where = f"{data_file.name}@{offset}"
        control = _CONTROL.search(line)
        if control:
            name = control.group(1).rstrip(":")
            decoded = ev["decoded"]
            assert CONTROL_NAMES[decoded["control_type"]] == name, where
            same(_json_after(line, control.group(0)), decoded["data"], where)
        elif "endTxnMarker:" in line:
            assert ev["type"] == "control" and f"endTxnMarker: {ev['control_type']} " in line
        elif " key: " in line:  # a coordinator record
            decoded = ev["decoded"]
            assert "error" not in decoded, (where, decoded)
            key = _json_after(line, " key: ")
            assert decoded["key_version"] == int(key["type"]), where
            same(key["data"], decoded, where)
            value = _json_after(line, " payload: ")
            if value is None:
                assert decoded["tombstone"] is True, where
            else:
                assert decoded["value_version"] == int(value["version"]), where
                same(value["data"], decoded, where)
        else:  # a metadata record
            decoded = ev["decoded"]
            value = _json_after(line, " payload: ")
            assert decoded["record"] == value["type"].lower(), where
            assert decoded["version"] == value["version"], where
            same(value["data"], decoded["data"], where)
        compared += 1
    assert not by_offset, (
        f"{data_file}: kseg shows records kafka-dump-log does not: {sorted(by_offset)[:5]}"
    )
    return compared


def test_every_record_kafka_dump_log_decodes_kseg_decodes_the_same(real_root):
    txts = _dump_files(real_root)
    # __cluster_metadata log + 7 snapshots, bootstrap.checkpoint, 3 offsets, 1 share state, 2 txn
    assert len(txts) == 15
    total = {}
    for txt in txts:
        topic = txt.parent.name.rsplit("-", 1)[0] if txt.parent.name.startswith("__") else "root"
        total[topic] = total.get(topic, 0) + _compare_file(txt)
    # each family really compared: the numbers come from PROVENANCE.md's totals
    assert total["__cluster_metadata"] > 1000 and total["root"] >= 3
    assert total["__consumer_offsets"] > 40 and total["__transaction_state"] > 30
    assert total["__share_group_state"] >= 2
