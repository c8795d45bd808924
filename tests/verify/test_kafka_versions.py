"""--kafka-version: rules that changed between Kafka releases (kseg.format.kafka_version).

The `.txnindex` rule: Kafka 0.11-2.7's ProducerAppendInfo.appendEndTxnMarker emitted a
CompletedTxn for every marker, so an ABORT that closes no open transaction got an entry (first
offset = last offset = the marker's); from 2.8 (KAFKA-10702) only an ABORT closing an open
transaction does. `index check` calls a file written by the other rule "equivalent (Kafka X
rule)", never "wrong"; `index rebuild` and `verify --repair` write the chosen release's rule.
"""

from __future__ import annotations

import pytest

from kseg.cli.exit import exit_status
from kseg.fixtures.tree import FixedClock
from kseg.format.kafka_version import DEFAULT, parse_kafka_version
from kseg.format.record import Record
from kseg.format.txn_index import encode_entries, read_entries
from kseg.index.rebuild import rebuild_target
from kseg.index.run import CheckRun
from kseg.outcome import BadOption
from kseg.storage.tree import Target, resolve, segment_logs
from kseg.storage.writer import LogWriter
from tests.helpers import events, run_cli, run_kseg

V22 = parse_kafka_version("2.2")


def write_txns(pdir, version, interval=4096):
    """Producer 7: an aborted transaction, then a second ABORT that closes nothing (a coordinator
    timeout's); producer 8: an ABORT of an empty transaction."""
    with LogWriter(
        pdir, clock=FixedClock(), kafka_version=version, index_interval_bytes=interval
    ) as w:
        w.append([Record(b"k", b"v")])
        w.append([Record(b"a", b"1")], producer_id=7, producer_epoch=0, base_sequence=0,
                 transactional=True)  # fmt: skip
        w.append_control(commit=False, producer_id=7, producer_epoch=0)
        w.append_control(commit=False, producer_id=7, producer_epoch=0)
        w.append_control(commit=False, producer_id=8, producer_epoch=0)
        w.append([Record(b"k", b"v")])
    return pdir


def txn_check(pdir, version=DEFAULT) -> dict:
    run = CheckRun(resolve([pdir], None, None, logs_only=True), kafka_version=version)
    (ev,) = [e for e in run.events() if e["type"] == "index_check"]
    ev["exit_code"] = int(exit_status(run.outcome))
    return ev


def entries(pdir):
    return list(read_entries((pdir / "00000000000000000000.txnindex").read_bytes()))


def test_the_writer_follows_each_releases_rule(tmp_path):
    old = entries(write_txns(tmp_path / "old-0", V22))
    new = entries(write_txns(tmp_path / "new-0", DEFAULT))
    assert [(e.producer_id, e.first_offset, e.last_offset) for e in new] == [(7, 1, 2)]
    assert [(e.producer_id, e.first_offset, e.last_offset) for e in old] == [
        (7, 1, 2),
        (7, 3, 3),  # closes nothing: the transaction starts at the marker
        (8, 4, 4),
    ]


def test_a_2x_txnindex_is_equivalent_under_the_default_and_identical_under_2_2(tmp_path):
    pdir = write_txns(tmp_path / "old-0", V22)
    ev = txn_check(pdir)
    assert ev["txn_index"]["status"] == "equivalent"
    assert ev["txn_index"]["rule"] == "0.11-2.7"
    assert ev["status"] == "equivalent" and ev["exit_code"] == 0
    ev = txn_check(pdir, V22)
    assert ev["txn_index"]["status"] == "identical" and ev["txn_index"]["rule"] is None


def test_a_4x_txnindex_is_identical_by_default_and_equivalent_under_2_2(tmp_path):
    pdir = write_txns(tmp_path / "new-0", DEFAULT)
    assert txn_check(pdir)["txn_index"]["status"] == "identical"
    ev = txn_check(pdir, V22)
    assert (ev["txn_index"]["status"], ev["txn_index"]["rule"]) == ("equivalent", "2.8+")
    assert ev["exit_code"] == 0


def test_a_txnindex_no_release_writes_is_wrong(tmp_path):
    pdir = write_txns(tmp_path / "old-0", V22)
    path = pdir / "00000000000000000000.txnindex"
    bad = entries(pdir)
    bad[1] = bad[1]._replace(first_offset=0)  # the empty abort's entry, moved
    path.write_bytes(encode_entries(bad))
    for version in (DEFAULT, V22):
        ev = txn_check(pdir, version)
        assert ev["txn_index"]["status"] == "wrong", version
        assert ev["txn_index"]["first_difference"]["entry"] == 1
        assert ev["exit_code"] == 4


def test_a_missing_txnindex_is_missing_and_none_expected_is_no_finding(tmp_path):
    pdir = write_txns(tmp_path / "new-0", DEFAULT)
    (pdir / "00000000000000000000.txnindex").unlink()
    assert txn_check(pdir)["txn_index"]["status"] == "missing"
    with LogWriter(tmp_path / "plain-0", clock=FixedClock()) as w:
        w.append([Record(b"k", b"v")])
    assert txn_check(tmp_path / "plain-0")["txn_index"]["status"] == "identical"


