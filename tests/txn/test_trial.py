"""`kseg txn` as a new operator tries it: combinations found wanting in the trial of issue #30
(through the real entry point)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kseg.fixtures.transactions import MINUTE, T0, build_root
from tests.helpers import events, run_kseg


@pytest.fixture(scope="module")
def fixture_root(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("txntrial") / "logs"
    return root, build_root(root)


def _deleted_first_segment(root: Path, dest: Path) -> Path:
    """payments-0 whose first segment was deleted by retention: its log starts at offset 15,
    mid-transaction (tx-span opened at 13); the producer snapshot at 15 says so."""
    pdir = dest / "payments-0"
    shutil.copytree(root / "payments-0", pdir)
    for f in pdir.glob("00000000000000000000.*"):
        f.unlink()
    return pdir


def test_at_before_the_log_start_state_is_not_made_up(fixture_root, tmp_path):
    """--at earlier than the producer state the log starts with (the snapshot at the log start
    holds writes after T): the partition as it stood then is not in the data; said, never a
    negative idle time."""
    root, _ = fixture_root
    pdir = _deleted_first_segment(root, tmp_path)
    proc = run_kseg("txn", tmp_path, "-f", "json", "--at", str(T0 + MINUTE))
    assert proc.returncode == 0, proc.stderr
    evs = events(proc.stdout)
    assert all(e.get("idle_ms") is None or e["idle_ms"] >= 0 for e in evs)
    assert [e for e in evs if e["type"] == "open_transaction"] == []
    err = proc.stderr.decode()
    (line,) = [x for x in err.splitlines() if str(pdir) in x]
    assert "not in the data" in line and "log start offset 15" in line
    # at a time the log covers, the snapshot's open transaction is shown as before
    proc = run_kseg("txn", tmp_path, "-f", "json", "--at", str(T0 + 2 * MINUTE + 2))
    opens = [e for e in events(proc.stdout) if e["type"] == "open_transaction"]
    assert [(e["producer_id"], e["first_offset"]) for e in opens] == [(1003, 13)]
    assert opens[0]["idle_ms"] >= 0


@pytest.mark.parametrize("how", ["path", "topic"])
def test_an_internal_topic_asked_for_is_shown(fixture_root, how):
    """An internal topic without transactions is left out of a root's answer, but one asked for
    (its partition dir given by path, or --topic) is answered, not met with 0 partitions."""
    root, _ = fixture_root
    args = [root / "__transaction_state-0"] if how == "path" else [root, "--topic", "^__trans"]
    proc = run_kseg("txn", *args, "-f", "json")
    assert proc.returncode == 0, proc.stderr
    evs = events(proc.stdout)
    (part,) = [e for e in evs if e["type"] == "partition"]
    assert (part["topic"], part["open"], part["last_stable_offset"]) == (
        "__transaction_state", 0, part["log_end_offset"]
    )  # fmt: skip
    assert [e["partitions"] for e in evs if e["type"] == "summary"] == [1]
    # a root's answer leaves it out (it holds no transaction)
    proc = run_kseg("txn", root, "-f", "json", "--partition", "0")
    topics = {e["topic"] for e in events(proc.stdout) if e["type"] == "partition"}
    assert topics == {"payments", "audit"}


def test_an_unreadable_producer_snapshot_is_said(fixture_root, tmp_path):
    """The snapshot a log starting mid-transaction needs fails its CRC: the replay starts from
    the log alone (as Kafka's recovery does), and one stderr line names the file and byte."""
    root, _ = fixture_root
    pdir = _deleted_first_segment(root, tmp_path)
    snap = pdir / "00000000000000000015.snapshot"
    data = bytearray(snap.read_bytes())
    data[4] ^= 0xFF  # inside the stored CRC
    snap.write_bytes(bytes(data))
    proc = run_kseg("txn", tmp_path, "-f", "json")
    assert proc.returncode == 0, proc.stderr
    lines = [x for x in proc.stderr.decode().splitlines() if str(snap) in x]
    assert len(lines) == 1 and lines[0].startswith(f"kseg: {snap}: byte 2: "), lines
    assert "the replay starts from the log alone" in lines[0]
    assert [e["type"] for e in events(proc.stdout)][-1] == "summary"


def test_the_abort_command_quotes_the_bootstrap_server(fixture_root):
    """The printed command is pasted into a shell: --bootstrap-server is quoted as the topic
    is (a plain host:port list stays as typed)."""
    import shlex

    root, _ = fixture_root
    for given in ("b1:9092,b2:9092", "b1:9092; touch x"):
        proc = run_kseg("txn", root, "-f", "json", "--bootstrap-server", given)
        cmds = [e["abort_command"] for e in events(proc.stdout) if e.get("abort_command")]
        assert cmds and all(shlex.split(c)[2] == given for c in cmds), cmds
    assert (
        "--bootstrap-server b1:9092,b2:9092 abort"
        in run_kseg("txn", root, "--bootstrap-server", "b1:9092,b2:9092").stdout.decode()
    )


def test_a_damaged_coordinator_log_judges_no_missing_transactional_id(fixture_root, tmp_path):
    fixture_root, _ = fixture_root
    """`__transaction_state` cut inside its last batch (the one holding every id's latest
    state): its replay stops there, as Kafka's recovery would, and a producer id found in
    none of the records read is not called hanging on that partial view (it is unjudged)."""
    root = tmp_path / "root"
    shutil.copytree(fixture_root, root)
    log = root / "__transaction_state-0" / "00000000000000000000.log"
    log.write_bytes(log.read_bytes()[:-10])
    r = run_kseg("txn", root, "-f", "json")
    assert r.returncode == 4, r.stderr  # the damage
    opened = {e["producer_id"]: e for e in events(r.stdout) if e["type"] == "open_transaction"}
    assert opened[9009]["status"] == "unjudged" and opened[9009]["hanging"] is False
    err = r.stderr.decode()
    assert "__transaction_state-0 was not read whole" in err
    assert "00000000000000000000.log" in err and "byte" in err
