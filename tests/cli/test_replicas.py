"""`kseg replicas` through the real entry point (a subprocess), on the lead's fixture roots
(kseg.fixtures.replicas): exit codes, stderr, the three formats, --leader, --topic, the usage
errors."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest

from kseg.fixtures.replicas import SCENARIOS, ReplicaSpec, Run, build, write_replica
from tests.helpers import doc, events, run_kseg


@pytest.fixture(scope="module")
def roots(tmp_path_factory) -> Path:
    """Every scenario's roots, each under its own directory of roots."""
    base = tmp_path_factory.mktemp("replicas")
    for name in SCENARIOS:
        build(base / name, name)
    return base


def _json(*args) -> tuple[int, list[dict], str]:
    proc = run_kseg("replicas", *args, "-f", "json")
    return proc.returncode, events(proc.stdout), proc.stderr.decode()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_scenario_exits_as_its_verdict(roots, name):
    sc = SCENARIOS[name]
    code, evs, err = _json(roots / name)
    (part,) = [e for e in evs if e["type"] == "partition"]
    reps = {Path(e["log_dir"]).name: e for e in evs if e["type"] == "replica"}
    assert part["leader"] == str(roots / name / sc.leader)
    assert reps[sc.leader]["role"] == "leader" and evs[1]["log_dir"] == part["leader"]
    got = {r: (e["truncate_to"], e["lost_records"], e["status"]) for r, e in reps.items()
           if r != sc.leader}  # fmt: skip
    want = {r: (sc.truncate_to[r], sc.lost[r], sc.status[r]) for r in sc.truncate_to}
    assert got == want
    bad = any(s in ("diverged", "damaged") for s in sc.status.values())
    assert code == (4 if bad else 0), err
    assert evs[-1]["type"] == "summary" and evs[-1]["partitions"] == 1
    assert [e["type"] for e in evs] == ["partition"] + ["replica"] * len(sc.replicas) + ["summary"]


def test_text_names_the_divergence_the_truncation_and_the_loss(roots):
    base = roots / "unclean"
    proc = run_kseg("replicas", base)
    assert proc.returncode == 4 and proc.stderr == b""
    lines = proc.stdout.decode().splitlines()
    assert lines[0].startswith(
        f"orders-0: 3 replicas, diverged, first divergence at offset 20; leader "
        f"{base / 'broker-3'} (latest_epoch: "
    )
    assert lines[0].endswith("; 10 records (270 bytes) lost")
    assert lines[1:] == [
        f"orders-0 [{base / 'broker-3'}]: leader (node 3): start 0 end 35 hw 35, epochs 0@0 1@20, "
        "last batch epoch 1",
        f"orders-0 [{base / 'broker-1'}]: diverged (node 1) at offset 20 (epoch 0, leader's 1): "
        "start 0 end 30 hw 30, epochs 0@0, last batch epoch 0; truncates to 20: loses 10 records (2 batches, 270 "
        "bytes), 1700000024000 (2023-11-14T22:13:44.000Z) .. 1700000029000 "
        "(2023-11-14T22:13:49.000Z)",
        f"orders-0 [{base / 'broker-2'}]: behind (node 2): start 0 end 10 hw 10, epochs 0@0, last "
        "batch epoch 0; nothing truncated",
        "total: 1 partitions, 0 consistent, 1 diverged, 0 damaged; 10 records (270 bytes) lost",
    ]


def test_consistent_replicas_exit_0(roots):
    proc = run_kseg("replicas", roots / "lag")
    assert proc.returncode == 0 and proc.stderr == b""
    out = proc.stdout.decode()
    assert ": 3 replicas, consistent; leader " in out and out.count("behind") == 2
    assert out.endswith("total: 1 partitions, 1 consistent, 0 diverged, 0 damaged; nothing lost\n")


def test_damage_is_named_with_file_and_byte_exit_4(roots):
    proc = run_kseg("replicas", roots / "damaged")
    assert proc.returncode == 4
    (line,) = [x for x in proc.stdout.decode().splitlines() if "broker-2]" in x]
    assert line.startswith(f"orders-0 [{roots / 'damaged' / 'broker-2'}]: damaged (node 2) ")
    log = roots / "damaged" / "broker-2" / "orders-0" / "00000000000000000000.log"
    assert f"; damage: {log}: byte " in line and "crc_mismatch" in line