def test_rebuild_writes_the_chosen_releases_rule(tmp_path):
    old = write_txns(tmp_path / "old-0", V22)
    want = (old / "00000000000000000000.txnindex").read_bytes()
    new = write_txns(tmp_path / "new-0", DEFAULT)
    rebuild_target(Target(new, segment_logs(new)), kafka_version=V22)
    assert (new / "00000000000000000000.txnindex").read_bytes() == want
    rebuild_target(Target(new, segment_logs(new)))
    assert [e.last_offset for e in entries(new)] == [2]


def test_cli_index_check_text_names_the_rule(tmp_path, monkeypatch, capsysbinary):
    pdir = write_txns(tmp_path / "old-0", V22)
    code, out, _ = run_cli(monkeypatch, capsysbinary, "index", "check", pdir)
    assert code == 0
    assert ".txnindex equivalent (Kafka 0.11-2.7 rule) (3 entries, rebuilt 1)" in out
    code, out, _ = run_cli(
        monkeypatch, capsysbinary, "index", "check", pdir, "--kafka-version", "2.2.1", "-f", "json"
    )
    assert code == 0
    assert events(out)[0]["txn_index"]["status"] == "identical"


@pytest.mark.parametrize("text", ["0.10", "0.11", "2.2", "2.2.1", "2.8", "3.9", "4.1", "1.0.2"])
def test_known_releases_parse(text):
    assert str(parse_kafka_version(text)) == text


@pytest.mark.parametrize("text", ["5.0", "2", "2.x", "", "v2.2", "2.2.1.0", "0.12", "3.10"])
def test_unknown_releases_are_refused(text):
    with pytest.raises(ValueError, match="Kafka release"):
        parse_kafka_version(text)


def test_rules_by_release():
    assert parse_kafka_version("0.11").txn_index_empty_aborts
    assert parse_kafka_version("2.7").txn_index_empty_aborts
    assert not parse_kafka_version("2.8").txn_index_empty_aborts
    assert not DEFAULT.txn_index_empty_aborts
    assert parse_kafka_version("0.11").offset_index_first_offset
    assert not parse_kafka_version("1.0").offset_index_first_offset
    assert str(DEFAULT) == "4.1"


@pytest.mark.parametrize("command", [("index", "check"), ("index", "rebuild"), ("verify",)])
def test_a_bad_kafka_version_is_one_usage_line(tmp_path, command):
    with LogWriter(tmp_path / "t-0", clock=FixedClock()) as w:
        w.append([Record(b"k", b"v")])
    for bad in (["--kafka-version", "9.9"], ["--kafka-version=x"]):
        proc = run_kseg(*command, tmp_path / "t-0", *bad)
        assert proc.returncode == 16, proc.stderr
        assert proc.stdout == b""
        lines = proc.stderr.decode().splitlines()
        assert len(lines) == 1 and "--kafka-version" in lines[0], lines


def test_verify_repair_keeps_a_txnindex_another_release_wrote(tmp_path):
    """A repair that rebuilds a wrong `.index` leaves an equivalent `.txnindex` alone."""
    from kseg.repair.plan import plan_repair
    from kseg.verify.partition import verify_target

    pdir = write_txns(tmp_path / "old-0", V22, interval=60)
    index = pdir / "00000000000000000000.index"
    data = bytearray(index.read_bytes())
    assert len(data) >= 8
    data[7] ^= 1  # entry 0's position: no batch boundary any more
    index.write_bytes(bytes(data))
    report = verify_target(
        Target(pdir, segment_logs(pdir)), index_interval_bytes=60, replay_txns=True
    )
    plan = plan_repair(report, index_interval_bytes=60)
    written = [a.file for a in plan.actions]
    assert any(f.endswith(".index") for f in written), written
    assert not any(f.endswith(".txnindex") for f in written), written


def test_bad_option_from_the_command_function():
    from kseg.cli.inputs import parsed_kafka_version

    with pytest.raises(BadOption) as exc:
        parsed_kafka_version("4.9")
    assert exc.value.option == "--kafka-version"


def test_an_offset_index_by_the_first_offset_rule_is_equivalent(tmp_path):
    """Kafka 0.10/0.11's LogSegment.recover indexes a batch by its first offset (0.11.0:
    batch.baseOffset): every lookup still lands on the right batch."""
    from kseg.format import offset_index as oi

    pdir = tmp_path / "old-0"
    with LogWriter(pdir, clock=FixedClock(), index_interval_bytes=100) as w:
        firsts = [w.append([Record(b"k", b"v" * 40) for _ in range(3)]).base_offset
                  for _ in range(10)]  # fmt: skip
    index = pdir / "00000000000000000000.index"
    entries = list(oi.ENTRY.iter_unpack(index.read_bytes()))
    assert entries
    # each entry names the last offset of the batch at its position: name its first instead
    first_of = {last: first for first, last in zip(firsts, [f + 2 for f in firsts], strict=True)}
    index.write_bytes(b"".join(oi.ENTRY.pack(first_of[rel], pos) for rel, pos in entries))
    ev = txn_check(pdir)
    assert ev["offset_index"]["status"] == "equivalent", ev["offset_index"]
    assert ev["offset_index"]["rule"] == "0.8-0.11"
    assert ev["exit_code"] == 0
