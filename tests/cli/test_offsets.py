"""`kseg offsets` through the real entry point: every format, every exit code, the reset-csv
read the way kafka-consumer-groups reads it."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from kseg.fixtures.offsets import EXPECTED, GROUP, T0, write_offsets_partition
from tests.helpers import run_kseg

# Kafka's legal topic names (Topic.validate): no comma, so a row is never ambiguous
_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    r = tmp_path_factory.mktemp("offsets-cli")
    write_offsets_partition(r / "__consumer_offsets-0")
    return r


def _reset_plan(text: str) -> dict:
    """kafka-consumer-groups' --from-file for one group (ConsumerGroupCommand.parseResetPlan:
    CSV rows topic,partition,offset, no header): every row exactly three columns, a legal topic,
    integer partition and offset."""
    plan = {}
    for row in csv.reader(io.StringIO(text)):
        assert len(row) == 3, row
        topic, partition, offset = row
        assert _TOPIC.match(topic)
        plan[(topic, int(partition))] = int(offset)
    return plan


def test_text(root):
    p = run_kseg("offsets", root, "--group", GROUP, "--now", T0)
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode()
    assert out.splitlines()[0].startswith(f'group "{GROUP}": classic Empty')
    assert "orders-0: offset 130 " in out and "txn-0: offset 40 " in out
    assert "orders-1" not in out  # deleted by its tombstone
    assert b"partition count of __consumer_offsets unknown" in p.stderr


def test_json(root):
    p = run_kseg("offsets", root, "--group", GROUP, "-f", "json", "--at", T0 + 150_000)
    assert p.returncode == 0, p.stderr
    events = [json.loads(line) for line in p.stdout.splitlines()]
    assert events[0]["type"] == "group" and events[0]["group"] == GROUP
    offs = {(e["topic"], e["partition"]): e for e in events if e["type"] == "offset"}
    assert {k: e["offset"] for k, e in offs.items()} == {
        ("orders", 0): 110, ("orders", 1): 15, ("txn", 0): 25}  # fmt: skip
    assert offs[("txn", 0)]["transactional"] is True
    assert offs[("orders", 0)]["file"].endswith("00000000000000000000.log")
    assert offs[("orders", 0)]["batch_base_offset"] == 4


def test_table(root):
    p = run_kseg("offsets", root, "--group", GROUP, "-f", "table")
    assert p.returncode == 0, p.stderr
    out = p.stdout.decode()
    assert "commit_timestamp" in out and "orders" in out and "txn" in out


def test_reset_csv_is_what_kafka_consumer_groups_reads(root):
    p = run_kseg("offsets", root, "--group", GROUP, "-f", "reset-csv", "--now", T0)
    assert p.returncode == 0, p.stderr
    assert _reset_plan(p.stdout.decode()) == EXPECTED


def test_reset_csv_leaves_expired_offsets_out_and_says_so(tmp_path):
    """Some offsets expired, others not: the file holds the others (exit 0), and stderr names
    each one left out."""
    from kseg import LogWriter, Record
    from kseg.fixtures.offsets import _commit

    pdir = tmp_path / "data" / "__consumer_offsets-0"
    with LogWriter(pdir) as w:  # a simple group (offsets only): retention counts from each commit
        for part, ts in ((0, T0), (1, T0 + 3600_000)):
            w.append([Record(*_commit("g", "orders", part, 10 + part, ts), ts)])
    p = run_kseg("offsets", pdir.parent, "--group", "g", "-f", "reset-csv", "--retention", "1h",
                 "--now", T0 + 3600_000 + 1)  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert _reset_plan(p.stdout.decode()) == {("orders", 1): 11}
    assert p.stderr.count(b"left out of the reset file: expired") == 1
    assert b"orders-0: offset 10 left out" in p.stderr


def _why(stderr: bytes) -> list[bytes]:
    return [line for line in stderr.splitlines() if b"no reset file" in line]


def test_a_reset_file_never_comes_out_empty_with_exit_0(root):
    """Every offset expired at the time asked: no rows, one `kseg:` line saying why (when, and
    on what basis), exit 16 (the question as asked selects nothing to reset to)."""
    p = run_kseg("offsets", root, "--group", GROUP, "-f", "reset-csv", "--retention", "1m",
                 "--now", T0 + 3600_000)  # fmt: skip
    assert (p.returncode, p.stdout) == (16, b""), p.stderr
    (why,) = _why(p.stderr)
    assert why.startswith(b"kseg: group 'orders-app': no reset file: every committed offset (2) ")
    assert b"(retention passed since the group became Empty) as of --now 1700003600000 (2023" in why
    assert b"left out of the reset file" not in p.stderr  # one line, not one per offset
    # a deleted group holds no offset: no file either
    p = run_kseg("offsets", root, "--group", "old-app", "-f", "reset-csv")
    assert (p.returncode, p.stdout) == (16, b"")
    assert _why(p.stderr) == [b"kseg: group 'old-app': no reset file: no committed offset (the "
                              b"group was deleted)"]  # fmt: skip


FORMATS_EXPIRED = {  # what each format shows of an expired offset
    "text": lambda out: b" EXPIRED (" in out,
    "json": lambda out: b'"expired":true' in out,
    "table": lambda out: re.search(rb"\btrue\b", out) is not None,
}


@pytest.mark.parametrize("fmt", ["text", "json", "table", "reset-csv"])
def test_expiry_is_judged_at_the_end_of_the_data_by_default(tmp_path, fmt):
    """Offline, "now" is the end of the data (the last record in __consumer_offsets), so a copy
    older than the retention (the demo's records are from 2023) is answered as it stood when it
    was taken, in every format; `--at now` judges against the clock."""
    demo = tmp_path / "demo"
    assert run_kseg("demo", demo).returncode == 0
    p = run_kseg("offsets", demo, "--group", GROUP, "-f", fmt)
    assert p.returncode == 0, p.stderr
    if fmt == "reset-csv":
        assert _reset_plan(p.stdout.decode()) == EXPECTED
    else:
        assert not FORMATS_EXPIRED[fmt](p.stdout)
    p = run_kseg("offsets", demo, "--group", GROUP, "-f", fmt, "--at", "now")
    if fmt == "reset-csv":
        assert (p.returncode, p.stdout) == (16, b"")
        (why,) = _why(p.stderr)
        assert b"(retention passed since the group became Empty) as of --at " in why
    else:
        assert p.returncode == 0 and FORMATS_EXPIRED[fmt](p.stdout)


def test_default_expiry_on_real_41(real_root):
    """The real 4.1.0 copy, judged with a 1-day retention: as of its own end (commits minutes
    apart) nothing has expired; against the clock (the copy is days old) everything has."""
    data = real_root / "kafka-4.1.0-dev" / "data"
    for group, plan in (("dev-g-classic", {("dev-gzip", 0): 700, ("dev-none", 0): 850}),
                        ("dev-g-848", {("dev-snappy", 0): 558, ("dev-zstd", 0): 342}),
                        ("dev-g-java", {("dev-lz4", 0): 100})):  # fmt: skip
        p = run_kseg("offsets", data, "--group", group, "--retention", "1d", "-f", "reset-csv")
        assert p.returncode == 0, p.stderr
        assert _reset_plan(p.stdout.decode()) == plan
        p = run_kseg("offsets", data, "--group", group, "--retention", "1d", "-f", "json")
        offs = [e for e in map(json.loads, p.stdout.splitlines()) if e["type"] == "offset"]
        assert len(offs) == len(plan) and not any(e["expired"] for e in offs)
        p = run_kseg("offsets", data, "--group", group, "--retention", "1d", "-f", "reset-csv",
                     "--at", "now")  # fmt: skip
        assert (p.returncode, p.stdout) == (16, b"")
        assert len(_why(p.stderr)) == 1


def test_list(root):
    p = run_kseg("offsets", root, "--list", "-f", "json")
    assert p.returncode == 0, p.stderr
    groups = {e["group"]: e for e in map(json.loads, p.stdout.splitlines())}
    assert set(groups) == {"orders-app", "old-app", "legacy-app"}
    assert groups["old-app"]["deleted"] and groups["old-app"]["state"] == "Dead"
    assert groups["orders-app"]["last_commit_timestamp"] == T0 + 5 * 60_000
    p = run_kseg("offsets", root, "--list")
    assert p.returncode == 0 and len(p.stdout.splitlines()) == 3


def test_lag_on_real_41(real_root):
    data = real_root / "kafka-4.1.0-dev" / "data"
    p = run_kseg("offsets", data, "--group", "dev-g-java", "--lag", "-f", "json")
    assert p.returncode == 0, p.stderr
    (off,) = [e for e in map(json.loads, p.stdout.splitlines()) if e["type"] == "offset"]
    # dev-lz4 holds 700 records (PROVENANCE.md); the group committed 100 after its reset
    assert (off["offset"], off["log_end_offset"], off["lag"]) == (100, 700, 600)
    assert b"maps to __consumer_offsets-1 (3 partitions, from KRaft metadata" in p.stderr


def test_group_not_found_is_16(root):
    p = run_kseg("offsets", root, "--group", "nobody")
    assert p.returncode == 16
    assert p.stdout == b""
    assert b"no record of group 'nobody'" in p.stderr


def test_no_consumer_offsets_is_16(real_root):
    p = run_kseg("offsets", real_root / "SharaWeil__kafka-0.11.0" / "data", "--list")
    assert p.returncode == 16
    assert b"no __consumer_offsets partition directory found" in p.stderr


@pytest.mark.parametrize(
    "args",
    [
        (),  # neither --group nor --list
        ("--group", "g", "--list"),
        ("--list", "-f", "reset-csv"),
        ("--group", "g", "--at", "yesterday-ish"),
        ("--group", "g", "--retention", "a week"),
    ],
)
def test_usage_errors_are_16(root, args):
    p = run_kseg("offsets", root, *args)
    assert p.returncode == 16, p.stderr
    assert len(p.stderr.splitlines()) == 1 and b"Traceback" not in p.stderr


def test_missing_path_is_16(tmp_path):
    p = run_kseg("offsets", tmp_path / "nope", "--list")
    assert p.returncode == 16


def test_corrupt_bytes_exit_4_and_still_answer(root, tmp_path):
    copy = tmp_path / "data"
    shutil.copytree(root, copy)
    log = copy / "__consumer_offsets-0" / "00000000000000000000.log"
    from kseg.storage.segment import read_batches

    positions = [b.position for b in read_batches(log)]
    bad = positions[5] + 40  # inside the 6th batch's CRC-covered bytes
    data = bytearray(log.read_bytes())
    data[bad] ^= 0xFF
    log.write_bytes(bytes(data))
    p = run_kseg("offsets", copy, "--group", GROUP, "-f", "json")
    assert p.returncode == 4, p.stderr
    assert f"byte {positions[5]}".encode() in p.stderr and str(log).encode() in p.stderr
    offs = [json.loads(x) for x in p.stdout.splitlines()]
    got = {(e["topic"], e["partition"]): e["offset"] for e in offs if e["type"] == "offset"}
    # the 6th batch is the aborted transactional commit: what came before it stands
    assert got == {("orders", 0): 110, ("orders", 1): 15, ("txn", 0): 25}


def test_a_record_whose_value_lies_is_skipped_with_file_and_byte(tmp_path):
    """A record inside a valid batch (the CRC holds) whose value claims more bytes than it has:
    exit 4, one line naming the file, the batch's byte and the record, and the replay goes on."""
    from kseg import LogWriter, Record
    from kseg.fixtures.offsets import _commit

    pdir = tmp_path / "data" / "__consumer_offsets-0"
    key0, value0 = _commit("g", "orders", 0, 10, T0)
    key1, value1 = _commit("g", "orders", 1, 20, T0 + 1000)
    with LogWriter(pdir) as w:
        w.append([Record(key0, value0, T0)])
        lie = w.append([Record(key1, value1[:2] + b"\x7f\xff\xff\xff", T0 + 1000)])
        w.append([Record(key1, value1, T0 + 2000)])
    p = run_kseg("offsets", pdir.parent, "--group", "g", "-f", "json")
    assert p.returncode == 4, p.stderr
    log = pdir / "00000000000000000000.log"
    assert f"kseg: {log}: byte {lie.position}: ".encode() in p.stderr
    assert b"(record at offset 1 skipped)" in p.stderr
    got = {(e["topic"], e["partition"]): e["offset"] for e in map(json.loads, p.stdout.splitlines())
           if e["type"] == "offset"}  # fmt: skip
    assert got == {("orders", 0): 10, ("orders", 1): 20}


def test_unreadable_partition_is_8(root, tmp_path):
    import os

    if os.geteuid() == 0:
        pytest.skip("root reads everything")
    copy = tmp_path / "data"
    shutil.copytree(root, copy)
    log = copy / "__consumer_offsets-0" / "00000000000000000000.log"
    log.chmod(0)
    try:
        p = run_kseg("offsets", copy, "--list")
    finally:
        log.chmod(0o644)
    assert p.returncode & 8, p.stderr


def test_a_directory_of_broker_roots(root, tmp_path):
    """Three brokers of one cluster, each with a replica of __consumer_offsets-0 and of the
    data partitions: one answer, from the most complete replica."""
    for n in (1, 2, 3):
        b = tmp_path / f"kafka-logs-{n}"
        shutil.copytree(root, b)
        (b / "meta.properties").write_text(f"version=1\nnode.id={n}\ncluster.id=c1\n")
    p = run_kseg("offsets", tmp_path, "--group", GROUP, "-f", "reset-csv", "--now", T0)
    assert p.returncode == 0, p.stderr
    assert _reset_plan(p.stdout.decode()) == EXPECTED
    p = run_kseg("offsets", tmp_path, "--list", "-f", "json")
    assert p.returncode == 0 and len(p.stdout.splitlines()) == 3  # not once per broker


def test_roots_of_different_clusters_are_16(real_root):
    p = run_kseg("offsets", real_root, "--list")
    assert p.returncode == 16 and b"different clusters" in p.stderr and p.stdout == b""


def test_the_demo_has_a_group_with_commits_over_time(tmp_path):
    demo = tmp_path / "demo"
    assert run_kseg("demo", demo).returncode == 0
    p = run_kseg("offsets", demo, "--group", GROUP, "-f", "json", "--lag")
    assert p.returncode == 0, p.stderr
    offs = {(e["topic"], e["partition"]): e for e in map(json.loads, p.stdout.splitlines())
            if e["type"] == "offset"}  # fmt: skip
    assert {k: e["offset"] for k, e in offs.items()} == EXPECTED
    # the demo's own partitions give the lag: orders-0 ends at 199, txn-0 at 119
    assert offs[("orders", 0)]["lag"] == 199 - 130 and offs[("txn", 0)]["lag"] == 119 - 40
