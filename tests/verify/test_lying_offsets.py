"""A batch whose baseOffset lies (it lies outside the CRC): kseg names that batch itself, predicts
exactly what Kafka 4.1's recovery does with it, and its repair cuts AT it.

Kafka's rule (LogSegment.recover, LogLoader.recoverLog): offsets that go backwards matter only
when an index append refuses them: OffsetIndex.append (an entry not above the last one) or
TimeIndex.maybeAppend (an offset below the last entry's, the final entry included) throws
InvalidOffsetException, and LogLoader.recoverLog truncates the segment to its base offset and
deletes the later unflushed segments; with no refused append Kafka keeps every batch. Cases are
written by LogWriter at Kafka's default index.interval.bytes (kseg/fixtures/recovery.py,
lying_base_offset), the lying batch picked by where the index entries fall.
"""

from __future__ import annotations

import base64
import shutil
from pathlib import Path

import pytest

from kseg.fixtures import recovery as R
from kseg.format.index_rule import OFFSET, TIME, IndexBuilder
from tests.broker import Broker, recover_with_kafka
from tests.helpers import events, run_kseg
from tests.verify.test_recovery_rules import findings, outcome, repair_cycle, verify

KEPT = {"raised-kept", "lowered-kept"}
REFUSED_BY = {"raised-offset": OFFSET, "lowered-offset": OFFSET, "raised-time": TIME}


def test_the_index_rule_records_the_append_kafka_refuses():
    """OffsetIndex.append refuses an offset not above the last entry's; TimeIndex.maybeAppend an
    offset below the last entry's, also in the final entry recovery appends."""
    b = IndexBuilder(0, 0)
    for last, ts in ((0, 10), (5, 20), (1005, 30), (9, 40)):
        b.add(last, ts, 100)
    assert (b.invalid.index, b.invalid.position, b.invalid.offset) == (OFFSET, 300, 9)
    assert b.invalid.last_offset == 1005
    b = IndexBuilder(0, 150)  # entries every other batch: 1005's is the last one
    for last, ts in ((0, 10), (5, 20), (1005, 30), (9, 40)):
        b.add(last, ts, 100)
    assert b.invalid is None
    b.finish()  # (40, 9) after (30, 1005)
    assert (b.invalid.index, b.invalid.offset, b.invalid.final) == (TIME, 9, True)


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> dict[str, R.RecoveryCase]:
    root = tmp_path_factory.mktemp("lying")
    return {name: R.lying_base_offset(root / name, name) for name in R.LYING_CASES}


@pytest.mark.parametrize("name", list(R.LYING_CASES))
def test_the_lying_batch_is_named_and_kafka_is_predicted(cases, tmp_path, name):
    root = tmp_path / "root"
    shutil.copytree(cases[name].root, root)
    liar = cases[name].batches["liar"]
    code, evs = verify(root)
    assert code == 4
    offset_problems = [
        f for f in findings(evs) if f["kind"] in ("bad_base_offset", "offsets_not_increasing")
    ]
    # the lying batch itself, never the next one (whose offsets are right)
    assert [(f["kind"], f["position"]) for f in offset_problems] == [
        ("bad_base_offset", liar.position)
    ]
    assert offset_problems[0]["offset"] == liar.base_offset + int(cases[name].note)
    seg0 = str(root / f"{name}-0" / "00000000000000000000.log")
    acts = [(a["action"], a.get("file"), a.get("position")) for a in outcome(evs)["actions"]]
    if name in KEPT:
        assert acts == [("keep_bad_offsets", seg0, liar.position)]
    else:
        (empty, delete) = outcome(evs)["actions"]
        assert (empty["action"], empty["file"], empty["offset"]) == ("empty_segment", seg0, 0)
        assert empty["index"] == REFUSED_BY[name]
        assert (delete["action"], delete["count"]) == ("delete_later_segments", 2)
    # the repair cuts AT the lying batch, keeps every batch before it, loses nothing
    actions, _ = repair_cycle(root, tmp_path)
    (cut,) = [a for a in actions if a["action"] == "truncate"]
    assert (cut["file"], cut["position"]) == (seg0, liar.position)