def test_several_roots_given_one_by_one_as_a_directory_of_them(roots):
    base = roots / "twice"
    one = _json(base)[1]
    three = _json(*(base / f"broker-{n}" for n in (3, 1, 2)))[1]
    assert one == three  # the leader first, then the others in the order given (1, 2 here)


def test_a_replica_given_twice_is_compared_once(roots):
    """A root given twice, or a root and its own partition dir, is one replica: compared once
    (never with itself, its loss not counted twice), with a notice on stderr."""
    base = roots / "unclean"
    once = _json(base)[1]
    b1 = base / "broker-1"
    for args in ((base, b1), (b1, base / "broker-2", base / "broker-3", b1 / "orders-0")):
        code, evs, err = _json(*args)
        assert code == 4
        assert [e for e in evs if e["type"] == "summary"] == [once[-1]], args
        (part,) = [e for e in evs if e["type"] == "partition"]
        assert (part["replicas"], part["lost_records"]) == (3, 10)
        (line,) = err.splitlines()
        assert line == f"kseg: {b1 / 'orders-0'} given twice: each replica compared once"
    proc = run_kseg("replicas", b1, b1)  # one replica: nothing to compare, as one root alone
    assert proc.returncode == 16 and proc.stdout == b""
    assert "no partition has replicas in two or more" in proc.stderr.decode()


def test_a_segment_file_is_16_one_line(roots):
    """A segment is not a replica: comparing first segments would call diverged replicas
    consistent."""
    base = roots / "unclean"
    seg = base / "broker-1" / "orders-0" / "00000000000000000000.log"
    proc = run_kseg("replicas", seg, base / "broker-3" / "orders-0" / seg.name)
    assert proc.returncode == 16 and proc.stdout == b""
    (line,) = proc.stderr.decode().splitlines()
    assert line.startswith(f"kseg: Invalid value for PATH: {seg}: a segment file; ")


def test_leader_given(roots):
    base = roots / "unclean"
    code, evs, _ = _json(base, "--leader", base / "broker-1")
    part, lead = evs[0], evs[1]
    assert (part["leader"], part["leader_rule"]) == (str(base / "broker-1"), "given")
    assert lead["log_dir"] == str(base / "broker-1") and lead["role"] == "leader"
    assert {Path(e["log_dir"]).name: e["status"] for e in evs[2:4]} == {
        "broker-2": "behind",
        "broker-3": "diverged",  # its epoch 1 records are not the given leader's
    }
    # elected, broker-1 leads a new epoch from its log end: broker-3 keeps its epoch 0 (to 20)
    b3 = next(e for e in evs if Path(e.get("log_dir", "")).name == "broker-3")
    assert (b3["truncate_to"], b3["lost_records"]) == (20, 15)
    assert part["lost_records"] == 15
    assert code == 4


def test_leader_not_a_root_is_16_one_line(roots, tmp_path):
    base = roots / "unclean"
    for leader in (tmp_path, base, base / "broker-1" / "orders-0"):
        proc = run_kseg("replicas", base, "--leader", leader)
        assert proc.returncode == 16 and proc.stdout == b"", leader
        (line,) = proc.stderr.decode().splitlines()
        assert line.startswith("kseg: Invalid value for --leader: ") and str(leader) in line


def test_one_root_is_16_one_line(roots):
    proc = run_kseg("replicas", roots / "match" / "broker-1")
    assert proc.returncode == 16 and proc.stdout == b""
    (line,) = proc.stderr.decode().splitlines()
    assert "no partition has replicas in two or more of the roots given" in line


def test_topic_and_partition_select(roots, tmp_path):
    """A second topic beside the diverged orders-0: --topic and --partition choose."""
    base = tmp_path / "two"
    shutil.copytree(roots / "unclean", base)
    for n in (1, 2, 3):
        write_replica(base / f"broker-{n}" / "payments-0", ReplicaSpec((Run(0, 10),)))
    code, evs, _ = _json(base)
    assert code == 4 and evs[-1]["partitions"] == 2
    assert [(e["topic"], e["status"]) for e in evs if e["type"] == "partition"] == [
        ("orders", "diverged"),
        ("payments", "consistent"),
    ]
    code, evs, _ = _json(base, "--topic", "^pay")
    assert code == 0 and [e["topic"] for e in evs if e["type"] == "partition"] == ["payments"]
    assert _json(base, "--partition", "0", "--topic", "ord")[0] == 4
    proc = run_kseg("replicas", base, "--partition", "1")
    assert proc.returncode == 16 and "no partition matches" in proc.stderr.decode()


