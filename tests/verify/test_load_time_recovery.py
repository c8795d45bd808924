"""What Kafka's LogLoader does while LOADING a partition, before (and whatever) recoverLog does:

- ``loadSegmentFiles`` recovers a segment whose ``LogSegment.sanityCheck`` fails (no `.index`:
  NoSuchFileException; a `.txnindex` of a partial entry: CorruptIndexException) on every start,
  and that truncation deletes no later segment;
- ``load`` completes a leftover `.swap` (an interrupted compaction) or deletes it (an unfinished
  split: at or above the lowest `.cleaned` offset).

Checked against a real 4.1.0 broker in test_kafka_recovery_oracle.py; these need no broker.
"""

from __future__ import annotations

import shutil

from tests.helpers import events, run_kseg


def _copy(tree, tmp_path, name="orders-0"):
    root = tmp_path / "logs"
    root.mkdir(parents=True)
    shutil.copytree(tree / name, root / name)
    return root, root / name


def _batches(log) -> list[dict]:
    return [e for e in events(run_kseg("dump", log, "--batches-only", "-f", "json").stdout)
            if e["type"] == "batch"]  # fmt: skip


def _recovery(root) -> tuple[int, list[dict]]:
    proc = run_kseg("verify", root, "-f", "json")
    recs = [e for e in events(proc.stdout) if e["type"] == "kafka_recovery"]
    return proc.returncode, (recs[0]["actions"] if recs else [])


def _flip(log, batch: int) -> int:
    b = _batches(log)[batch]
    at = b["position"] + b["size"] - 3  # inside the records: CRC-covered
    data = bytearray(log.read_bytes())
    data[at] ^= 0x40
    log.write_bytes(bytes(data))
    return b["position"]


def test_a_corrupt_segment_without_index_is_cut_on_every_start_keeping_later_ones(tree, tmp_path):
    root, pdir = _copy(tree, tmp_path)
    logs = sorted(pdir.glob("*.log"))
    assert len(logs) >= 3
    bad = _flip(logs[1], 2)
    logs[1].with_suffix(".index").unlink()
    rc, actions = _recovery(root)
    assert rc & 4
    assert actions == [
        {"action": "truncate", "file": str(logs[1]), "position": bad, "when": "every_start",
         "reason": "missing_index"}
    ]  # fmt: skip
    # with its .index, the same damage is recoverLog's: cut after an unclean shutdown, and the
    # later segments deleted
    _, pdir2 = _copy(tree, tmp_path / "b")
    logs2 = sorted(pdir2.glob("*.log"))
    _flip(logs2[1], 2)
    _, actions2 = _recovery(pdir2.parent)
    assert [(a["action"], a["when"]) for a in actions2] == [
        ("truncate", "unclean_shutdown"),
        ("delete_later_segments", "unclean_shutdown"),
    ]


def test_a_partial_txnindex_makes_the_segment_recovered_while_loading(tree, tmp_path):
    root, pdir = _copy(tree, tmp_path)
    logs = sorted(pdir.glob("*.log"))
    bad = _flip(logs[1], 1)
    logs[1].with_suffix(".txnindex").write_bytes(bytes(35))
    _, actions = _recovery(root)
    assert [(a["action"], a["position"], a.get("reason")) for a in actions] == [
        ("truncate", bad, "partial_txnindex")
    ]


def test_a_leftover_swap_is_swapped_in_replacing_the_segments_it_covers(tree, tmp_path):
    root, pdir = _copy(tree, tmp_path)
    logs = sorted(pdir.glob("*.log"))
    cut = _batches(logs[1])[2]["position"]
    swap = logs[1].with_name(logs[1].name + ".swap")
    swap.write_bytes(logs[1].read_bytes()[:cut])
    rc, actions = _recovery(root)
    assert rc == 0  # a leftover file is info: Kafka completes it, nothing is lost
    (act,) = actions
    assert act["action"] == "complete_swap" and act["file"] == str(swap)
    base = int(logs[1].stem)
    assert act["offset"] == base and act["when"] == "every_start"
    # every file named with an offset in [swap base, swap's next offset): this segment's
    assert act["replaces"] == sorted(str(p) for p in pdir.iterdir() if p.stem == logs[1].stem)


