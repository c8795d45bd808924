"""kseg salvage from leftovers: what an earlier `verify --repair` quarantined
(--from-quarantine), Kafka's `.log.deleted` segments (--include-deleted), a deleted topic's
`-delete` dir (--to): exactly the intact entries above the live log end come back (ground
truth: kseg.fixtures.truth), an offset never twice, `kseg restore` gives back the input byte
for byte; a log that would end below its log start offset is reset as Kafka does."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kseg.fixtures.damage import BitFlips, ZeroPage
from kseg.fixtures.truth import damage_partition, partition_truth
from kseg.format import checkpoint as cp
from kseg.index.rebuild import rebuild_target
from kseg.storage.tree import Target, segment_logs
from tests.helpers import events, run_kseg
from tests.salvage.cases import TOPIC, batches, damaged, hashes, write_partition
from tests.salvage.test_salvage import salvage, the


def _partition(tmp_path: Path, damage_of) -> tuple[Path, Path, object]:
    """A LogWriter partition under tmp_path/logs damaged by ``damage_of(first segment)`` with
    kseg.fixtures.damage; returns (log dir, partition dir, ground truth)."""
    original = tmp_path / "original" / f"{TOPIC}-0"
    write_partition(original)
    first = segment_logs(original)[0]
    damages = {first.name: damage_of(first)}
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    pdir = damage_partition(original, log_dir / original.name, damages)
    for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint"):
        (log_dir / name).write_bytes(
            cp.encode_offset_checkpoint([cp.TopicPartitionOffset(TOPIC, 0, 0)])
        )
    return log_dir, pdir, partition_truth(original, damages)


def _flip(log: Path) -> BitFlips:
    pos, size, _, _ = batches(log)[len(batches(log)) // 2]
    return BitFlips(((pos + size // 2) * 8,))


def _zero_page(log: Path) -> ZeroPage:
    return ZeroPage(4096, 8192)


def offsets(pdir: Path) -> list[int]:
    """The offsets of the live segments' records (dump reads `.deleted` ones too)."""
    proc = run_kseg("dump", *segment_logs(pdir), "-f", "json")
    assert proc.returncode == 0, proc.stderr
    return [e["offset"] for e in events(proc.stdout) if e["type"] == "record"]


@pytest.mark.parametrize("damage_of", [_flip, _zero_page], ids=["flip", "zero_page"])
def test_from_quarantine_gives_back_exactly_the_intact_entries_and_restore_undoes_it(
    tmp_path, damage_of
):
    log_dir, pdir, truth = _partition(tmp_path, damage_of)
    damaged_input = hashes(tmp_path / "logs")
    assert run_kseg("verify", "--repair", pdir).returncode == 1
    assert offsets(pdir) < list(truth.intact_offsets)  # Kafka's truncation: the rest is gone
    repaired = hashes(tmp_path / "logs")
    quarantine = tmp_path / "kseg-quarantine"
    code, evs, proc = salvage(pdir, "--from-quarantine", quarantine)
    assert code == 1, proc.stderr
    ev = the(evs)
    assert offsets(pdir) == list(truth.intact_offsets)  # exactly: nothing invented or lost
    assert run_kseg("verify", pdir).returncode == 0
    assert ev["salvage_keeps"]["records"] == len(truth.intact_offsets)
    assert [tuple(r) for r in ev["lost"]["offsets"]] == list(truth.lost_ranges)
    live, *back = ev["kept_from"]
    assert live["origin"] == "live" and live["records"] < len(truth.intact_offsets)
    assert back and all(k["origin"] == "quarantine" and k["put_back_as"] for k in back)
    assert live["records"] + sum(k["records"] for k in back) == len(truth.intact_offsets)
    # again: everything is in the live log now; each offset is kept once, the rest overlaps
    code, evs, _ = salvage(pdir, "--from-quarantine", quarantine / "logs")
    ev2 = the(evs)
    assert code == 0 and ev2["status"] == "clean" and ev2["overlaps"]
    assert offsets(pdir) == list(truth.intact_offsets)
    assert run_kseg("restore", ev["quarantine"]).returncode == 0
    assert hashes(tmp_path / "logs") == repaired
    (run,) = [
        p for p in (quarantine / "logs").iterdir() if p.name != Path(ev["quarantine"]).parent.name
    ]
    assert run_kseg("restore", run).returncode == 0
    assert hashes(tmp_path / "logs") == damaged_input