# --- the real broker -------------------------------------------------------------------------


def _raw(v: str | None) -> bytes | None:
    return None if v is None else base64.b64decode(v)


def _expected_files(case: R.RecoveryCase, event: dict | None) -> dict[str, int | None]:
    """Each .log's size after Kafka's recovery as kseg predicts it (None: deleted)."""
    logs = sorted(case.partition_dir.glob("*.log"))
    sizes: dict[str, int | None] = {p.name: p.stat().st_size for p in logs}
    for a in (event or {}).get("actions", []):
        if a["action"] == "empty_segment":
            sizes[Path(a["file"]).name] = 0
        elif a["action"] == "delete_later_segments":
            for p in logs[len(logs) - a["count"] :]:
                sizes[p.name] = None
        else:
            assert a["action"] == "keep_bad_offsets", a
    return sizes


@pytest.fixture(scope="module")
def kafka_recovered(kafka_home, cases, tmp_path_factory):
    """One broker start over every case, after an unclean shutdown."""
    return recover_with_kafka(
        kafka_home,
        tmp_path_factory.mktemp("recover"),
        {c.partition_dir.name: c.partition_dir for c in cases.values()},
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", list(R.LYING_CASES))
def test_kafka_does_what_kseg_predicts(cases, kafka_recovered, name):
    case = cases[name]
    _, evs = verify(case.partition_dir)
    got = kafka_recovered[case.partition_dir.name]
    for log, size in _expected_files(case, outcome(evs)).items():
        if size is None:
            assert log not in got.files, log  # deleted (renamed .deleted, removed later)
        else:
            assert got.files.get(log) == size, (log, got.files)
    refused = any("Found invalid offset during recovery" in line for line in got.log_lines)
    assert refused == (name not in KEPT), got.log_lines


@pytest.mark.slow
def test_the_repaired_partitions_load_untouched_and_serve_what_kseg_says(
    kafka_home, cases, tmp_path_factory
):
    """One broker serves every repaired case (cut at the lying batch) and the raised-kept case
    unrepaired: the repaired ones lose nothing more in Kafka's recovery and serve exactly the
    records `kseg dump` prints; a consumer of the unrepaired one receives the lying batch's
    offsets where the batch lies, then offsets that go backwards."""
    work = tmp_path_factory.mktemp("serve")
    served: dict[tuple[str, int], Path] = {}
    for name, case in cases.items():
        root = work / "repaired" / name
        shutil.copytree(case.root, root)
        r = run_kseg("verify", root, "--repair", "--quarantine", work / "q" / name)
        assert r.returncode == 1, r.stdout + r.stderr
        served[(f"fixed.{name}", 0)] = root / f"{name}-0"
    kept = cases["raised-kept"]
    served[("kept.raised", 0)] = kept.partition_dir
    broker = Broker(kafka_home, work / "broker")
    broker.serve(served)
    with broker:
        log = broker.server_log()
        assert "Found invalid offset during recovery" not in log
        assert "Corruption found in segment" not in log
        ends = broker.all_end_offsets(sorted({t for t, _ in served}))
        for (topic, p), pdir in served.items():
            got = [(r.offset, r.value) for r in broker.consume(topic, p)]
            if topic.startswith("fixed."):
                proc = run_kseg("dump", pdir, "-f", "json", "--payload", "base64")
                want = [(e["offset"], _raw(e["value"])) for e in events(proc.stdout)
                        if e["type"] == "record"]  # fmt: skip
                assert got == want, topic
                assert ends[(topic, p)] == want[-1][0] + 1
            else:
                liar = kept.batches["liar"]
                lied = liar.base_offset + int(kept.note)
                offsets = [o for o, _ in got]
                # kafka-python receives the lying batch in place: offsets go backwards after it
                end = kept.batches[f"b{len(kept.batches) - 2}"].last_offset + 1
                want = [*range(liar.base_offset), *range(lied, lied + 4)]
                assert offsets == [*want, *range(liar.last_offset + 1, end)], offsets