def test_a_swap_at_or_above_a_cleaned_file_is_deleted(tree, tmp_path):
    root, pdir = _copy(tree, tmp_path)
    logs = sorted(pdir.glob("*.log"))
    swap = logs[1].with_name(logs[1].name + ".swap")
    swap.write_bytes(logs[1].read_bytes())
    logs[1].with_name(logs[1].name + ".cleaned").write_bytes(logs[1].read_bytes())
    _, actions = _recovery(root)
    assert actions == [{"action": "delete_swap", "file": str(swap), "when": "every_start"}]


def test_after_a_clean_shutdown_a_zero_size_entry_in_the_last_segment_stops_the_broker(
    tree, tmp_path
):
    """Nothing is recovered after a clean shutdown, but LogSegment.readNextOffset reads the last
    segment's last batches: FileLogInputStream.nextBatch throws on a size field below 14. A torn
    tail (an entry past the end) ends that read quietly."""
    root, pdir = _copy(tree, tmp_path)
    last = sorted(pdir.glob("*.log"))[-1]
    size = last.stat().st_size
    with open(last, "ab") as f:
        f.write(bytes(4096))
    (root / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":1}')
    rc, actions = _recovery(root)
    assert rc & 4
    assert actions[-1] == {"action": "fail_to_start", "file": str(last), "position": size,
                           "when": "every_start", "cause": "record_size"}  # fmt: skip
    (root / ".kafka_cleanshutdown").unlink()  # unclean: recovery cuts the zeros first
    assert [a["action"] for a in _recovery(root)[1]] == ["truncate"]
    (root / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":1}')
    import os

    os.truncate(last, size - 5)  # torn instead: kept, no failure
    assert "fail_to_start" not in [a["action"] for a in _recovery(root)[1]]


def test_the_repair_of_a_segment_recovered_while_loading_keeps_the_later_segments(tree, tmp_path):
    """LogLoader.loadSegmentFiles -> recoverSegment cuts a segment without `.index` on every
    start and deletes no later segment (an offset gap is legal): the repair truncates that
    segment only, as Kafka does, and moves nothing (as --keep-later-segments)."""
    root, pdir = _copy(tree, tmp_path)
    logs = sorted(pdir.glob("*.log"))
    bad = _flip(logs[1], 2)
    logs[1].with_suffix(".index").unlink()
    damaged = {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    later = {p: b for p, b in damaged.items() if p.parent == pdir and p.stem > logs[1].stem}
    assert any(p.suffix == ".log" for p in later)
    proc = run_kseg("verify", root, "--repair", "--quarantine", tmp_path / "q", "-f", "json")
    assert proc.returncode == 1, proc.stdout
    evs = events(proc.stdout)
    actions = [e for e in evs if e["type"] == "repair_action"]
    assert not [a for a in actions if a["action"] == "move"], actions
    (cut,) = [a for a in actions if a["action"] == "truncate"]
    assert (cut["file"], cut["position"]) == (str(logs[1]), bad)
    assert {a["file"] for a in actions} <= {
        str(p) for p in pdir.iterdir() if p.stem == logs[1].stem
    }
    assert {p: p.read_bytes() for p in later} == later  # the later segments: untouched
    assert run_kseg("verify", root).returncode == 0
    (qdir,) = [e["quarantine"] for e in evs if e["type"] == "repair_done"]
    assert run_kseg("restore", qdir).returncode == 0
    restored = {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    assert {p: b for p, b in restored.items() if p.name != ".lock"} == {
        p: b for p, b in damaged.items() if p.name != ".lock"
    }