def _kafka_recovered(tmp_path: Path) -> tuple[Path, list[int], set[str]]:
    """A partition as Kafka's recovery leaves it after a flipped byte in its first segment,
    crashed before file.delete.delay.ms: the segment truncated at the bad batch, the later
    segments renamed `.log.deleted` (with their indexes). Returns (partition dir, the offsets
    that can come back, the .deleted names)."""
    case = damaged(tmp_path, "flip")
    first_lost = min(case.lost)
    logs = segment_logs(case.pdir)
    seg0, later = logs[0], logs[1:]
    cut = next(
        pos for pos, _, first, last in batches(case.original / seg0.name) if last >= first_lost
    )
    with open(seg0, "r+b") as f:
        f.truncate(cut)
    rebuild_target(Target(case.pdir, [seg0]))  # as Kafka's recovery rebuilds them
    names = set()
    for log in later:
        for p in case.pdir.glob(log.stem + ".*"):
            p.rename(p.with_name(p.name + ".deleted"))
        names.add(log.name + ".deleted")
    base1 = int(later[0].stem)
    want = [o for o in offsets(case.original) if o < first_lost or o >= base1]
    return case.pdir, want, names


def test_deleted_segments_are_read_only_with_include_deleted_and_restore_undoes_it(tmp_path):
    pdir, want, names = _kafka_recovered(tmp_path)
    before = hashes(tmp_path / "logs")
    code, evs, _ = salvage(pdir)  # by default .deleted segments are Kafka's to delete
    assert code == 0 and the(evs)["status"] == "clean"
    assert hashes(tmp_path / "logs") == before
    code, evs, proc = salvage(pdir, "--include-deleted")
    assert code == 1, proc.stderr
    ev = the(evs)
    assert offsets(pdir) == want
    assert run_kseg("verify", pdir).returncode == 0
    assert {Path(k["file"]).name for k in ev["kept_from"][1:]} == names
    assert {k["origin"] for k in ev["kept_from"][1:]} == {"deleted"}
    assert all((pdir / n).exists() for n in names)  # the input's leftovers are only read
    assert run_kseg("restore", ev["quarantine"]).returncode == 0
    assert hashes(tmp_path / "logs") == before


def test_overlapping_offsets_are_kept_once(tmp_path):
    """A `.deleted` copy of a live segment (a compaction's leftover): the live log wins, each
    offset comes back once, the overlap is reported."""
    pdir, want, names = _kafka_recovered(tmp_path)
    seg0 = segment_logs(pdir)[0]
    shutil.copy(seg0, pdir / (seg0.name + ".deleted"))  # overlaps the live log entirely
    code, evs, proc = salvage(pdir, "--include-deleted")
    assert code == 1, proc.stderr
    ev = the(evs)
    got = offsets(pdir)
    assert got == want and len(got) == len(set(got))
    assert ev["overlaps"] and {Path(x["file"]).name for x in ev["overlaps"]} == {
        seg0.name + ".deleted"
    }
    assert run_kseg("verify", pdir).returncode == 0


def test_a_quarantine_and_a_deleted_segment_holding_the_same_offsets_give_them_back_once(tmp_path):
    case = damaged(tmp_path, "flip")
    assert run_kseg("verify", "--repair", case.pdir).returncode == 1
    (run,) = (tmp_path / "kseg-quarantine" / "logs").iterdir()
    moved = sorted((run / case.pdir.name).glob("*.log"))
    shutil.copy(moved[0], case.pdir / (moved[0].name + ".deleted"))
    code, evs, proc = salvage(case.pdir, "--from-quarantine", run, "--include-deleted")
    assert code == 1, proc.stderr
    ev = the(evs)
    got = offsets(case.pdir)
    assert got == [o for o in offsets(case.original) if o not in case.lost]
    assert len(got) == len(set(got)) and ev["overlaps"]
    assert run_kseg("verify", case.pdir).returncode == 0


