"""`kseg replicas`' renderers on events shaped as the spec (issue 31) gives them: the text lines
(a partition's verdict, then one line per replica), the table (a row per replica) and JSON (the
events as they are)."""

from __future__ import annotations

import io

import orjson

from kseg.render import emit

T = 1_700_000_000_000


def _replica(log_dir: str, **kw) -> dict:
    ev = {
        "type": "replica",
        "topic": "orders",
        "partition": 0,
        "log_dir": log_dir,
        "node_id": None,
        "role": "follower",
        "status": "in_sync",
        "log_start_offset": 0,
        "log_end_offset": 150,
        "high_watermark": None,
        "cleaned_to": None,
        "latest_epoch": 4,
        "last_batch_epoch": 4,
        "epochs": [[0, 0], [2, 100], [4, 120]],
        "divergence": None,
        "truncate_to": 150,
        "truncate_fully": False,
        "lost_records": 0,
        "lost_bytes": 0,
        "lost_batches": 0,
        "lost_first_offset": None,
        "lost_last_offset": None,
        "lost_first_timestamp": None,
        "lost_last_timestamp": None,
        "damage": None,
    }
    ev.update(kw)
    return ev


PARTITION = {
    "type": "partition",
    "topic": "orders",
    "partition": 0,
    "replicas": 3,
    "leader": "/r/b2",
    "leader_rule": "latest_epoch",
    "leader_reason": "its leader epoch 4 is the latest",
    "status": "diverged",
    "first_divergence": 120,
    "lost_records": 20,
    "lost_bytes": 2400,
}
LEADER = _replica("/r/b2", node_id=2, role="leader", status="leader", truncate_to=None,
                  high_watermark=150)  # fmt: skip
DIVERGED = _replica(
    "/r/b1",
    node_id=1,
    status="diverged",
    log_end_offset=140,
    latest_epoch=3,
    last_batch_epoch=3,
    cleaned_to=50,
    epochs=[[0, 0], [3, 100]],
    divergence={"offset": 120, "epoch": 3, "leader_epoch": 4},
    truncate_to=120,
    lost_records=20,
    lost_bytes=2400,
    lost_batches=2,
    lost_first_offset=120,
    lost_last_offset=139,
    lost_first_timestamp=T,
    lost_last_timestamp=T + 60_000,
)
BEHIND = _replica("/r/b3", status="behind", log_end_offset=100, latest_epoch=2,
                  last_batch_epoch=None, epochs=[[0, 0], [2, 100]], truncate_to=100)  # fmt: skip
EXPORT = {
    "type": "export",
    "topic": "orders",
    "partition": 0,
    "log_dir": "/r/b1",
    "dir": "/x/lost/b1/orders-0",
    "jsonl": "/x/lost/b1/orders-0.jsonl",
    "parquet": None,
    "records": 20,
}
SUMMARY = {
    "type": "summary",
    "partitions": 1,
    "consistent": 0,
    "diverged": 1,
    "damaged": 0,
    "lost_records": 20,
    "lost_bytes": 2400,
}
EVENTS = [PARTITION, LEADER, DIVERGED, BEHIND, EXPORT, SUMMARY]


def _render(events: list[dict], fmt: str) -> str:
    out = io.BytesIO()
    list(emit("replicas", iter(events), fmt, out))
    return out.getvalue().decode()


def test_text_a_partition_line_then_one_line_per_replica():
    assert _render(EVENTS, "text").splitlines() == [
        "orders-0: 3 replicas, diverged, first divergence at offset 120; leader /r/b2 "
        "(latest_epoch: its leader epoch 4 is the latest); 20 records (2400 bytes) lost",
        "orders-0 [/r/b2]: leader (node 2): start 0 end 150 hw 150, epochs 0@0 2@100 4@120, last "
        "batch epoch 4",
        "orders-0 [/r/b1]: diverged (node 1) at offset 120 (epoch 3, leader's 4): start 0 end "
        "140, epochs 0@0 3@100, last batch epoch 3, cleaned to 50; truncates to 120: loses 20 records (2 batches, 2400 bytes), "
        "1700000000000 (2023-11-14T22:13:20.000Z) .. 1700000060000 (2023-11-14T22:14:20.000Z)",
        "orders-0 [/r/b3]: behind: start 0 end 100, epochs 0@0 2@100; nothing truncated",
        "orders-0 [/r/b1]: exported 20 records to /x/lost/b1/orders-0 (/x/lost/b1/orders-0.jsonl)",
        "total: 1 partitions, 0 consistent, 1 diverged, 0 damaged; 20 records (2400 bytes) lost",
    ]