def test_table_one_row_per_replica(roots):
    proc = run_kseg("replicas", roots / "unclean", "-f", "table", env={**os.environ,
                    "COLUMNS": "300"})  # fmt: skip
    assert proc.returncode == 4
    text = proc.stdout.decode()
    replica = text.split("\n\n")[1].splitlines()
    assert replica[0] == "replica" and replica[1].split()[:5] == [
        "topic", "partition", "log_dir", "node_id", "status"
    ]  # fmt: skip
    assert [r.split()[4] for r in replica[2:]] == ["leader", "diverged", "behind"]
    assert "0@0 1@20" in replica[2]
    assert text.rstrip().splitlines()[-1].startswith("summary: partitions 1, consistent 0")


def test_unreadable_replica_is_8(roots, tmp_path):
    base = tmp_path / "fifo"
    shutil.copytree(roots / "match", base)
    os.mkfifo(base / "broker-2" / "orders-0" / "00000000000000099999.log")
    proc = run_kseg("replicas", base, timeout=60)
    assert proc.returncode & 8, proc.stderr
    assert "named pipe" in proc.stderr.decode() and proc.stderr.decode().count("\n") == 1


def test_the_documented_example_output_is_what_kseg_replicas_prints(tmp_path):
    readme = doc("commands/replicas.md")
    block = readme.split("```sh\n$ kseg replicas copies\n", 1)[1].split("```", 1)[0]
    build(tmp_path / "copies", "unclean")
    proc = run_kseg("replicas", "copies", cwd=tmp_path)
    assert proc.returncode == 4 and proc.stderr == b""
    assert proc.stdout.decode() == block


def _tree_bytes(base: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(base)): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()
    }


def test_export_lost_writes_what_each_losing_replica_loses(roots, tmp_path):
    base = roots / "twice"
    before = _tree_bytes(base)
    out = tmp_path / "lost"
    code, evs, err = _json(base, "--export-lost", out)
    assert code == 4 and err == ""
    (exp,) = [e for e in evs if e["type"] == "export"]  # broker-1 alone loses records
    (loser,) = [e for e in evs if e["type"] == "replica" and e["lost_records"]]
    dest = out / "broker-1"
    assert exp == {
        "type": "export",
        "topic": "orders",
        "partition": 0,
        "log_dir": str(base / "broker-1"),
        "dir": str(dest / "orders-0"),
        "jsonl": str(dest / "orders-0.jsonl"),
        "parquet": exp["parquet"],  # with pyarrow: the .parquet beside it
        "records": loser["lost_records"],
    }
    assert exp["parquet"] in (None, str(dest / "orders-0.parquet"))
    assert [e["type"] for e in evs].index("export") == len(evs) - 2  # after its partition's
    lines = (dest / "orders-0.jsonl").read_bytes().splitlines()
    offsets = [orjson.loads(x)["offset"] for x in lines]
    assert offsets == list(range(loser["lost_first_offset"], loser["lost_last_offset"] + 1))
    assert len(offsets) == 25 and _tree_bytes(base) == before  # the input is only read
    # the text line names where they went
    proc = run_kseg("replicas", base, "--export-lost", tmp_path / "again")
    again = tmp_path / "again" / "broker-1"
    assert f"orders-0 [{base / 'broker-1'}]: exported 25 records to {again / 'orders-0'} (" in (
        proc.stdout.decode()
    )


def test_export_lost_into_an_earlier_export_is_16_one_line(roots, tmp_path):
    base, out = roots / "unclean", tmp_path / "lost"
    assert run_kseg("replicas", base, "--export-lost", out).returncode == 4
    before = _tree_bytes(out)
    proc = run_kseg("replicas", base, "--export-lost", out)
    assert proc.returncode == 16 and proc.stdout == b""
    (line,) = proc.stderr.decode().splitlines()
    assert line.startswith("kseg: Invalid value for --export-lost: ")
    assert str(out / "broker-1" / "orders-0") in line
    assert _tree_bytes(out) == before


def test_export_lost_with_nothing_lost_writes_nothing(roots, tmp_path):
    code, evs, _ = _json(roots / "lag", "--export-lost", tmp_path / "lost")
    assert code == 0 and not [e for e in evs if e["type"] == "export"]
    assert not (tmp_path / "lost" / "broker-2").exists()