def test_a_deleted_topic_s_dir_is_salvaged_with_to_only(tmp_path):
    case = damaged(tmp_path, "flip")
    gone = case.pdir.with_name(f"{case.pdir.name}.{'ab' * 16}-delete")
    case.pdir.rename(gone)
    before = hashes(tmp_path / "logs")
    code, evs, proc = salvage(gone)  # in place: Kafka removes the dir at start
    assert code == 0 and b"with --to DIR" in proc.stderr
    assert not [e for e in evs if e["type"] == "salvage"]
    out = tmp_path / "spare"
    code, evs, proc = salvage(gone, "--to", out)
    assert code == 1, proc.stderr
    assert the(evs)["to"] == str(out / case.pdir.name)
    assert offsets(out / case.pdir.name) == [
        o for o in offsets(case.original) if o not in case.lost
    ]
    assert run_kseg("verify", out / case.pdir.name).returncode == 0
    assert hashes(tmp_path / "logs") == before


def test_no_quarantine_of_the_partition_is_said_and_changes_nothing(tmp_path):
    case = damaged(tmp_path, "magic")
    (tmp_path / "empty").mkdir()
    code, evs, proc = salvage(case.pdir, "--from-quarantine", tmp_path / "empty", "--dry-run")
    assert code == 4 and b"holds no quarantine of" in proc.stderr


def test_a_log_ending_below_its_log_start_offset_is_reset_as_kafka_does(tmp_path):
    """The last batch damaged and the log start offset inside it: the salvaged log would end
    below it, so (as Kafka's LogLoader) every segment goes and one empty segment is created at
    the log start offset; restore undoes it."""
    log_dir = tmp_path / "logs"
    pdir = log_dir / f"{TOPIC}-0"
    write_partition(pdir)
    last = segment_logs(pdir)[-1]
    pos, size, first, _ = batches(last)[-1]
    start = first + 1
    for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint"):
        (log_dir / name).write_bytes(
            cp.encode_offset_checkpoint([cp.TopicPartitionOffset(TOPIC, 0, start)])
        )
    data = bytearray(last.read_bytes())
    data[pos + size // 2] ^= 0xFF
    last.write_bytes(bytes(data))
    before = hashes(log_dir)
    code, evs, proc = salvage(pdir, "--to", tmp_path / "spare")
    assert code == 1, proc.stderr
    spare = tmp_path / "spare" / pdir.name
    assert sorted(p.name for p in spare.glob("*.log")) == [f"{start:020d}.log"]
    code, evs, proc = salvage(pdir)
    assert code == 1, proc.stderr
    ev = the(evs)
    assert ev["salvage_keeps"]["reset_to"] == start and ev["salvage_keeps"]["records"] == 0
    assert [p.name for p in segment_logs(pdir)] == [f"{start:020d}.log"]
    assert (pdir / f"{start:020d}.log").stat().st_size == 0
    assert run_kseg("verify", pdir).returncode == 0
    assert run_kseg("restore", ev["quarantine"]).returncode == 0
    assert hashes(log_dir) == before


def test_a_put_back_name_taken_by_a_live_file_is_refused(tmp_path):
    case = damaged(tmp_path, "flip")
    assert run_kseg("verify", "--repair", case.pdir).returncode == 1
    first_back = max(case.lost) + 1
    (case.pdir / f"{first_back:020d}.log").write_bytes(b"")  # an empty live segment there
    before = hashes(tmp_path / "logs")
    code, evs, proc = salvage(case.pdir, "--from-quarantine", tmp_path / "kseg-quarantine")
    assert code == 8 and b"exists, and a leftover's entries would go back" in proc.stderr
    assert hashes(tmp_path / "logs") == before
