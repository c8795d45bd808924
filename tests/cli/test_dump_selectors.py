"""Record selectors limit every file kind they can: index, time index, txn index, producer
snapshot and leader-epoch entries (the real entry point, as a subprocess)."""

from __future__ import annotations

import pytest

import kseg
from tests.helpers import events, run_kseg

T0 = 1_700_000_000_000


@pytest.fixture(scope="module")
def busy(tmp_path_factory):
    """A partition of 3 segments, an index entry every batch, producer snapshots, an aborted
    transaction (txnindex) and two leader epochs: lots of index lines around any window."""
    pdir = tmp_path_factory.mktemp("sel") / "busy-0"
    with kseg.LogWriter(pdir, segment_bytes=40_000, index_interval_bytes=1) as w:
        for i in range(600):
            if i == 300:
                w.partition_leader_epoch = 1
            w.append(
                [kseg.Record(key=b"k", value=b"v" * 100, timestamp=T0 + i * 1000)],
                producer_id=5,
                producer_epoch=0,
                base_sequence=i,
            )
            if i == 450:
                w.append(
                    [kseg.Record(value=b"t", timestamp=T0 + i * 1000 + 1)],
                    producer_id=9,
                    producer_epoch=0,
                    base_sequence=0,
                    transactional=True,
                )
                w.append_control(
                    commit=False, producer_id=9, producer_epoch=0, timestamp=T0 + i * 1000 + 2
                )
    assert len(list(pdir.glob("*.log"))) >= 3
    return pdir


def _dump(*args) -> list[dict]:
    proc = run_kseg("dump", *args, "-f", "json")
    assert proc.returncode == 0, proc.stderr
    return events(proc.stdout.decode())


def test_without_selectors_index_files_are_long(busy):
    kinds = [e["type"] for e in _dump(busy)]
    assert kinds.count("index_entry") > 500 and kinds.count("timeindex_entry") > 500


@pytest.mark.parametrize(
    "window",
    [
        ("--from-offset", "200", "--to-offset", "201"),
        ("--from-time", str(T0 + 200_000), "--to-time", str(T0 + 201_000)),
    ],
    ids=["offsets", "times"],
)
def test_a_window_of_two_records_prints_a_handful_of_lines(busy, window):
    evs = _dump(busy, *window)
    records = [e for e in evs if e["type"] == "record"]
    assert [r["offset"] for r in records] == [200, 201]
    assert len(evs) < 15, [e["type"] for e in evs]
    for e in evs:
        if e["type"] in ("index_entry", "timeindex_entry"):
            assert 200 <= e["offset"] <= 201, e
        if e["type"] == "producer_state":
            assert 200 <= e["last_offset"] <= 201 or "--from-time" in window
    assert {e["type"] for e in evs} >= {"index_entry", "timeindex_entry", "leader_epoch"}
    text = run_kseg("dump", busy, *window).stdout.decode()
    assert len(text.splitlines()) < 15


def test_txn_index_and_leader_epochs_by_offset(busy):
    abort = next(e for e in _dump(busy) if e["type"] == "txn_index_entry")
    inside = _dump(
        busy, "--from-offset", str(abort["first_offset"]), "--to-offset", str(abort["first_offset"])
    )
    assert [e for e in inside if e["type"] == "txn_index_entry"] == [abort]
    before = _dump(busy, "--from-offset", "10", "--to-offset", "12")
    assert not [e for e in before if e["type"] == "txn_index_entry"]
    assert [e["epoch"] for e in before if e["type"] == "leader_epoch"] == [0]
    after = _dump(busy, "--from-offset", "500", "--to-offset", "502")
    assert [e["epoch"] for e in after if e["type"] == "leader_epoch"] == [1]


def test_a_time_window_with_no_record_prints_nothing(busy):
    assert _dump(busy, "--from-time", str(T0 - 10_000), "--to-time", str(T0 - 5_000)) == []


def test_index_files_dumped_alone(busy):
    idx = sorted(busy.glob("*.index"))[0]
    evs = _dump(idx, "--from-offset", "3", "--to-offset", "5")
    assert [e["offset"] for e in evs if e["type"] == "index_entry"] == [3, 4, 5]
    tidx = sorted(busy.glob("*.timeindex"))[0]
    evs = _dump(tidx, "--from-time", str(T0 + 3000), "--to-time", str(T0 + 4000))
    assert [e["timestamp"] for e in evs if e["type"] == "timeindex_entry"] == [T0 + 3000, T0 + 4000]


@pytest.mark.parametrize("to", [3, 4])
def test_to_offset_inside_a_legacy_wrapper_keeps_its_records_up_to_it(tree, to):
    """A magic 0/1 compressed wrapper carries its LAST inner offset; its first is known only
    once decompressed. --to-offset inside it keeps the inner records up to the offset (the file
    ends after the wrapper), in every mode: logappend-0 offsets 3-5 are one gzip magic-1 wrapper."""
    log = tree / "logappend-0" / "00000000000000000000.log"
    wrapper = next(e for e in _dump(log) if e["type"] == "batch" and e["last_offset"] == 5)
    assert (wrapper["magic"], wrapper["compression"], wrapper["base_offset"]) == (1, "gzip", 3)
    for extra in ((), ("--value", "^order"), ("--count",)):
        evs = _dump(log, "--to-offset", str(to), *extra)
        if "--count" in extra:
            assert evs[-1]["matches"] == to + 1
        else:
            assert [e["offset"] for e in evs if e["type"] == "record"] == list(range(to + 1))