def test_text_consistent_damaged_fully_truncated_and_no_epochs():
    part = {**PARTITION, "status": "consistent", "first_divergence": None, "lost_records": 0,
            "lost_bytes": 0, "leader_rule": "given", "leader_reason": "--leader"}  # fmt: skip
    lines = _render([part, _replica("/r/b1", status="in_sync")], "text").splitlines()
    assert lines == [
        "orders-0: 3 replicas, consistent; leader /r/b2 (given: --leader); nothing lost",
        "orders-0 [/r/b1]: in sync: start 0 end 150, epochs 0@0 2@100 4@120, last batch epoch 4; "
        "nothing truncated",
    ]
    # truncated below its end, yet every record truncated is the leader's: fetched again
    below = _replica("/r/b1", status="behind", truncate_to=120)
    assert _render([below], "text").endswith("; truncates to 120: nothing lost\n")
    damaged = _replica(
        "/r/b3",
        status="damaged",
        epochs=[],
        latest_epoch=None,
        truncate_to=0,
        truncate_fully=True,
        lost_records=1,
        lost_bytes=80,
        lost_batches=1,
        damage="/r/b3/orders-0/00000000000000000000.log: byte 70: crc_mismatch: stored 1",
    )
    assert _render([damaged], "text") == (
        "orders-0 [/r/b3]: damaged: start 0 end 150, epochs none, last batch epoch 4; truncates fully, starts at 0: "
        "loses 1 record (1 batch, 80 bytes); damage: /r/b3/orders-0/00000000000000000000.log: "
        "byte 70: crc_mismatch: stored 1\n"
    )


def test_text_an_export_without_record_files():
    bare = {**EXPORT, "jsonl": None, "records": 1}
    assert _render([bare], "text") == "orders-0 [/r/b1]: exported 1 record to /x/lost/b1/orders-0\n"


def test_json_is_the_events_as_they_are():
    lines = _render(EVENTS, "json").splitlines()
    assert [orjson.loads(x) for x in lines] == EVENTS


def test_table_a_row_per_replica_epochs_compact(monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")  # wider than the rows: nothing wraps
    text = _render(EVENTS, "table")
    tables = text.split("\n\n")
    assert [t.splitlines()[0] for t in tables if t.strip()][:3] == [
        "partition",
        "replica",
        "export",
    ]
    replica = tables[1].splitlines()
    head = replica[1].split()
    assert head == ["topic", "partition", "log_dir", "node_id", "status", "log_start_offset",
                    "log_end_offset", "high_watermark", "cleaned_to", "epochs",
                    "last_batch_epoch", "divergence", "truncate_to",
                    "lost_records", "lost_bytes", "lost_first_timestamp",
                    "lost_last_timestamp"]  # fmt: skip
    rows = replica[2:]
    assert len(rows) == 3
    assert rows[0].split() == ["orders", "0", "/r/b2", "2", "leader", "0", "150", "150", "0@0",
                               "2@100", "4@120", "4", "0", "0"]  # fmt: skip
    assert rows[1].split() == ["orders", "0", "/r/b1", "1", "diverged", "0", "140", "50", "0@0",
                               "3@100", "3", "120", "120", "20", "2400", "1700000000000",
                               "2023-11-14T22:13:20.000Z", "1700000060000",
                               "2023-11-14T22:14:20.000Z"]  # fmt: skip
    partition = tables[0].splitlines()
    assert partition[1].split()[:5] == ["topic", "partition", "replicas", "status",
                                        "first_divergence"]  # fmt: skip
    assert text.rstrip().splitlines()[-1] == (
        "summary: partitions 1, consistent 0, diverged 1, damaged 0, lost_records 20, "
        "lost_bytes 2400"
    )
